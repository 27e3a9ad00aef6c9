// Recall@k of a CAGRA graph exported as an hnswlib file (`webgpu-knn export --format hnswlib`) and
// searched by hnswlib-node at ef = each --ef, beside our own walk at itopk = the same values, against
// the exact answer of a Flat index. Needs `npm run build` and hnswlib-node (bash scripts/install-peers.sh).
//   node scripts/hnswlib-export-recall.mjs --data siftsmall|fashion-mnist [--degree 32] [--ef 32,64,128] [--k 10] [--nq 1000]
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { FlatIndex, GraphIndex, createBackend } from '../dist/index.js';
import { loadData, recallAt, seconds } from './graph-kit.mjs';

const { values: v } = parseArgs({
  options: {
    data: { type: 'string', default: 'siftsmall' },
    degree: { type: 'string', default: '32' },
    ef: { type: 'string', default: '32,64,128' },
    k: { type: 'string', default: '10' },
    nq: { type: 'string' },
    n: { type: 'string', default: '100000' },
  },
});
const k = Number(v.k);
const require = createRequire(import.meta.url);
const { HierarchicalNSW } = require(require.resolve('hnswlib-node', { paths: [new URL('../peers', import.meta.url).pathname] }));
const data = await loadData(v);
const backend = await createBackend({ backend: 'auto' });
const dir = mkdtempSync(join(tmpdir(), 'hnswlib-export-'));
const flat = new FlatIndex(backend, { dim: data.d });
await flat.add(data.xb);
const exact = (await flat.search(data.xq, k)).labels;
const graph = new GraphIndex(backend, { dim: data.d, degree: Number(v.degree) });
await graph.add(data.xb);
await graph.save(join(dir, 'g.idx'));
execFileSync(process.execPath, [new URL('../dist/cli/main.js', import.meta.url).pathname, 'export', '--format', 'hnswlib', '--index', join(dir, 'g.idx'), '--out', join(dir, 'g.hnsw')], { stdio: 'inherit' });
const h = new HierarchicalNSW('l2', data.d);
h.readIndexSync(join(dir, 'g.hnsw'));
const recall = (labels) => recallAt(labels, exact, data.nq, k);
for (const ef of v.ef.split(',').map(Number)) {
  h.setEf(ef);
  const t0 = performance.now();
  const theirs = new Float64Array(data.nq * k).fill(-1);
  for (let q = 0; q < data.nq; q++) theirs.set(h.searchKnn(Array.from(data.xq.subarray(q * data.d, (q + 1) * data.d)), k).neighbors, q * k);
  const hnswQps = data.nq / seconds(t0);
  const ours = (await graph.search(data.xq, k, { itopk: ef })).labels;
  console.log(JSON.stringify({ data: data.name, n: data.n, nq: data.nq, k, degree: Number(v.degree), ef, recallHnswlib: recall(theirs), hnswlibQps: hnswQps, recallOurs: recall(ours) }));
}
await graph.dispose();
await flat.dispose();
await backend.dispose();
rmSync(dir, { recursive: true, force: true });
