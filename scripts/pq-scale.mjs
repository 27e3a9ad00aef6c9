#!/usr/bin/env node
// Issue 15's scale demonstration: an index (by default IVF4096,PQ16) built from n generated
// clustered vectors that never exist at once (10,000,000 x 128 is 5.12 GB of floats), with its
// build time, index bytes, peak resident memory, and recall@10 and queries/s per nprobe against
// exact neighbours computed block by block by Flat searches on the same backend (cached in --out). Run after
// `npm run build`; `node scripts/pq-scale.mjs --help` says more.
import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createBackend, indexFactory, rng, writeAtomically } from '../dist/index.js';

const K = 10;
const WARMUP_QUERIES = 100;
const PROGRESS_EVERY_MS = 10_000;
/** Bumped whenever the generator changes, so a cached ground truth of other rows is never reused. */
const GENERATOR = 'g1';

const USAGE = `usage: node scripts/pq-scale.mjs [--n N] [--d D] [--index STRING] [--nq NQ] [--nprobe A,B,...]
         [--backend webgpu|cpu] [--train T] [--seed S] [--clusters C] [--spread X] [--intrinsic K] [--out DIR] [--keep]

Builds an index from N generated clustered vectors streamed block by block (never all in memory),
then reports build time, index bytes, peak resident memory, and recall@10 and queries/s per nprobe.

  --n N          base vectors (default 10000000)
  --d D          dimension (default 128)
  --index S      factory string (default IVF4096,PQ16; any string indexFactory accepts)
  --nq NQ        queries, from the same distribution with another seed (default 1000)
  --nprobe LIST  comma-separated nprobe values, each searched with k = 10 (default 16,64;
                 ignored by indexes without IVF)
  --backend B    webgpu or cpu (default webgpu); the ground truth runs there too (an exact Flat
                 search of each block: float64 re-scored, so the same on either backend)
  --train T      training rows, the first T of the base (default 64 x nlist for IVF strings,
                 65536 otherwise; at most N)
  --seed S       base seed (default 1); the queries use a stream of their own
  --clusters C   blobs in the data (default round(sqrt(N)), as bench's clustered set)
  --spread X     noise per coordinate around a blob's centre (default 0.25)
  --intrinsic K  0 (default): independent noise in every coordinate; K >= 1: each blob's noise
                 lies in a K-dimensional subspace of its own (K noise values mixed by a seeded
                 d x K matrix per blob, same variance per coordinate): data of low intrinsic
                 dimension, as embeddings and SIFT are, which product quantisation can resolve
  --out DIR      ground-truth cache and the saved index (default /tmp/pq-scale)
  --keep         keep DIR/index.bin (default: deleted once its size is known)
  --help         this text

Rows are clusteredFloats' kind: centres uniform in [-1, 1)^d, each row a seeded centre plus noise
(a sum of three uniforms times the spread), generated per block from (seed, block) so that every
pass over the source sees the same rows. The exact top-10 of the queries (squared L2) is computed
once per (N, D, seed, NQ, clusters, spread) by a Flat search of each block, merged with global
ids, and cached in DIR. Progress goes to stderr (at most every 10 s per phase); the figures go to
stdout, ending with one JSON line and a Markdown table row. Peak resident memory is the process's
maxRSS (KiB from the kernel) in GB of 10^9 bytes; on a software adapter (lavapipe) the device's
memory is host memory and is counted too. Exit codes: 0 ok, 1 failure, 2 bad flags.`;

class UsageError extends Error {}

