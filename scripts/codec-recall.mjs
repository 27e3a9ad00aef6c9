#!/usr/bin/env node
// Recall of factory-string indexes against exact neighbours: ours on the cpu and webgpu backends
// beside Faiss 1.7.3 (python3-faiss, when installed) with the same strings, nprobe and k_factor.
//   node scripts/codec-recall.mjs DATA NQ --index S1 [--index S2 ...] [--nprobe P] [--kfactor F]
//     [--metric l2|ip|cosine] [--spherical default|on|off|both] [--n N --d D]
// DATA: siftsmall | fashion-mnist-small | fashion-mnist | minilm | clustered; NQ: queries (the
// set's first NQ; minilm: NQ of its 778 rows, spread over them, held out of the base; clustered:
// generated, N x D, default 20000 x 64). --spherical runs each IVF string's k-means with unit
// centroids (on), by plain L2 (off), or both, ours and Faiss's (cp.spherical) alike; default: the
// engines' own (spherical for ip and cosine in both, except that ours trains lists of PQ codes by
// L2). Run
// after `npm run build`. Each string is trained on the base (ours: once, on --build, default
// webgpu; the saved index is then loaded on the other backend, so both search the same codes with
// their own kernels), then searched for k = 100. Per engine:
// R@1, R@10, R@100 (the fraction of each query's R exact nearest neighbours, from the published
// ground truth where the set has one and the metric is l2, else our exact Flat search on the cpu backend, found among
// its R results, averaged over the queries), seconds for train + add + search (ours on the other
// backend: load + search), and the bytes of the
// saved index (ours: save() to a temporary file; Faiss: serialize_index). Per string, whether our
// cpu and webgpu backends returned the same labels.
import { parseArgs } from 'node:util';
import { loadBenchData, loadMiniLm } from '../dist/bench/data.js';
import { FACTORY_KMEANS_NITER, INDEX_STRING_FORMS, parseIndexString, searchGrid, searchParams } from '../dist/bench/index-strings.js';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPeerLookup, detectPeers, startFaiss } from '../dist/bench/peers.js';
import { FlatIndex, IvfFlatIndex, codecName, createBackend, indexFactory, loadIndex, parseIndexType } from '../dist/index.js';

const SETS = ['siftsmall', 'fashion-mnist-small', 'fashion-mnist', 'minilm', 'clustered'];
const METRICS = ['l2', 'ip', 'cosine'];
const SPHERICAL = { default: [undefined], on: [true], off: [false], both: [true, false] };
const USAGE = 'usage: node scripts/codec-recall.mjs DATA NQ --index S1 [--index S2 ...] [--nprobe P] [--kfactor F] [--metric M] [--spherical S] [--n N --d D]\n' +
  `  DATA     ${SETS.join(' | ')}\n` +
  '  NQ       queries to score (the first NQ of the set; minilm: NQ rows held out of the base)\n' +
  `  --index  a factory string, repeatable: ${INDEX_STRING_FORMS}\n` +
  '  --nprobe lists probed by IVF strings, ours and Faiss (default 1, both engines\' default)\n' +
  '  --kfactor ,RFlat strings re-rank k * F candidates exactly, ours and Faiss\'s k_factor (default 4)\n' +
  '  --build  the backend ours trains and adds on: webgpu (default) or cpu; the other loads the saved index\n' +
  `  --metric ${METRICS.join(', ')} (default l2; the published ground truth is l2, other metrics score against our exact Flat search)\n` +
  `  --spherical ${Object.keys(SPHERICAL).join(', ')}: IVF k-means with unit centroids, by plain L2, both, or each engine's default (default)\n` +
  '  --n, --d the generated clustered set\'s size (default 20000 x 64)';
const K = 100;
const RS = [1, 10, 100];

function usage(message) {
  console.error(`codec-recall: ${message}\n${USAGE}`);
  process.exit(2);
}

function positiveInt(name, text, fallback) {
  if (text === undefined) return fallback;
  if (!/^\+?\d+$/.test(text) || Number(text) < 1) usage(`${name} must be a positive integer; got ${JSON.stringify(text)}`);
  return Number(text);
}

