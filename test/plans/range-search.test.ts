/**
 * Range search (src/plans/range-search.ts, then rangeRescore in src/indexes/range.ts) on both devices,
 * whole and split (chunks of 64 rows, query batches of 10, score tiles of 5 x 16, a pair buffer of
 * 16 pairs and tiles of at most 512, so tiles are re-run and halved): the candidates hold every
 * exact result, without duplicates, and after the re-score equal a float64 brute force, for l2, ip
 * and cosine, radii from nothing to everything; IVF at nprobe = nlist equals Flat, and below it
 * keeps exactly Flat's results in the probed lists. The masks suite needs the mask-scores kernel.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import type { DeviceOptions } from '../../src/device.js';

import type { KernelMetric } from '../../src/kernel-facts.js';
import type { RangeCandidates } from '../../src/plans/range-search.js';
import { clusteredFloats, rng } from '../../src/common/random.js';
import { type RangeResult, rangeRescore } from '../../src/indexes/range.js';
import { cosineDistance } from '../../src/indexes/rescore.js';
import { COSINE_RANGE_BAND, ThresholdTest } from '../../src/common/threshold.js';
import type { CodeStore } from '../../src/stores/code-store.js';
import type { DeviceLists } from '../../src/stores/inverted-lists.js';
import { type Metric, normalizeRows } from '../../src/types.js';
import { cpuBackend } from '../helpers/cpu.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { dedupMargin } from '../../src/common/threshold.js';

afterAll(disposeGpuBackends);

const d = 13; // rows padded to 16 floats: 64 bytes
const n = 300;
const nq = 24;
const nlist = 8;
const rel = dedupMargin(d);

/** Chunks of 4096 / 64 = 64 rows; at most 512 pairs a tile; 10 queries a batch; 5 x 16 score tiles; 16 pairs before a re-run. */
const SPLIT: DeviceOptions = { maxBindingBytes: 4096, queryBatch: 10, tileCols: 16, scoreTileBytes: 16 * 4 * 5, pairCapacity: 16 };

type Maker = (o: DeviceOptions) => Promise<Backend | null>;
const devices: [string, Maker][] = [
  ['cpu', async (o) => cpuBackend(o)],
  ['webgpu', async (o) => gpuBackend(o)],
];
const probeGpu = await gpuBackend();

// Queries drawn from the base's clusters; rows 50 .. 54 copies of row 7 (ties, broken by id), and
// query 0 near row 7.
const all = clusteredFloats(n + nq, d, 10, 31, 0.2);
const xRaw = all.slice(0, n * d);
const xqRaw = all.slice(n * d);
for (let r = 50; r < 55; r++) xRaw.copyWithin(r * d, 7 * d, 8 * d);
xqRaw.set(xRaw.subarray(7 * d, 8 * d));
xqRaw[3] += 0.01;

const kernelMetric = (m: Metric): KernelMetric => (m === 'l2' ? 'l2' : 'ip');
/** The kernel's limit on the minimised score for a radius. */
const limitOf = (m: Metric, radius: number): number => (m === 'l2' ? radius : -radius);
const prepared = (m: Metric, x: Float32Array): Float32Array => (m === 'cosine' ? normalizeRows(x, d) : x);

/** Exact float64 scores of query q against row r of `x` (both as stored): l2 squared distance, ip dot, cosine cosine. */
function exact(m: Metric, xq: Float32Array, q: number, x: Float32Array, r: number): number {
  const a = xq.subarray(q * d, (q + 1) * d);
  const b = x.subarray(r * d, (r + 1) * d);
  if (m === 'cosine') {
    const norm = (v: Float32Array) => Math.sqrt(v.reduce((s, t) => s + t * t, 0));
    return 1 - cosineDistance(a, 0, norm(a), b, 0, norm(b), d);
  }
  let s = 0;
  for (let j = 0; j < d; j++) s += m === 'l2' ? (a[j] - b[j]) * (a[j] - b[j]) : a[j] * b[j];
  return s;
}

/**
 * Brute force: each query's rows (allowed by `keep`) within the radius, best first by the float64
 * score, ties on the smaller id. Within the radius as the exact cut defines it (ThresholdTest, which
 * test/index/threshold-exact.test.ts holds to an integer oracle): the radii below sit on the data's
 * own scores, where a float64 comparison and the exact one can differ; reported as it reports them.
 */