/** The flags, checked; throws UsageError naming the value and what was expected. */
function parseFlags(argv) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        n: { type: 'string' },
        d: { type: 'string' },
        index: { type: 'string' },
        nq: { type: 'string' },
        nprobe: { type: 'string' },
        backend: { type: 'string' },
        train: { type: 'string' },
        seed: { type: 'string' },
        clusters: { type: 'string' },
        spread: { type: 'string' },
        intrinsic: { type: 'string' },
        out: { type: 'string' },
        keep: { type: 'boolean' },
        help: { type: 'boolean' },
      },
    });
  } catch (err) {
    throw new UsageError(err.message);
  }
  const v = parsed.values;
  if (v.help) return { help: true };
  const int = (name, fallback, min, max = Number.MAX_SAFE_INTEGER, why = '') => {
    const text = v[name];
    if (text === undefined) return fallback;
    const x = /^\d+$/.test(text.replaceAll('_', '')) ? Number(text.replaceAll('_', '')) : NaN;
    if (!Number.isSafeInteger(x) || x < min || x > max) {
      throw new UsageError(`--${name} must be an integer in [${min}, ${max}]${why}; got ${JSON.stringify(text)}`);
    }
    return x;
  };
  const n = int('n', 10_000_000, K, 2 ** 31 - 1);
  const d = int('d', 128, 1, 65536);
  const nq = int('nq', 1000, 1, 10_000_000);
  const seed = int('seed', 1, 0, 2 ** 32 - 1);
  const index = (v.index ?? 'IVF4096,PQ16').trim();
  const ivf = /^IVF(\d+),/.exec(index);
  const nlist = ivf ? Number(ivf[1]) : 0;
  if (ivf && (nlist < 1 || nlist > n)) throw new UsageError(`--index ${index}: nlist must be in [1, --n = ${n}]; got ${ivf[1]}`);
  const backend = v.backend ?? 'webgpu';
  if (backend !== 'webgpu' && backend !== 'cpu') throw new UsageError(`--backend must be webgpu or cpu; got ${JSON.stringify(backend)}`);
  const trainDefault = Math.min(n, ivf ? 64 * nlist : 65536);
  const train = int('train', trainDefault, Math.max(1, nlist), n, ivf ? ` (at least nlist = ${nlist} for k-means, at most --n)` : ' (at most --n)');
  const clusters = int('clusters', Math.max(1, Math.round(Math.sqrt(n))), 1, 1 << 20);
  let spread = 0.25;
  if (v.spread !== undefined) {
    spread = Number(v.spread);
    if (v.spread.trim() === '' || !Number.isFinite(spread) || spread < 0) {
      throw new UsageError(`--spread must be a finite number >= 0; got ${JSON.stringify(v.spread)}`);
    }
  }
  let nprobe = [16, 64];
  if (v.nprobe !== undefined) {
    nprobe = v.nprobe.split(',').map((s) => {
      const x = /^\d+$/.test(s.trim()) ? Number(s.trim()) : NaN;
      const max = ivf ? nlist : Number.MAX_SAFE_INTEGER;
      if (!Number.isSafeInteger(x) || x < 1 || x > max) {
        throw new UsageError(`--nprobe must be comma-separated integers in [1, ${ivf ? `nlist = ${nlist}` : max}]; got ${JSON.stringify(s)} in ${JSON.stringify(v.nprobe)}`);
      }
      return x;
    });
  }
  if (!ivf) nprobe = [null];
  const out = v.out ?? '/tmp/pq-scale';
  if (out.trim() === '') throw new UsageError('--out must be a folder; got ""');
  const intrinsic = int('intrinsic', 0, 0, d);
  return { help: false, n, d, index, nlist, nq, nprobe, backend, train, seed, clusters, spread, intrinsic, out, keep: v.keep ?? false };
}