let args;
try {
  args = parseArgs({
    allowPositionals: true,
    options: {
      index: { type: 'string', multiple: true }, nprobe: { type: 'string' }, kfactor: { type: 'string' }, build: { type: 'string' },
      metric: { type: 'string' }, spherical: { type: 'string' }, n: { type: 'string' }, d: { type: 'string' }, help: { type: 'boolean', short: 'h' },
    },
  });
} catch (err) {
  usage(err.message.split('\n')[0]);
}
if (args.values.help) {
  console.log(USAGE);
  process.exit(0);
}
const [set, nqText, ...extra] = args.positionals;
if (!SETS.includes(set)) usage(`DATA must be one of ${SETS.join(', ')}; got ${set === undefined ? 'nothing' : JSON.stringify(set)}`);
if (nqText === undefined) usage('NQ (the number of queries) is missing');
if (extra.length) usage(`unexpected argument ${JSON.stringify(extra[0])} after DATA and NQ`);
const nqWanted = positiveInt('NQ', nqText);
const strings = (args.values.index ?? []).map((text) => parseIndexString(text) ?? usage(`--index ${JSON.stringify(text)} is not a factory string; expected ${INDEX_STRING_FORMS}`));
if (!strings.length) usage('give at least one --index');
const nprobe = positiveInt('--nprobe', args.values.nprobe, 1);
const buildOn = args.values.build ?? 'webgpu';
if (buildOn !== 'webgpu' && buildOn !== 'cpu') usage(`--build must be webgpu or cpu; got ${JSON.stringify(buildOn)}`);
const loadOn = buildOn === 'webgpu' ? 'cpu' : 'webgpu';
const kFactor = positiveInt('--kfactor', args.values.kfactor, 4);
const metric = args.values.metric ?? 'l2';
if (!METRICS.includes(metric)) usage(`--metric must be one of ${METRICS.join(', ')}; got ${JSON.stringify(metric)}`);
const sphericalAs = args.values.spherical ?? 'default';
if (!(sphericalAs in SPHERICAL)) usage(`--spherical must be one of ${Object.keys(SPHERICAL).join(', ')}; got ${JSON.stringify(sphericalAs)}`);
for (const s of strings) {
  if (s.nlist !== null && nprobe > s.nlist) usage(`--nprobe ${nprobe} is above nlist = ${s.nlist} of --index ${s.description}`);
}
if (args.values.kfactor !== undefined && !strings.some((s) => s.refine)) usage(`--kfactor ${kFactor} needs an --index string ending in ,RFlat; got ${strings.map((s) => s.description).join(', ')}`);

const data = set === 'minilm' ? heldOut(loadMiniLm(nqWanted)) : await loadBenchData(set, positiveInt('--n', args.values.n, 20000), positiveInt('--d', args.values.d, 64), nqWanted, 1);
const { xb, xq, n, nq, d } = data;

/** Self-queries (asSelfQueries) taken out of the base, so that a query's own row is no neighbour. */
function heldOut(self) {
  const rows = new Set(self.selfRows);
  const keep = Array.from({ length: self.n }, (_, i) => i).filter((i) => !rows.has(i));
  const xb = new Float32Array(keep.length * self.d);
  keep.forEach((row, i) => xb.set(self.xb.subarray(row * self.d, (row + 1) * self.d), i * self.d));
  return { ...self, xb, n: keep.length, groundTruth: null };
}
if (nq < nqWanted) console.log(`# ${set} has ${nq} queries; scoring all of them`);

let truth;
let truthName;
if (data.groundTruth && data.groundTruth.k >= K && metric === 'l2') {
  const gt = data.groundTruth;
  truth = (q, r) => gt.ids.subarray(q * gt.k, q * gt.k + r);
  truthName = `published ground truth (${gt.source})`;
} else {
  const cpu = await createBackend({ backend: 'cpu' });
  const flat = new FlatIndex(cpu, { dim: d, metric });
  await flat.add(xb);
  const exact = await flat.search(xq, K);
  truth = (q, r) => exact.labels.subarray(q * K, q * K + r);
  truthName = `our exact Flat search (cpu, ${metric})`;
  await flat.dispose();
  cpu.dispose();
}
const recall = (labels, r) => {
  let hit = 0;
  for (let q = 0; q < nq; q++) {
    const want = new Set(truth(q, r));
    for (let j = 0; j < r; j++) if (want.has(labels[q * K + j])) hit++;
  }
  return hit / (nq * r);
};

const width = Math.max(...strings.map((s) => s.description.length));
const row = (s, param, engine, text) => console.log(`${set} | ${s.description.padEnd(width)} ${param.padEnd(24)} | ${engine.padEnd(14)} | ${text}`);
const measured = (labels, seconds, bytes) =>
  `${RS.map((r) => `R@${r} ${recall(labels, r).toFixed(4)}`).join('  ')} | ${seconds.toFixed(2).padStart(7)} s | ${bytes} bytes (${(bytes / n).toFixed(1)} a vector)`;