function bruteForce(m: Metric, xq: Float32Array, x: Float32Array, radius: number, keep: (r: number) => boolean = () => true): RangeResult {
  const lims = [0];
  const distances: number[] = [];
  const labels: number[] = [];
  const test = new ThresholdTest(m, radius, d, m === 'cosine' ? COSINE_RANGE_BAND : 0);
  for (let q = 0; q < nq; q++) {
    const hits: [number, number, number][] = [];
    for (let r = 0; r < n; r++) {
      const reported = test.score(xq, q * d, x, r * d);
      if (keep(r) && !Number.isNaN(reported)) hits.push([exact(m, xq, q, x, r), r, reported]);
    }
    hits.sort((a, b) => (m === 'l2' ? a[0] - b[0] : b[0] - a[0]) || a[1] - b[1]);
    for (const [, r, reported] of hits) {
      distances.push(reported);
      labels.push(r);
    }
    lims.push(labels.length);
  }
  return { lims: Float64Array.from(lims), distances: Float32Array.from(distances), labels: Uint32Array.from(labels) };
}

/**
 * Radii from nothing to everything: l2 and ip at exact scores of the data (the boundary row is a
 * result), cosine between two scores (1 - distance rounds).
 */
function radii(m: Metric, xq: Float32Array, x: Float32Array): number[] {
  const s: number[] = [];
  for (let q = 0; q < nq; q++) for (let r = 0; r < n; r++) s.push(exact(m, xq, q, x, r));
  s.sort((a, b) => (m === 'l2' ? a - b : b - a)); // best first
  const at = (f: number) => s[Math.floor(f * (s.length - 1))];
  const between = (f: number) => {
    const i = Math.floor(f * (s.length - 1));
    return (s[i] + s.find((v) => v !== s[i])!) / 2;
  };
  if (m === 'l2') return [s[0] / 2, at(0.003), at(0.03), at(0.2), 2 * s[s.length - 1]];
  if (m === 'ip') return [s[0] + 1, at(0.003), at(0.03), at(0.2), s[s.length - 1] - 1];
  return [(1 + s[0]) / 2, between(0.003), between(0.03), between(0.2), -1];
}

/** Every query's candidates ascending without duplicates, and every exact result among them. */
function expectSuperset(cand: RangeCandidates, want: RangeResult, what: string): void {
  expect(cand.lims.length, what).toBe(nq + 1);
  expect(cand.lims[nq], what).toBe(cand.ids.length);
  for (let q = 0; q < nq; q++) {
    const ids = cand.ids.subarray(cand.lims[q], cand.lims[q + 1]);
    for (let i = 1; i < ids.length; i++) expect(ids[i] > ids[i - 1], `${what}: query ${q} ascending, unique`).toBe(true);
    const set = new Set(ids);
    const missing = Array.from(want.labels.subarray(want.lims[q], want.lims[q + 1])).filter((id) => !set.has(id));
    expect(missing, `${what}: query ${q}'s results among its candidates`).toEqual([]);
  }
}

function expectEqual(got: RangeResult, want: RangeResult, what: string): void {
  expect(Array.from(got.lims), what).toEqual(Array.from(want.lims));
  expect(Array.from(got.labels), what).toEqual(Array.from(want.labels));
  expect(Array.from(got.distances), what).toEqual(Array.from(want.distances));
}

/** A flat store and IVF lists of the data as `m` holds it (ids = row numbers), and the queries. */
async function fixture(backend: Backend, m: Metric) {
  const x = prepared(m, xRaw);
  const xq = prepared(m, xqRaw);
  const store = backend.createBaseStore(d) as CodeStore;
  await store.add(x, n);
  // Centroids: rows 0, 37, 74, ...; each row in the list of its best centroid.
  const centroids = new Float32Array(nlist * d);
  for (let c = 0; c < nlist; c++) centroids.set(x.subarray(37 * c * d, (37 * c + 1) * d), c * d);
  const coarse = backend.createBaseStore(d) as CodeStore;
  await coarse.add(centroids, nlist);
  const listOf = new Uint32Array(n);
  for (let r = 0; r < n; r++) {
    let best = 0;
    for (let c = 1; c < nlist; c++) {
      const [a, b] = [exact(m, x, r, centroids, c), exact(m, x, r, centroids, best)];
      if (m === 'l2' ? a < b : a > b) best = c;
    }
    listOf[r] = best;
  }
  const lists = backend.createLists(d, nlist);
  // Two adds: lists grow into more extents (and, split, across chunks); positions are not ids.
  await lists.add(x.subarray(0, 170 * d), 170, listOf.subarray(0, 170), Uint32Array.from({ length: 170 }, (_, i) => i));
  await lists.add(x.subarray(170 * d), n - 170, listOf.subarray(170), Uint32Array.from({ length: n - 170 }, (_, i) => 170 + i));
  const dispose = () => {
    store.dispose();
    coarse.dispose();
    lists.reset();
  };
  return { x, xq, store, coarse, lists, listOf, dispose };
}

