#!/usr/bin/env node
// Where IVF search should switch from the scan strategy to the GEMM one (tuning.ivfStrategy; the
// default `auto` switches at GEMM_MIN_QUERIES_PER_LIST queries per probed list): queries/s of both
// on the same lists, over a range of batch sizes, on this machine's WebGPU adapter.
//   node scripts/ivf-crossover.mjs [--n N] [--nlist L] [--nprobe P] [--batches B1,B2,..] [--rounds R]
// Run after `npm run build`. Generated clustered data (bench's, d = 128, 1,000 queries, k = 10);
// the centroids are trained once and both backends index the same lists; both strategies score
// the rows as the adapter's defaults have it (on a CPU-emulated adapter the scan reads half rows).
// Per batch size b, R rounds of one timed pass each over the first floor(1000 / b) * b queries in
// calls of exactly b, scan and GEMM alternating and taking turns to go first (a change of a noisy
// machine's speed then hits both alike); prints queries per list (b * nprobe / nlist), each
// strategy's median queries/s and their ratio, and fails if the two ever return different labels.
import { parseArgs } from 'node:util';
import { loadBenchData } from '../dist/bench/data.js';
import { GEMM_MIN_QUERIES_PER_LIST } from '../dist/plans/ivf-search.js';
import { IvfFlatIndex, KMeans, createBackend } from '../dist/index.js';

const USAGE = 'usage: node scripts/ivf-crossover.mjs [--n N] [--nlist L] [--nprobe P] [--batches B1,B2,..] [--rounds R]\n' +
  '  --n        base vectors (default 200000)\n' +
  '  --nlist    lists (default 512)\n' +
  '  --nprobe   lists probed a query (default 16)\n' +
  '  --batches  queries a search call, each at most 1000 (default 1,10,30,100,200,300,1000)\n' +
  '  --rounds   timed passes of each strategy a batch size, alternating (default 3)';

let o;
try {
  ({ values: o } = parseArgs({
    options: {
      n: { type: 'string', default: '200000' },
      nlist: { type: 'string', default: '512' },
      nprobe: { type: 'string', default: '16' },
      batches: { type: 'string', default: '1,10,30,100,200,300,1000' },
      rounds: { type: 'string', default: '3' },
      help: { type: 'boolean', short: 'h' },
    },
  }));
} catch (err) {
  console.error(`${err.message}\n${USAGE}`);
  process.exit(2);
}
if (o.help) {
  console.log(USAGE);
  process.exit(0);
}
const int = (name, min) => {
  const v = Number(o[name]);
  if (!Number.isInteger(v) || v < min) {
    console.error(`--${name} must be an integer >= ${min}; got ${o[name]}\n${USAGE}`);
    process.exit(2);
  }
  return v;
};
const [n, nlist, nprobe, rounds] = [int('n', 1), int('nlist', 1), int('nprobe', 1), int('rounds', 1)];
const batches = o.batches.split(',').map((b) => Number(b));
if (batches.some((b) => !Number.isInteger(b) || b < 1 || b > 1000)) {
  console.error(`--batches must be integers in [1, 1000] (the queries); got ${o.batches}\n${USAGE}`);
  process.exit(2);
}
if (nlist > n || nprobe > nlist) {
  console.error(`need nprobe <= nlist <= n; got nprobe ${nprobe}, nlist ${nlist}, n ${n}`);
  process.exit(2);
}

const d = 128;
const k = 10;
const data = await loadBenchData('clustered', n, d, 1000, 1);
const backends = {
  scan: await createBackend({ backend: 'webgpu', tuning: { ivfStrategy: 'scan' } }),
  gemm: await createBackend({ backend: 'webgpu', tuning: { ivfStrategy: 'gemm' } }),
};
console.log(`adapter: ${backends.scan.description}`);
console.log(`clustered ${n} x ${d}, ${data.nq} queries, IVF${nlist}, nprobe ${nprobe}, k ${k}; the scan on ${backends.scan.device.tuning.ivfHalfScan ? 'half' : 'float'} rows; auto takes the GEMM from ${GEMM_MIN_QUERIES_PER_LIST} queries per list`);
const { centroids } = await new KMeans(backends.scan, { dim: d }).train(data.xb, { k: nlist, niter: 10, seed: 1 });
const index = {};
for (const [name, backend] of Object.entries(backends)) {
  index[name] = new IvfFlatIndex(backend, { dim: d, nlist, nprobe });
  await index[name].setCentroids(centroids);
  await index[name].add(data.xb);
}

/** One pass over the queries in calls of exactly `b` (the last nq mod b left out): queries/s, and every call's labels. */
async function pass(ivf, b) {
  const labels = [];
  const calls = Math.floor(data.nq / b);
  const t = performance.now();
  for (let q0 = 0; q0 < calls * b; q0 += b) {
    const r = await ivf.search(data.xq.subarray(q0 * d, (q0 + b) * d), k);
    labels.push(r.labels);
  }
  return { qps: (calls * b) / ((performance.now() - t) / 1000), labels };
}

const median = (v) => {
  const s = [...v].sort((a, b) => a - b);
  return (s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2;
};
console.log('batch  queries/list  scan q/s  gemm q/s  gemm/scan');
for (const b of batches) {
  const qps = { scan: [], gemm: [] };
  // Untimed first: pipelines and buffers for this batch size.
  for (const ivf of Object.values(index)) await pass(ivf, b);
  for (let r = 0; r < rounds; r++) {
    const got = {};
    for (const name of r % 2 === 0 ? ['scan', 'gemm'] : ['gemm', 'scan']) {
      const p = await pass(index[name], b);
      qps[name].push(p.qps);
      got[name] = p.labels;
    }
    got.scan.forEach((l, i) => {
      if (l.some((v, j) => v !== got.gemm[i][j])) {
        console.error(`batch ${b}: the strategies returned different labels in search call ${i}`);
        process.exit(1);
      }
    });
  }
  const [s, g] = [median(qps.scan), median(qps.gemm)];
  console.log(`${String(b).padStart(5)}  ${((b * nprobe) / nlist).toFixed(2).padStart(12)}  ${s.toFixed(1).padStart(8)}  ${g.toFixed(1).padStart(8)}  ${(g / s).toFixed(2).padStart(9)}`);
}
for (const backend of Object.values(backends)) backend.dispose();
