#!/usr/bin/env node
// Does an asymmetric re-score (float query against the +-1 codes) between the Hamming shortlist
// and the exact re-score help? Measured on the codes of a saved LSH index:
//   node scripts/lsh-rerank.mjs DATA [--type LSHrt] [--k 10] [--nq N] [--budget 1,4,10] [--widen 4,10]
// DATA: minilm (the 778 MiniLM embeddings of @sap-ux/fiori-docs-embeddings, cosine; every
// document is a query and its neighbours are the nearest OTHER documents) | siftsmall |
// fashion-mnist (l2, the first --nq queries, exact neighbours by float64 brute force).
// The index is built with the library (cpu backend) and saved; its thresholds, rotation and code
// bits are read back from the file, and everything else is computed here on the host, so each
// strategy gets exactly its budget of exact re-scores:
//   hamming -> exact:              the B = k * budget best by Hamming distance (ties: smaller id), re-scored exactly
//   hamming -> asymmetric -> exact: the widen * B best by Hamming, the B best of those by the asymmetric
//                                   distance to t +- 1 (in the rotated space), re-scored exactly
// Prints recall@k of each against the exact neighbours. Run after `npm run build`.
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createRequire } from 'node:module';
import { loadBenchData } from '../dist/bench/data.js';
import { createBackend, indexFactory } from '../dist/index.js';
import { normalizeRows } from '../dist/types.js';

