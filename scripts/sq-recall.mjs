#!/usr/bin/env node
// Recall of the scalar-quantised Flat indexes (SQ8, SQ4, SQfp16) against exact neighbours, ours on
// each backend beside Faiss 1.7.3 with the same factory strings (python3-faiss, when installed).
//   node scripts/sq-recall.mjs [siftsmall|fashion-mnist-small|fashion-mnist] [nq]
// Run after `npm run build`. recall@R: the fraction of each query's R exact nearest neighbours
// (published ground truth where the set has it, else our exact Flat search) found among its R
// results, averaged over the queries.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadBenchData } from '../dist/bench/data.js';
import { FlatIndex, createBackend, indexFactory } from '../dist/index.js';

const set = process.argv[2] ?? 'siftsmall';
const data = await loadBenchData(set, 0, 0, process.argv[3] ? Number(process.argv[3]) : undefined, 1);
const { xb, xq, n, nq, d } = data;
const K = 100;
const RS = [1, 10, 100];

let truth;
if (data.groundTruth && data.groundTruth.k >= K) {
  truth = (q, r) => Array.from(data.groundTruth.ids.subarray(q * data.groundTruth.k, q * data.groundTruth.k + r));
} else {
  const cpu = await createBackend({ backend: 'cpu' });
  const flat = new FlatIndex(cpu, { dim: d });
  await flat.add(xb);
  const exact = await flat.search(xq, K);
  truth = (q, r) => Array.from(exact.labels.subarray(q * K, q * K + r));
  cpu.dispose();
}
const recall = (labels, r) => {
  let hit = 0;
  for (let q = 0; q < nq; q++) {
    const want = new Set(truth(q, r));
    for (let j = 0; j < r; j++) if (want.has(Number(labels[q * K + j]))) hit++;
  }
  return hit / (nq * r);
};
const line = (who, kind, labels, seconds) =>
  console.log(`${set} n=${n} d=${d} nq=${nq} | ${kind.padEnd(6)} | ${who.padEnd(14)} | ${RS.map((r) => `R@${r} ${recall(labels, r).toFixed(4)}`).join('  ')} | ${seconds.toFixed(2)} s`);

for (const backendName of ['cpu', 'webgpu']) {
  const backend = await createBackend({ backend: backendName });
  for (const kind of ['SQ8', 'SQ4', 'SQfp16']) {
    const t0 = performance.now();
    const index = indexFactory(backend, d, kind);
    await index.train(xb);
    await index.add(xb);
    const { labels } = await index.search(xq, K);
    line(`ours ${backendName}`, kind, labels, (performance.now() - t0) / 1000);
    await index.dispose();
  }
  backend.dispose();
}

// Faiss with the same strings, on the same arrays.
const dir = mkdtempSync(join(tmpdir(), 'sq-recall-'));
try {
  writeFileSync(join(dir, 'xb.f32'), xb);
  writeFileSync(join(dir, 'xq.f32'), xq);
  const py = `
import sys, time, numpy as np, faiss
d, K = ${d}, ${K}
xb = np.fromfile(sys.argv[1] + '/xb.f32', dtype='float32').reshape(-1, d)
xq = np.fromfile(sys.argv[1] + '/xq.f32', dtype='float32').reshape(-1, d)
for kind in ['SQ8', 'SQ4', 'SQfp16']:
    t0 = time.time()
    index = faiss.index_factory(d, kind)
    index.train(xb)
    index.add(xb)
    _, I = index.search(xq, K)
    I.astype('float64').tofile(sys.argv[1] + '/' + kind + '.f64')
    print(kind, time.time() - t0)
`;
  const out = execFileSync('/usr/bin/python3', ['-c', py, dir], { encoding: 'utf8' });
  for (const l of out.trim().split('\n')) {
    const [kind, seconds] = l.split(' ');
    line('faiss 1.7.3', kind, new Float64Array(readFileSync(join(dir, `${kind}.f64`)).buffer.slice(0)), Number(seconds));
  }
} catch (err) {
  console.log(`faiss: not run (${err.message.split('\n')[0]})`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