/** Candidates of the whole range search, and its re-scored result. */
async function range(
  backend: Backend,
  f: Awaited<ReturnType<typeof fixture>>,
  m: Metric,
  radius: number,
  nprobe: number | null,
  mask: Uint32Array[] | null = null,
): Promise<{ cand: RangeCandidates; got: RangeResult }> {
  const limit = limitOf(m, radius);
  const cand =
    nprobe === null
      ? await backend.rangeFlat(f.store, f.xq, nq, kernelMetric(m), limit, rel, mask)
      : await backend.rangeIvf(f.coarse, f.lists, f.xq, nq, nprobe, kernelMetric(m), limit, rel, mask);
  const rows = nprobe === null ? await f.store.rowsAt(cand.ids) : await f.lists.rowsAt(cand.ids);
  return { cand, got: rangeRescore(m, f.xq, nq, d, cand, rows, radius) };
}

/** Each stored id's storage position in `lists`. */
function positionsOf(lists: DeviceLists): Map<number, number> {
  const at = new Map<number, number>();
  for (let l = 0; l < lists.nlist; l++) {
    for (const e of lists.extentsOf(l)) {
      for (let r = e.start; r < e.start + e.size; r++) at.set(lists.idAt(lists.position(e.chunk, r)), lists.position(e.chunk, r));
    }
  }
  return at;
}

/** Per-chunk masks (`chunks` chunks of `chunkRows` rows) with the bits of the given storage positions set. */
function maskOf(positions: Iterable<number>, chunkRows: number, chunks: number): Uint32Array[] {
  const masks = Array.from({ length: chunks }, () => new Uint32Array(Math.ceil(chunkRows / 32)));
  for (const p of positions) masks[Math.floor(p / chunkRows)][(p % chunkRows) >>> 5] |= 1 << ((p % chunkRows) & 31);
  return masks;
}

