// Recall@k of a CAGRA graph grown by adds (each add extends the graph: GraphIndex's extend) beside
// a graph built anew from the same rows, as the index grows from --from rows by each --growth
// percentage (cumulative, of the first build's rows). One JSON line per size and itopk.
//   node scripts/graph-growth.mjs --data siftsmall|fashion-mnist-small|fashion-mnist [--backend webgpu|cpu]
//        [--from 0.5] [--growth 10,25,50,100] [--degree 32] [--itopk 32,64] [--k 10] [--nq 1000] [--batch 100]
// --from: the first build's share of the data set's rows (growth up to 100% then reaches them all).
// Needs `npm run build` first (it runs dist/). The ground truth at each size: a Flat index of the same rows.
import { parseArgs } from 'node:util';
import { FlatIndex, GraphIndex, createBackend } from '../dist/index.js';
import { loadData, recallAt, seconds, timedSearch } from './graph-kit.mjs';

const { values: v } = parseArgs({
  options: {
    data: { type: 'string', default: 'siftsmall' },
    backend: { type: 'string', default: 'webgpu' },
    from: { type: 'string', default: '0.5' },
    growth: { type: 'string', default: '10,25,50,100' },
    degree: { type: 'string', default: '32' },
    itopk: { type: 'string', default: '32,64' },
    k: { type: 'string', default: '10' },
    nq: { type: 'string' },
    n: { type: 'string', default: '100000' },
    batch: { type: 'string', default: '100' },
  },
});
const k = Number(v.k);
const batch = Number(v.batch);
const degree = Number(v.degree);
const itopks = v.itopk.split(',').map(Number);
const data = await loadData(v);
const backend = await createBackend({ backend: v.backend });
const n0 = Math.floor(data.n * Number(v.from));
const sizes = v.growth.split(',').map((g) => Math.min(data.n, Math.round(n0 * (1 + Number(g) / 100))));
const log = (o) => console.log(JSON.stringify({ data: data.name, d: data.d, nq: data.nq, k, degree, backend: backend.kind, n0, ...o }));
const rows = (from, to) => data.xb.subarray(from * data.d, to * data.d);

const labelsOf = async (index, params) => (await timedSearch(index, data, k, batch, params, false)).labels;
const recall = (labels, exact) => recallAt(labels, exact, data.nq, k);

const grown = new GraphIndex(backend, { dim: data.d, degree });
const flat = new FlatIndex(backend, { dim: data.d });
await grown.add(rows(0, n0));
await flat.add(rows(0, n0));
let t0 = performance.now();
await grown.search(data.xq.subarray(0, data.d), 1); // builds the graph
log({ n: n0, growthPercent: 0, graph: 'built', seconds: seconds(t0), unreachable: grown.unreachableRows });
let n = n0;
for (const size of sizes) {
  await grown.add(rows(n, size));
  await flat.add(rows(n, size));
  n = size;
  t0 = performance.now();
  await grown.search(data.xq.subarray(0, data.d), 1); // extends it
  const extendSeconds = seconds(t0);
  const fresh = new GraphIndex(backend, { dim: data.d, degree });
  await fresh.add(rows(0, n));
  t0 = performance.now();
  await fresh.search(data.xq.subarray(0, data.d), 1);
  const buildSeconds = seconds(t0);
  const exact = await labelsOf(flat, {});
  for (const itopk of itopks) {
    log({
      n,
      growthPercent: Math.round((100 * (n - n0)) / n0),
      itopk,
      extendedRows: grown.extendedRows,
      extendSeconds,
      buildSeconds,
      recallGrown: recall(await labelsOf(grown, { itopk }), exact),
      recallRebuilt: recall(await labelsOf(fresh, { itopk }), exact),
      unreachableGrown: grown.unreachableRows,
      unreachableRebuilt: fresh.unreachableRows,
    });
  }
  await fresh.dispose();
}
await grown.dispose();
await flat.dispose();
await backend.dispose();
