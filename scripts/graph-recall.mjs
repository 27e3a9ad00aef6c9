// Recall@k against queries/s of the CAGRA graph index beside IVF-Flat and Flat, on one backend,
// in batches of --batch queries (default 100); the build time of each. One JSON line per setting.
//   node scripts/graph-recall.mjs --data siftsmall|fashion-mnist-small|fashion-mnist|clustered [--backend webgpu|cpu]
//        [--degree 32] [--itopk 32,64,128] [--width 1] [--nprobe 4,8,16] [--k 10] [--nq 1000] [--batch 100]
// Needs `npm run build` first (it runs dist/). Not interleaved: a figure here is a first look; the
// comparison against the peers is `bench compare`.
import { parseArgs } from 'node:util';
import { FlatIndex, GraphIndex, IvfFlatIndex, createBackend } from '../dist/index.js';
import { loadBenchData } from '../dist/bench/data.js';

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
const data = await loadBenchData(v.data, Number(v.n), 128, v.nq === undefined ? undefined : Number(v.nq), 1);
const backend = await createBackend({ backend: v.backend });
const log = (o) => console.log(JSON.stringify({ data: data.name, n: data.n, d: data.d, nq: data.nq, k, batch, backend: backend.kind, ...o }));
const seconds = (t0) => (performance.now() - t0) / 1000;

async function timedSearch(index, params) {
  const labels = new Int32Array(data.nq * k);
  await index.search(data.xq.subarray(0, Math.min(batch, data.nq) * data.d), k, params); // warm
  const t0 = performance.now();
  for (let q0 = 0; q0 < data.nq; q0 += batch) {
    const rows = Math.min(batch, data.nq - q0);
    const r = await index.search(data.xq.subarray(q0 * data.d, (q0 + rows) * data.d), k, params);
    labels.set(r.labels, q0 * k);
  }
  return { labels, qps: data.nq / seconds(t0) };
}

// Ground truth: exact, from a Flat index (ties aside, what every recall here is measured against).
let t0 = performance.now();
const flat = new FlatIndex(backend, { dim: data.d });
await flat.add(data.xb);
const exact = await timedSearch(flat, {});
log({ index: 'Flat', param: '-', buildSeconds: seconds(t0), recall: 1, qps: exact.qps });
const recall = (labels) => {
  let hit = 0;
  for (let q = 0; q < data.nq; q++) {
    const truth = new Set(exact.labels.subarray(q * k, (q + 1) * k));
    for (let j = 0; j < k; j++) if (truth.has(labels[q * k + j])) hit++;
  }
  return hit / (data.nq * k);
};
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