for (const [name, make] of devices) {
  const skip = name === 'webgpu' && !probeGpu;
  for (const [config, options] of [['whole', {}], ['split', SPLIT]] as const) {
    describe(`${name} (${config}): range search`, () => {
      for (const m of ['l2', 'ip', 'cosine'] as Metric[]) {
        it.skipIf(skip)(`${m}: Flat and IVF(nprobe = nlist) candidates hold the exact results, re-scored equal brute force`, async () => {
          const backend = (await make(options))!;
          const f = await fixture(backend, m);
          const rs = radii(m, f.xq, f.x);
          for (const [i, radius] of rs.entries()) {
            const want = bruteForce(m, f.xq, f.x, radius);
            // Nothing, everything, and results in between (the near copies of row 7 among them).
            if (i === 0) expect(want.labels.length).toBe(0);
            else if (i === rs.length - 1) expect(want.labels.length).toBe(nq * n);
            else expect(want.labels.length).toBeGreaterThan(i === 1 ? 5 : 20);
            for (const nprobe of [null, nlist]) {
              const what = `${nprobe === null ? 'flat' : 'ivf'} radius ${radius}`;
              const { cand, got } = await range(backend, f, m, radius, nprobe);
              expectSuperset(cand, want, what);
              expectEqual(got, want, what);
            }
          }
          f.dispose();
        });
      }

      it.skipIf(skip)('IVF below nlist: exactly the Flat results that lie in each query\'s probed lists', async () => {
        const backend = (await make(options))!;
        for (const m of ['l2', 'cosine'] as Metric[]) {
          const f = await fixture(backend, m);
          const nprobe = 3;
          const probes = (await backend.searchFlat(f.coarse, f.xq, nq, nprobe, kernelMetric(m))).labels;
          const radius = radii(m, f.xq, f.x)[3];
          const flat = (await range(backend, f, m, radius, null)).got;
          const { got } = await range(backend, f, m, radius, nprobe);
          const want = { lims: [0], distances: [] as number[], labels: [] as number[] };
          for (let q = 0; q < nq; q++) {
            const probed = new Set(probes.subarray(q * nprobe, (q + 1) * nprobe));
            for (let e = flat.lims[q]; e < flat.lims[q + 1]; e++) {
              if (!probed.has(f.listOf[flat.labels[e]])) continue;
              want.labels.push(flat.labels[e]);
              want.distances.push(flat.distances[e]);
            }
            want.lims.push(want.labels.length);
          }
          expect(want.labels.length).toBeGreaterThan(0);
          expect(want.labels.length).toBeLessThan(flat.labels.length);
          expectEqual(got, { lims: Float64Array.from(want.lims), distances: Float32Array.from(want.distances), labels: Uint32Array.from(want.labels) }, m);
          f.dispose();
        }
      });
    });
  }

  describe(`${name}: range search limits`, () => {
    it.skipIf(skip)('a query with more candidates than one binding holds fails clearly; bad arguments are refused', async () => {
      // 300 candidates per query, 4096 / 8 = 512 pairs a tile: tiles halve down to one query, which fits.
      const backend = (await make({ maxBindingBytes: 4096 }))!;
      const f = await fixture(backend, 'l2');
      const { got } = await range(backend, f, 'l2', 1e6, null);
      expect(got.labels.length).toBe(nq * n);
      // 600 rows: one query alone has 600 candidates.
      await f.store.add(f.x, n);
      await expect(backend.rangeFlat(f.store, f.xq, nq, 'l2', 1e6, rel, null)).rejects.toThrow(
        /query 0 alone has 600 candidate pairs, more than one binding holds \(512\); use a stricter threshold/,
      );
      await expect(backend.rangeFlat(f.store, f.xq, nq, 'l2', Infinity, rel, null)).rejects.toThrow(/limit must be a finite float32; got Infinity/);
      await expect(backend.rangeFlat(f.store, f.xq, nq, 'l2', 1e39, rel, null)).rejects.toThrow(/limit must be a finite float32/);
      await expect(backend.rangeFlat(f.store, f.xq, nq, 'l2', 1, -1, null)).rejects.toThrow(/rel must be a finite number >= 0; got -1/);
      await expect(backend.rangeFlat(f.store, f.xq, nq, 'l2', 1, rel, [])).rejects.toThrow(
        new RegExp(`masks: one per chunk of the store \\(${f.store.chunks.length}\\); got 0`),
      );
      await expect(backend.rangeIvf(f.coarse, f.lists, f.xq, nq, 0, 'l2', 1, rel, null)).rejects.toThrow(/nprobe must be an integer >= 1; got 0/);
      // Nothing to search: every query has no candidates.
      const empty = backend.createBaseStore(d);
      const none = await backend.rangeFlat(empty, f.xq, nq, 'l2', 1e6, rel, null);
      expect(Array.from(none.lims)).toEqual(new Array(nq + 1).fill(0));
      expect(none.ids.length).toBe(0);
      empty.dispose();
      f.dispose();
    });
  });

  // Needs the mask-scores kernel (and its twin): without it masked rows come through.
  describe(`${name}: range search with a mask`, () => {
    for (const [config, options] of [['whole', {}], ['split', SPLIT]] as const) {
      it.skipIf(skip)(`${config}: random, all-zero and one-bit masks, Flat and IVF`, async () => {
        const backend = (await make(options))!;
        for (const m of ['l2', 'ip'] as Metric[]) {
          const f = await fixture(backend, m);
          const radius = radii(m, f.xq, f.x)[3];
          const r = rng(77);
          const random = new Set(Array.from({ length: n }, (_, i) => i).filter(() => r() < 0.5));
          // Rows 7 and 50 .. 54 are results of query 0 (among others): one bit keeps one of them.
          const kept: [string, Set<number>][] = [['random', random], ['all-zero', new Set()], ['one bit', new Set([52])]];
          const at = positionsOf(f.lists);
          for (const [kind, allowed] of kept) {
            const want = bruteForce(m, f.xq, f.x, radius, (row) => allowed.has(row));
            if (kind === 'random') expect(want.labels.length).toBeGreaterThan(50);
            if (kind === 'one bit') expect(new Set(want.labels)).toEqual(new Set([52]));
            // Flat: positions are ids. IVF: each id's position.
            const flat = await range(backend, f, m, radius, null, maskOf(allowed, f.store.chunkRows, f.store.chunks.length));
            const ivf = await range(backend, f, m, radius, nlist, maskOf(Array.from(allowed, (id) => at.get(id)!), f.lists.chunkRows, f.lists.chunks.length));
            for (const [what, { cand, got }] of [['flat', flat], ['ivf', ivf]] as const) {
              expect(Array.from(cand.ids).filter((id) => !allowed.has(id)), `${m} ${kind} ${what}: no masked candidates`).toEqual([]);
              expectSuperset(cand, want, `${m} ${kind} ${what}`);
              expectEqual(got, want, `${m} ${kind} ${what}`);
            }
          }
          f.dispose();
        }
      });
    }
  });
}