const reason = (err) => err.message.split('\n')[0];

console.log(`# ${set} n=${n} d=${d} nq=${nq} k=${K} ${metric}; truth: ${truthName}; nprobe ${nprobe}; kFactor ${kFactor} (,RFlat strings); IVF k-means: spherical ${sphericalAs}`);

const backends = {};
for (const name of ['cpu', 'webgpu']) {
  try {
    backends[name] = await createBackend({ backend: name });
  } catch (err) {
    backends[name] = new Error(reason(err));
  }
}
const faiss = detectPeers(defaultPeerLookup())[0];

/**
 * Our index for `s`: indexFactory's, or with `spherical` given (an IVF string), the same
 * IvfFlatIndex with that k-means setting.
 */
function ourIndex(backend, s, spherical) {
  if (spherical === undefined || s.nlist === null) return indexFactory(backend, d, s.description, metric);
  const t = parseIndexType(s.description);
  return new IvfFlatIndex(backend, { dim: d, metric, nlist: t.nlist, codec: t.codec ? codecName(t.codec) : undefined, refine: t.refine ?? undefined, spherical });
}

for (const s of strings) {
  for (const spherical of s.nlist === null ? [undefined] : SPHERICAL[sphericalAs]) await measureString(s, spherical);
}

async function measureString(s, spherical) {
  const [grid] = searchGrid(s, [nprobe], [kFactor]);
  const config = spherical === undefined ? grid : { ...grid, param: `${grid.param} ${spherical ? 'spherical' : 'L2 k-means'}` };
  const labelsBy = {};
  const dir = mkdtempSync(join(tmpdir(), 'codec-recall-'));
  const path = join(dir, 'index.bin');
  try {
    for (const name of [buildOn, loadOn]) {
      const backend = backends[name];
      const engine = `ours ${name}`;
      if (backend instanceof Error) {
        row(s, config.param, engine, `not run (${backend.message})`);
        continue;
      }
      if (name === loadOn && !existsSync(path)) {
        row(s, config.param, engine, `not run (nothing was built on ${buildOn})`);
        continue;
      }
      let index;
      try {
        const t0 = performance.now();
        if (name === buildOn) {
          index = ourIndex(backend, s, spherical);
          await index.train(xb);
          await index.add(xb);
        } else index = await loadIndex(backend, path);
        const { labels } = await index.search(xq, K, searchParams(config));
        const seconds = (performance.now() - t0) / 1000;
        labelsBy[name] = labels;
        if (name === buildOn) await index.save(path);
        row(s, config.param, name === buildOn ? engine : `${engine} (loaded)`, measured(labels, seconds, statSync(path).size));
      } catch (err) {
        row(s, config.param, engine, `not run (${reason(err)})`);
      } finally {
        await index?.dispose();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  if (!faiss.available) {
    row(s, config.param, 'faiss', `not run (${faiss.detail})`);
  } else {
    try {
      const job = {
        metric, k: K, batch: nq, ivf: null,
        factory: [{ description: s.description, niter: FACTORY_KMEANS_NITER, seed: 1, spherical, configs: [grid] }],
      };
      const session = await startFaiss(faiss.python, xb, xq, n, nq, d, job, () => {}, (_, why) => {
        throw new Error(why);
      });
      try {
        const [c] = session.configs;
        const pass = await c.pass(false); // timed cold, as ours are
        const seconds = c.buildSeconds + pass.batchMs.reduce((a, b) => a + b, 0) / 1000;
        row(s, config.param, `faiss ${faiss.version}`, measured(pass.labels, seconds, c.indexBytes));
      } finally {
        await session.close();
      }
    } catch (err) {
      row(s, config.param, `faiss ${faiss.version}`, `not run (${reason(err)})`);
    }
  }
  if (labelsBy.cpu && labelsBy.webgpu) {
    let differ = 0;
    for (let i = 0; i < labelsBy.cpu.length; i++) if (labelsBy.cpu[i] !== labelsBy.webgpu[i]) differ++;
    console.log(`${set} | ${s.description.padEnd(width)} GPU=CPU: ${differ ? 'no' : 'yes'}, ${differ} of ${labelsBy.cpu.length} labels differ`);
  } else {
    console.log(`${set} | ${s.description.padEnd(width)} GPU=CPU: not compared (${['cpu', 'webgpu'].filter((b) => !labelsBy[b]).join(' and ')} not run)`);
  }
}
for (const backend of Object.values(backends)) if (!(backend instanceof Error)) backend.dispose();
