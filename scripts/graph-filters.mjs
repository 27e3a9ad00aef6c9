// Where a filtered CAGRA search should stop walking the graph and scan the allowed rows exactly
// (GRAPH_FILTER_MIN_SELECTIVITY): for each share of rows a seeded random filter allows, recall@k and
// queries/s of the walk (strategy 'walk', itopk widened by the share) and of the exact pre-filtered
// scan (strategy 'scan'), against the exact filtered answer of a Flat index. One JSON line a setting.
//   node scripts/graph-filters.mjs --data siftsmall|fashion-mnist [--backend webgpu|cpu]
//        [--shares 0.9,0.75,0.5,0.3,0.2,0.1,0.05] [--itopk 32,64] [--degree 32] [--k 10] [--nq 1000] [--batch 100]
// Needs `npm run build` first (it runs dist/). Not interleaved with the peers: a figure for our own switch.
import { parseArgs } from 'node:util';
import { FlatIndex, GraphIndex, createBackend } from '../dist/index.js';
import { loadData, recallAt, timedSearch } from './graph-kit.mjs';

const { values: v } = parseArgs({
  options: {
    data: { type: 'string', default: 'siftsmall' },
    backend: { type: 'string', default: 'webgpu' },
    shares: { type: 'string', default: '0.9,0.75,0.5,0.3,0.2,0.1,0.05' },
    itopk: { type: 'string', default: '32,64' },
    degree: { type: 'string', default: '32' },
    k: { type: 'string', default: '10' },
    nq: { type: 'string' },
    n: { type: 'string', default: '100000' },
    batch: { type: 'string', default: '100' },
  },
});
const k = Number(v.k);
const batch = Number(v.batch);
const data = await loadData(v);
const backend = await createBackend({ backend: v.backend });
const log = (o) => console.log(JSON.stringify({ data: data.name, n: data.n, d: data.d, nq: data.nq, k, batch, backend: backend.kind, ...o }));

const timed = (index, params) => timedSearch(index, data, k, batch, params);
const recall = (labels, exact) => recallAt(labels, exact, data.nq, k);

const graph = new GraphIndex(backend, { dim: data.d, degree: Number(v.degree) });
const flat = new FlatIndex(backend, { dim: data.d });
await graph.add(data.xb);
await flat.add(data.xb);
await graph.search(data.xq.subarray(0, data.d), 1); // builds the graph
let seed = 12345;
const random = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
for (const share of v.shares.split(',').map(Number)) {
  const filter = BigInt64Array.from(Array.from({ length: data.n }, (_, i) => i).filter(() => random() < share), (i) => BigInt(i));
  const exact = await timed(flat, { filter });
  for (const itopk of v.itopk.split(',').map(Number)) {
    for (const strategy of ['walk', 'scan']) {
      if (strategy === 'scan' && itopk !== Number(v.itopk.split(',')[0])) continue; // the scan ignores itopk
      const timings = {};
      const r = await timed(graph, { filter, itopk, strategy, timings });
      log({ share, allowed: filter.length, strategy, ran: timings.strategy, itopk: strategy === 'walk' ? itopk : '-', recall: recall(r.labels, exact.labels), qps: r.qps });
    }
  }
}
await graph.dispose();
await flat.dispose();
await backend.dispose();