const USAGE = 'usage: node scripts/lsh-rerank.mjs minilm|siftsmall|fashion-mnist [--type LSH|LSHr|LSHt|LSHrt] [--k K] [--nq N] [--budget F,F..] [--widen W,W..]';
function usage(message) {
  console.error(`lsh-rerank: ${message}\n${USAGE}`);
  process.exit(2);
}
let args;
try {
  args = parseArgs({ allowPositionals: true, options: { type: { type: 'string' }, k: { type: 'string' }, nq: { type: 'string' }, budget: { type: 'string' }, widen: { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
} catch (err) {
  usage(err.message.split('\n')[0]);
}
if (args.values.help) {
  console.log(USAGE);
  process.exit(0);
}
const list = (name, text, fallback) => {
  if (text === undefined) return fallback;
  const v = text.split(',').map(Number);
  if (!v.every((x) => Number.isInteger(x) && x >= 1)) usage(`--${name} must be a comma list of positive integers; got ${JSON.stringify(text)}`);
  return v;
};
const [set] = args.positionals;
if (!['minilm', 'siftsmall', 'fashion-mnist'].includes(set)) usage(`DATA must be minilm, siftsmall or fashion-mnist; got ${JSON.stringify(set)}`);
const type = args.values.type ?? 'LSHrt';
if (!/^LSH(r?)(t?)$/.test(type)) usage(`--type must be LSH, LSHr, LSHt or LSHrt; got ${JSON.stringify(type)}`);
const [k] = list('k', args.values.k, [10]);
const budgets = list('budget', args.values.budget, [1, 4, 10]);
const widens = list('widen', args.values.widen, [4, 10]);

// The data: base rows, queries, metric, and for self-queries the query's own row (excluded).
let xb, xq, d, n, nq, metric, selfRow;
if (set === 'minilm') {
  const require = createRequire(import.meta.url);
  const file = join(require.resolve('@sap-ux/fiori-docs-embeddings/package.json'), '..', 'data/embeddings/embeddings.bin');
  const buf = readFileSync(file);
  xb = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
  d = 384;
  n = xb.length / d;
  nq = Math.min(n, list('nq', args.values.nq, [n])[0]);
  xq = xb.subarray(0, nq * d);
  metric = 'cosine';
  selfRow = (q) => q;
} else {
  const data = await loadBenchData(set, 0, 0, list('nq', args.values.nq, [set === 'siftsmall' ? 100 : 200])[0], 1);
  ({ xb, xq, d, n, nq } = data);
  metric = 'l2';
  selfRow = () => -1;
}
const prep = metric === 'cosine' ? (x) => normalizeRows(x, d) : (x) => x;
const base = prep(xb);
const queries = prep(xq);

// The library builds and saves the index; the file gives its tables and codes.
const backend = await createBackend({ backend: 'cpu' });
const index = indexFactory(backend, d, type, metric);
const t0 = performance.now();
await index.train(xb);
await index.add(xb);
const dir = mkdtempSync(join(tmpdir(), 'lsh-rerank-'));
const path = join(dir, 'index.idx');
await index.save(path);
const buildS = (performance.now() - t0) / 1000;
const buf = readFileSync(path);
rmSync(dir, { recursive: true, force: true });
const rotate = type.includes('r');
const f32 = (at, len) => new Float32Array(buf.buffer.slice(buf.byteOffset + at, buf.byteOffset + at + 4 * len));
const t = f32(40, d);
const R = rotate ? f32(40 + 4 * d, d * d) : null;
const W = Math.ceil(d / 32);
const at = 40 + 4 * (d + (rotate ? d * d : 0));
const codes = new Uint32Array(buf.buffer.slice(buf.byteOffset + at, buf.byteOffset + at + 4 * n * W));

const popcount = (v) => {
  v -= (v >>> 1) & 0x55555555;
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return Math.imul((v + (v >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
};
// Minimised scores: l2 squared distance, or minus the inner product.
const exact = (q, i) => {
  let s = 0;
  for (let j = 0; j < d; j++) s += metric === 'l2' ? (queries[q * d + j] - base[i * d + j]) ** 2 : -queries[q * d + j] * base[i * d + j];
  return s;
};
const byScore = (a, b) => a.s - b.s || a.i - b.i;

const hits = new Map();
const bump = (key, v) => hits.set(key, (hits.get(key) ?? 0) + v);
for (let q = 0; q < nq; q++) {
  const own = selfRow(q);
  const ids = [];
  for (let i = 0; i < n; i++) if (i !== own) ids.push(i);
  const truth = new Set(ids.map((i) => ({ i, s: exact(q, i) })).sort(byScore).slice(0, k).map((e) => e.i));
  // The query in the codes' space and its bits.
  const y = new Float64Array(d);
  for (let j = 0; j < d; j++) {
    let s = 0;
    if (R) for (let u = 0; u < d; u++) s += R[j * d + u] * queries[q * d + u];
    else s = queries[q * d + j];
    y[j] = Math.fround(s);
  }
  const qw = new Uint32Array(W);
  for (let j = 0; j < d; j++) if (y[j] > t[j]) qw[j >>> 5] |= 1 << (j & 31);
  const hamming = ids.map((i) => {
    let s = 0;
    for (let w = 0; w < W; w++) s += popcount(qw[w] ^ codes[i * W + w]);
    return { i, s };
  }).sort(byScore);
  const asym = (i) => {
    let s = 0;
    for (let j = 0; j < d; j++) {
      const rec = t[j] + ((codes[i * W + (j >>> 5)] >>> (j & 31)) & 1 ? 1 : -1);
      s += metric === 'l2' ? (y[j] - rec) ** 2 : -y[j] * rec;
    }
    return s;
  };
  const recall = (cands) => cands.map((i) => ({ i, s: exact(q, i) })).sort(byScore).slice(0, k).filter((e) => truth.has(e.i)).length;
  bump('hamming only', hamming.slice(0, k).filter((e) => truth.has(e.i)).length);
  bump('hamming -> asymmetric', hamming.slice(0, k * Math.max(...widens)).map((e) => ({ i: e.i, s: asym(e.i) })).sort(byScore).slice(0, k).filter((e) => truth.has(e.i)).length);
  for (const b of budgets) {
    const B = k * b;
    bump(`hamming ${B} -> exact`, recall(hamming.slice(0, B).map((e) => e.i)));
    for (const w of widens) {
      const wide = hamming.slice(0, w * B).map((e) => ({ i: e.i, s: asym(e.i) })).sort(byScore).slice(0, B);
      bump(`hamming ${w * B} -> asymmetric ${B} -> exact`, recall(wide.map((e) => e.i)));
    }
  }
}
console.log(`${set}: ${type}, n ${n}, d ${d}, ${nq} queries, k ${k}, ${metric}; built and saved in ${buildS.toFixed(1)} s (cpu)`);
console.log(`| strategy (exact re-scores per query) | recall@${k} |\n|---|---|`);
for (const [key, v] of hits) console.log(`| ${key} | ${(v / (nq * k)).toFixed(4)} |`);
process.exit(0);
