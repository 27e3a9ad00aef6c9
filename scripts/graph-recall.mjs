// Recall@k against queries/s of the CAGRA graph index beside IVF-Flat and Flat, on one backend,
// in batches of --batch queries (default 100); the build time of each. One JSON line per setting.
//   node scripts/graph-recall.mjs --data siftsmall|fashion-mnist-small|fashion-mnist|clustered [--backend webgpu|cpu]
//        [--degree 32] [--itopk 32,64,128] [--width 1] [--nprobe 4,8,16] [--k 10] [--nq 1000] [--batch 100]
// Needs `npm run build` first (it runs dist/). Not interleaved: a figure here is a first look; the
// comparison against the peers is `bench compare`.
import { parseArgs } from 'node:util';
import { FlatIndex, GraphIndex, IvfFlatIndex, createBackend } from '../dist/index.js';
import { loadData, recallAt, seconds, timedSearch as timedIn } from './graph-kit.mjs';

const { values: v } = parseArgs({
  options: {
    data: { type: 'string', default: 'siftsmall' },
    backend: { type: 'string', default: 'webgpu' },
    degree: { type: 'string', default: '32' },
    itopk: { type: 'string', default: '32,64,128' },
    width: { type: 'string', default: '1' },
    nprobe: { type: 'string', default: '4,8,16' },
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
const timedSearch = (index, params) => timedIn(index, data, k, batch, params);

// Ground truth: exact, from a Flat index (ties aside, what every recall here is measured against).
let t0 = performance.now();
const flat = new FlatIndex(backend, { dim: data.d });
await flat.add(data.xb);
const exact = await timedSearch(flat, {});
log({ index: 'Flat', param: '-', buildSeconds: seconds(t0), recall: 1, qps: exact.qps });
const recall = (labels) => recallAt(labels, exact.labels, data.nq, k);
await flat.dispose();

t0 = performance.now();
const graph = new GraphIndex(backend, { dim: data.d, degree: Number(v.degree) });
await graph.add(data.xb);
await graph.search(data.xq.subarray(0, data.d), 1); // builds the graph
const graphBuild = seconds(t0);
log({ index: `CAGRA${v.degree}`, param: 'graph', buildSeconds: graphBuild, unreachableRows: graph.unreachableRows });
for (const itopk of v.itopk.split(',').map(Number)) {
  for (const searchWidth of v.width.split(',').map(Number)) {
    const r = await timedSearch(graph, { itopk, searchWidth });
    log({ index: `CAGRA${v.degree}`, param: `itopk=${itopk},width=${searchWidth}`, buildSeconds: graphBuild, recall: recall(r.labels), qps: r.qps });
  }
}
await graph.dispose();

const nlist = Math.max(1, Math.round(Math.sqrt(8 * data.n)));
t0 = performance.now();
const ivf = new IvfFlatIndex(backend, { dim: data.d, nlist });
await ivf.train(data.xb);
await ivf.add(data.xb);
const ivfBuild = seconds(t0);
for (const nprobe of v.nprobe.split(',').map(Number)) {
  const r = await timedSearch(ivf, { nprobe });
  log({ index: `IVF${nlist},Flat`, param: `nprobe=${nprobe}`, buildSeconds: ivfBuild, recall: recall(r.labels), qps: r.qps });
}
await ivf.dispose();
backend.dispose();