/** A 32-bit seed for one block of one stream (0: base rows, 1: queries), mixed (murmur3's finaliser). */
function blockSeed(seed, stream, block) {
  let h = (Math.imul(seed >>> 0, 0x9e3779b1) ^ Math.imul(stream + 1, 0x85ebca77) ^ Math.imul(block + 1, 0xc2b2ae3d)) >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * `rows` clustered rows of `dim` as a VectorSource: block b (of `blockRows` rows) is a function of
 * (seed, stream, b) alone, so every call of blocks() yields the same rows, and no more than one block
 * is held here at a time.
 */
function clusteredSource({ rows, dim, centres, bases, intrinsic, clusters, spread, seed, stream, blockRows }) {
  return {
    rows,
    dim,
    async *blocks() {
      for (let b = 0, r0 = 0; r0 < rows; b++, r0 += blockRows) {
        const n = Math.min(blockRows, rows - r0);
        const r = rng(blockSeed(seed, stream, b));
        const data = new Float32Array(n * dim);
        const z = new Float64Array(intrinsic);
        for (let i = 0, o = 0; i < n; i++) {
          const blob = Math.floor(r() * clusters);
          const c = blob * dim;
          if (intrinsic === 0) {
            for (let j = 0; j < dim; j++, o++) data[o] = centres[c + j] + (r() + r() + r() - 1.5) * spread;
            continue;
          }
          for (let t = 0; t < intrinsic; t++) z[t] = (r() + r() + r() - 1.5) * spread;
          const b0 = blob * dim * intrinsic;
          for (let j = 0; j < dim; j++, o++) {
            let v = centres[c + j];
            for (let t = 0; t < intrinsic; t++) v += bases[b0 + j * intrinsic + t] * z[t];
            data[o] = v;
          }
        }
        yield { data, rows: n };
      }
    },
  };
}

/** The first `rows` rows of `source`, in one array. */
async function firstRows(source, rows) {
  const out = new Float32Array(rows * source.dim);
  let done = 0;
  for await (const b of source.blocks()) {
    const take = Math.min(b.rows, rows - done);
    out.set(b.data.subarray(0, take * source.dim), done * source.dim);
    done += take;
    if (done === rows) break;
  }
  return out;
}

const seconds = (t0) => (performance.now() - t0) / 1000;
const fmt = (x) => x.toLocaleString('en-US');
const gb = (bytes) => bytes / 1e9;
const peakRssBytes = () => process.resourceUsage().maxRSS * 1024; // maxRSS is in KiB
const log = (line) => process.stderr.write(`${line}\n`);

/** An addFrom/ground-truth progress callback printing at most every 10 s per phase, and when a phase ends. */
function progressPrinter(what) {
  let phase = null;
  let t0 = 0;
  let last = 0;
  return (done, rows, name = '') => {
    const now = performance.now();
    if (name !== phase) {
      phase = name;
      t0 = now;
      last = now;
    }
    if (now - last < PROGRESS_EVERY_MS && done < rows) return;
    last = now;
    const s = (now - t0) / 1000;
    log(`${what}${name ? ` ${name}` : ''}: ${fmt(done)} / ${fmt(rows)} rows, ${s.toFixed(1)} s, ${fmt(Math.round(done / Math.max(s, 1e-9)))} rows/s`);
  };
}

/**
 * Merges `k` (distance, id) pairs of one block's result into the running best `k` of each query
 * (ascending; a tie keeps the earlier, smaller id, as every block's ids are above the ones held).
 */
function mergeTopK(bestD, bestI, d, labels, start, nq, k) {
  const md = new Float32Array(k);
  const mi = new Int32Array(k);
  for (let q = 0; q < nq; q++) {
    const o = q * k;
    let a = 0;
    let b = 0;
    for (let t = 0; t < k; t++) {
      const takeB = b < k && labels[o + b] >= 0 && (a >= k || d[o + b] < bestD[o + a]);
      if (takeB) {
        md[t] = d[o + b];
        mi[t] = start + labels[o + b];
        b++;
      } else {
        md[t] = bestD[o + a];
        mi[t] = bestI[o + a];
        a++;
      }
    }
    bestD.set(md, o);
    bestI.set(mi, o);
  }
}

/**
 * The exact top-k ids (`nq * k`) of `xq` over `source`, one Flat index per block on `backend`
 * (exact on either backend: a Flat search re-scores its candidates in float64).
 */
async function exactTopK(backend, source, xq, nq, k) {
  const bestD = new Float32Array(nq * k).fill(Infinity);
  const bestI = new Int32Array(nq * k).fill(-1);
  const progress = progressPrinter('ground truth');
  let start = 0;
  for await (const b of source.blocks()) {
    const flat = indexFactory(backend, source.dim, 'Flat');
    try {
      await flat.add(b.data);
      const { distances, labels } = await flat.search(xq, k);
      mergeTopK(bestD, bestI, distances, labels, start, nq, k);
    } finally {
      await flat.dispose();
    }
    start += b.rows;
    progress(start, source.rows);
  }
  return bestI;
}

/** Mean over queries of |results ∩ truth| / k. */
function recallAtK(labels, truth, nq, k) {
  let hits = 0;
  for (let q = 0; q < nq; q++) {
    const want = new Set(truth.subarray(q * k, (q + 1) * k));
    for (let j = 0; j < k; j++) if (want.has(Number(labels[q * k + j]))) hits++;
  }
  return hits / (nq * k);
}

async function main(o) {
  const { n, d, nq, seed, clusters, spread } = o;
  const blockRows = Math.max(1, Math.floor((16 << 20) / (4 * d))); // 16 MiB of floats, as the file readers' blocks
  // Centres first from the base seed; rows and queries from streams of their own, so the queries
  // share the base's distribution (the same blobs) and none of its rows.
  const centresRng = rng(blockSeed(seed, 2, 0));
  const centres = Float32Array.from({ length: clusters * d }, () => 2 * centresRng() - 1);
  // Each blob's noise basis (intrinsic > 0): entries uniform in [-1, 1) scaled so that a
  // coordinate's noise has the variance of independent noise (the sum of K squares averages 1).
  const { intrinsic } = o;
  const basesRng = rng(blockSeed(seed, 3, 0));
  const scale = intrinsic > 0 ? Math.sqrt(3 / intrinsic) : 0;
  const bases = Float32Array.from({ length: intrinsic > 0 ? clusters * d * intrinsic : 0 }, () => (2 * basesRng() - 1) * scale);
  const gen = { dim: d, centres, bases, intrinsic, clusters, spread, seed, blockRows };
  const source = clusteredSource({ ...gen, rows: n, stream: 0 });
  const querySource = clusteredSource({ ...gen, rows: nq, stream: 1 });
  const xq = await firstRows(querySource, nq);
  mkdirSync(o.out, { recursive: true });

  console.log(`pq-scale: ${o.index}, n ${fmt(n)} x d ${d} (${gb(n * d * 4).toFixed(2)} GB of float32), ${fmt(clusters)} blobs, spread ${spread}, intrinsic ${intrinsic || 'd (independent noise)'}, seed ${seed}, nq ${fmt(nq)}, k ${K}`);
  const backend = await createBackend({ backend: o.backend });
  console.log(`backend: ${backend.description}`);
  let index = null;
  try {
    index = indexFactory(backend, d, o.index); // checks the string before the long work starts

    // Ground truth, cached by everything that decides it.
    const gtPath = join(o.out, `gt-${GENERATOR}-n${n}-d${d}-seed${seed}-nq${nq}-c${clusters}-s${spread}${intrinsic ? `-i${intrinsic}` : ''}-k${K}.i32`);
    let truth;
    let gtSeconds = null;
    if (existsSync(gtPath) && statSync(gtPath).size === nq * K * 4) {
      const bytes = readFileSync(gtPath);
      truth = new Int32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
      console.log(`ground truth: reused ${gtPath}`);
    } else {
      const t0 = performance.now();
      truth = await exactTopK(backend, source, xq, nq, K);
      gtSeconds = seconds(t0);
      writeAtomically(gtPath, new Uint8Array(truth.buffer));
      console.log(`ground truth: exact top-${K} of ${fmt(nq)} queries over ${fmt(n)} rows on the ${backend.kind} backend in ${gtSeconds.toFixed(1)} s, cached in ${gtPath}`);
    }

    // Build: train on the first rows, then add every row from the stream (IVF reads it twice).
    let t0 = performance.now();
    const xt = await firstRows(source, o.train);
    await index.train(xt, {
      onProgress: (p) => log(`train: k-means iteration ${p.iteration} / ${p.niter}, objective ${p.objective.toPrecision(6)}, ${p.seconds.toFixed(1)} s`),
    });
    const trainSeconds = seconds(t0);
    console.log(`train: ${fmt(o.train)} rows in ${trainSeconds.toFixed(1)} s`);
    t0 = performance.now();
    await index.addFrom(source, { onProgress: progressPrinter('add') });
    const addSeconds = seconds(t0);
    const buildSeconds = trainSeconds + addSeconds;
    const peakAfterBuild = peakRssBytes();
    console.log(`add: ${fmt(n)} rows in ${addSeconds.toFixed(1)} s; build ${buildSeconds.toFixed(1)} s; ntotal ${fmt(index.ntotal)}; peak RSS so far ${gb(peakAfterBuild).toFixed(2)} GB`);

    // Index bytes: what save writes.
    const indexPath = join(o.out, 'index.bin');
    t0 = performance.now();
    await index.save(indexPath);
    const saveSeconds = seconds(t0);
    const indexBytes = statSync(indexPath).size;
    if (!o.keep) rmSync(indexPath, { force: true });
    console.log(`index: ${fmt(indexBytes)} bytes (${gb(indexBytes).toFixed(3)} GB, ${(indexBytes / n).toFixed(1)} per vector), saved in ${saveSeconds.toFixed(1)} s${o.keep ? ` to ${indexPath}` : ' (deleted)'}`);

    // Searches: one warm-up on the first queries, then the whole batch, per nprobe.
    const searches = [];
    const warm = xq.subarray(0, Math.min(WARMUP_QUERIES, nq) * d);
    for (const nprobe of o.nprobe) {
      const params = nprobe === null ? {} : { nprobe };
      await index.search(warm, K, params);
      t0 = performance.now();
      const { labels } = await index.search(xq, K, params);
      const s = seconds(t0);
      const recall = recallAtK(labels, truth, nq, K);
      searches.push({ nprobe, recallAt10: recall, queriesPerSecond: nq / s, seconds: s });
      console.log(`search${nprobe === null ? '' : ` nprobe ${nprobe}`}: recall@10 ${recall.toFixed(4)}, ${fmt(nq)} queries in ${s.toFixed(2)} s, ${(nq / s).toFixed(1)} queries/s`);
    }
    const peak = peakRssBytes();
    console.log(`peak resident memory: ${gb(peak).toFixed(2)} GB (maxRSS, GB = 10^9 bytes)`);

    const figures = {
      index: o.index, backend: o.backend, adapter: backend.description, n, d, nq, k: K, seed, clusters, spread, intrinsic,
      trainRows: o.train, trainSeconds, addSeconds, buildSeconds, ntotal: index.ntotal, indexBytes, saveSeconds,
      peakRssGB: gb(peak), peakRssAfterBuildGB: gb(peakAfterBuild), groundTruthSeconds: gtSeconds, searches,
    };
    console.log(JSON.stringify(figures));
    const cells = (f) => searches.map(f).join(' / ');
    const nprobes = searches[0].nprobe === null ? '' : ` (nprobe ${cells((x) => x.nprobe)})`;
    console.log(`| index | backend | n x d | train s | add s | build s | index bytes | peak RSS GB | recall@10${nprobes} | queries/s${nprobes} |`);
    console.log('|---|---|---|---|---|---|---|---|---|---|');
    console.log(
      `| ${o.index} | ${o.backend} | ${fmt(n)} x ${d} | ${trainSeconds.toFixed(1)} | ${addSeconds.toFixed(1)} | ${buildSeconds.toFixed(1)} | ` +
        `${fmt(indexBytes)} | ${gb(peak).toFixed(2)} | ${cells((x) => x.recallAt10.toFixed(3))} | ${cells((x) => x.queriesPerSecond.toFixed(1))} |`,
    );
  } finally {
    await index?.dispose();
    backend.dispose();
  }
}

let options;
try {
  options = parseFlags(process.argv.slice(2));
} catch (err) {
  if (!(err instanceof UsageError)) throw err;
  log(`pq-scale: ${err.message}\n(node scripts/pq-scale.mjs --help lists the flags)`);
  process.exit(2);
}
if (options.help) {
  console.log(USAGE);
} else {
  try {
    await main(options);
  } catch (err) {
    log(`pq-scale: ${err?.message ?? err}`);
    process.exitCode = 1;
  }
}
