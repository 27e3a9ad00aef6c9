/**
 * Issue 14 at the index level, on both backends, Flat and IVF (nprobe = nlist, so exact): caller
 * ids, filtered search (pre- and post-filter, at 100%, 10%, 0.1% and one allowed id), removal (a
 * tenth: tombstones; half: compaction; all), save/load of what remains, and range search, each
 * against a float64 brute force over the allowed / remaining vectors.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { loadIndex } from '../../src/indexes/load-index.js';
import { clusteredFloats, randomFloats, rng } from '../../src/common/random.js';
import { cosineDistance } from '../../src/indexes/rescore.js';
import { type Metric, normalizeRows } from '../../src/types.js';
import type { VectorIndex } from '../../src/indexes/vector-index.js';
import { cpuBackend } from '../helpers/cpu.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

const gpu = await gpuBackend({ maxBindingBytes: 64 * 1024 });
const cpu = cpuBackend({ maxBindingBytes: 64 * 1024 });
afterAll(disposeGpuBackends);
const backends = [['cpu', cpu], ['webgpu', gpu]] as const;
const dir = mkdtempSync(join(tmpdir(), 'wgknn-ids-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const d = 16;
const n = 2000;
const NLIST = 8;

/** Caller ids: large (past 2^32), spread, in no order. */
function callerIds(count: number, seed: number): BigInt64Array {
  const r = rng(seed);
  const ids = new BigInt64Array(count);
  const used = new Set<bigint>();
  for (let i = 0; i < count; i++) {
    let id: bigint;
    do id = 2n ** 40n + BigInt(Math.floor(r() * 2 ** 30)) * 7n;
    while (used.has(id));
    used.add(id);
    ids[i] = id;
  }
  return ids;
}

/** The exact score the indexes return (float64 from float32 rows, as src/indexes/rescore.ts computes it). */
function exactScore(metric: Metric, q: Float32Array, x: Float32Array): number {
  if (metric === 'l2') {
    let s = 0;
    for (let j = 0; j < d; j++) s += (q[j] - x[j]) ** 2;
    return s;
  }
  if (metric === 'ip') {
    let s = 0;
    for (let j = 0; j < d; j++) s += q[j] * x[j];
    return s;
  }
  const norm = (v: Float32Array): number => Math.sqrt(v.reduce((a, b) => a + b * b, 0));
  return 1 - cosineDistance(q, 0, norm(q), x, 0, norm(x), d);
}

/** Brute force over `rows` (id -> vector), float64: each query's k best, best first, ties on the smaller id. */
function bruteForce(metric: Metric, xq: Float32Array, rows: Map<number, Float32Array>, k: number): { labels: number[][]; distances: number[][] } {
  const labels: number[][] = [];
  const distances: number[][] = [];
  const prep = (v: Float32Array): Float32Array => (metric === 'cosine' ? normalizeRows(v, d) : v);
  for (let r = 0; r < xq.length / d; r++) {
    const q = prep(xq.subarray(r * d, (r + 1) * d));
    const scored = [...rows].map(([id, x]) => ({ id, s: exactScore(metric, q, prep(x)) }));
    scored.sort((a, b) => (metric === 'l2' ? a.s - b.s : b.s - a.s) || a.id - b.id);
    const top = scored.slice(0, k);
    labels.push([...top.map((t) => t.id), ...Array(k - top.length).fill(-1)]);
    distances.push([...top.map((t) => Math.fround(t.s)), ...Array(k - top.length).fill(metric === 'l2' ? Infinity : -Infinity)]);
  }
  return { labels, distances };
}

async function expectSearch(index: VectorIndex, xq: Float32Array, k: number, rows: Map<number, Float32Array>, params: Parameters<VectorIndex['search']>[2], what: string): Promise<void> {
  const got = await index.search(xq, k, params);
  const want = bruteForce(index.metric, xq, rows, k);
  expect(got.labels).toBeInstanceOf(Float64Array);
  for (let r = 0; r < xq.length / d; r++) {
    expect(Array.from(got.labels.subarray(r * k, (r + 1) * k)), `${what}: row ${r} labels`).toEqual(want.labels[r]);
    const gd = Array.from(got.distances.subarray(r * k, (r + 1) * k));
    gd.forEach((v, j) => expect(Math.abs(v - want.distances[r][j]) <= 1e-5 * Math.max(1, Math.abs(v)) || v === want.distances[r][j], `${what}: row ${r} distance ${j}: ${v} vs ${want.distances[r][j]}`).toBe(true));
  }
}

async function makeIndex(kind: 'Flat' | 'IVF', backend: Backend, metric: Metric, xb: Float32Array): Promise<VectorIndex> {
  if (kind === 'Flat') return new FlatIndex(backend, { dim: d, metric });
  const ivf = new IvfFlatIndex(backend, { dim: d, metric, nlist: NLIST, nprobe: NLIST, niter: 3, seed: 5 });
  await ivf.train(xb);
  return ivf;
}

function rowsById(xb: Float32Array, ids: BigInt64Array | null): Map<number, Float32Array> {
  const m = new Map<number, Float32Array>();
  for (let i = 0; i < xb.length / d; i++) m.set(ids ? Number(ids[i]) : i, xb.subarray(i * d, (i + 1) * d));
  return m;
}

const xb = clusteredFloats(n, d, 12, 11);
const xq = randomFloats(8 * d, 12);

describe('ids, filters, removal and range search', () => {
  for (const [name, backend] of backends) {
    for (const kind of ['Flat', 'IVF'] as const) {
      for (const metric of ['l2', 'ip', 'cosine'] as Metric[]) {
        it.skipIf(!backend)(`${name} ${kind} ${metric}: filters at 100%, 10%, 0.1% and one id, pre and post, with caller ids`, async () => {
          const index = await makeIndex(kind, backend!, metric, xb);
          const ids = callerIds(n, 3);
          await index.addWithIds(xb, ids);
          expect(index.ntotal).toBe(n);
          const all = rowsById(xb, ids);
          const r = rng(9);
          for (const fraction of [1, 0.1, 0.001]) {
            const allowed = ids.filter(() => fraction === 1 || r() < fraction);
            const keep = new Map([...all].filter(([id]) => allowed.includes(BigInt(id))));
            for (const filterMode of ['pre', 'post', 'auto'] as const) {
              await expectSearch(index, xq, 10, keep, { filter: allowed, filterMode }, `${fraction} ${filterMode}`);
            }
          }
          const one = ids.subarray(17, 18);
          await expectSearch(index, xq, 10, new Map([[Number(one[0]), all.get(Number(one[0]))!]]), { filter: one }, 'one id');
          // A predicate, and ids the index does not hold (ignored).
          await expectSearch(index, xq, 5, new Map([...all].filter(([id]) => id % 3 === 0)), { filter: (id) => id % 3 === 0 }, 'predicate');
          await expectSearch(index, xq, 5, new Map(), { filter: BigInt64Array.of(1n, 2n) }, 'unknown ids');
          await index.dispose();
        });
      }

      it.skipIf(!backend)(`${name} ${kind}: a post-filter whose candidates hold too few allowed vectors searches those rows again, exactly`, async () => {
        // Queries are copies of rows; the filter allows half the index but none of the 300 rows
        // nearest each query, so every post-filter candidate list (k' = 128) is full of
        // disallowed rows and each row is searched again with the mask.
        const index = await makeIndex(kind, backend!, 'l2', xb);
        await index.add(xb);
        const queries = xb.slice(0, 4 * d);
        const all = rowsById(xb, null);
        const near = new Set<number>();
        for (let q = 0; q < 4; q++) {
          const nearest = bruteForce('l2', queries.subarray(q * d, (q + 1) * d), all, 300).labels[0];
          for (const id of nearest) near.add(id);
        }
        const allowedIds = [...all.keys()].filter((id) => !near.has(id)).slice(0, n / 2);
        expect(allowedIds.length).toBe(n / 2);
        const keep = new Map(allowedIds.map((id) => [id, all.get(id)!]));
        const filter = BigInt64Array.from(allowedIds, (id) => BigInt(id));
        await expectSearch(index, queries, 10, keep, { filter, filterMode: 'post' }, 'post, rows searched again');
        await expectSearch(index, queries, 10, keep, { filter, filterMode: 'auto' }, 'auto (post at a half)');
        await index.dispose();
      });

      it.skipIf(!backend)(`${name} ${kind}: removal of a tenth (tombstones), then half (compaction), then all; save and load what remains`, async () => {
        const index = await makeIndex(kind, backend!, 'l2', xb);
        await index.add(xb);
        const live = rowsById(xb, null);
        const r = rng(21);
        const tenth = BigInt64Array.from([...live.keys()].filter(() => r() < 0.1), (id) => BigInt(id));
        expect(await index.removeIds(BigInt64Array.of(...tenth, 10n ** 12n))).toBe(tenth.length); // an unknown id is ignored
        for (const id of tenth) live.delete(Number(id));
        expect(index.ntotal).toBe(live.size);
        expect((index as FlatIndex).ndead).toBe(tenth.length); // below the compaction threshold: tombstones
        await expectSearch(index, xq, 10, live, {}, 'a tenth removed');
        await expectSearch(index, xq, 10, new Map([...live].filter(([id]) => id % 2 === 0)), { filter: (id) => id % 2 === 0 }, 'filter over tombstones');
        expect(await index.removeIds(tenth)).toBe(0); // already gone
        const half = BigInt64Array.from([...live.keys()].filter((id) => id % 2 === 1), (id) => BigInt(id));
        expect(await index.removeIds(half)).toBe(half.length);
        for (const id of half) live.delete(Number(id));
        expect((index as FlatIndex).ndead).toBe(0); // compacted
        expect(index.ntotal).toBe(live.size);
        await expectSearch(index, xq, 10, live, {}, 'half removed');
        // Sequential ids go on from where they were, not from ntotal.
        await index.add(xb.subarray(0, 3 * d));
        live.set(n, xb.subarray(0, d));
        live.set(n + 1, xb.subarray(d, 2 * d));
        live.set(n + 2, xb.subarray(2 * d, 3 * d));
        await expectSearch(index, xq, 10, live, {}, 'added after compaction');
        const path = join(dir, `${name}-${kind}.idx`);
        await index.save(path);
        const loaded = await loadIndex(backend!, path);
        expect(loaded.ntotal).toBe(live.size);
        await expectSearch(loaded, xq, 10, live, {}, 'loaded');
        await loaded.add(xb.subarray(0, d));
        live.set(n + 3, xb.subarray(0, d));
        await expectSearch(loaded, xq, 10, live, {}, 'added after load');
        expect(await index.removeIds(BigInt64Array.from(live.keys(), (id) => BigInt(id)).filter((id) => id < BigInt(n + 3)))).toBe(live.size - 1);
        expect(index.ntotal).toBe(0);
        await expectSearch(index, xq, 4, new Map(), {}, 'all removed');
        await index.dispose();
        await loaded.dispose();
      });

      it.skipIf(!backend)(`${name} ${kind}: range search at radii returning nothing, some and everything`, async () => {
        for (const metric of ['l2', 'ip', 'cosine'] as Metric[]) {
          const index = await makeIndex(kind, backend!, metric, xb);
          const ids = callerIds(n, 4);
          await index.addWithIds(xb, ids);
          const all = rowsById(xb, ids);
          await index.removeIds(ids.subarray(0, 100)); // tombstones are not results
          for (const id of ids.subarray(0, 100)) all.delete(Number(id));
          const radii = metric === 'l2' ? [-1, 0.5, 4, 1e9] : metric === 'ip' ? [1e9, 2, 0.5, -1e9] : [1.5, 0.9, 0.5, -1.5];
          for (const radius of radii) {
            const got = await index.rangeSearch(xq, radius);
            expect(got.lims.length).toBe(xq.length / d + 1);
            const everything = bruteForce(metric, xq, all, all.size);
            for (let q = 0; q < xq.length / d; q++) {
              const want = everything.labels[q].filter((_, j) => (metric === 'l2' ? everything.distances[q][j] <= radius : everything.distances[q][j] >= radius));
              const gotLabels = Array.from(got.labels.subarray(got.lims[q], got.lims[q + 1]));
              expect(gotLabels, `${metric} radius ${radius} query ${q}`).toEqual(want);
            }
            if (radius === radii[0]) expect(got.lims[got.lims.length - 1], 'the first radius returns nothing').toBe(0);
            if (radius === radii[3]) {
              expect(got.lims[got.lims.length - 1], 'the last radius returns everything').toBe(all.size * (xq.length / d));
              // A cap below that refuses, naming it, rather than holding them all.
              await expect(index.rangeSearch(xq, radius, { maxCandidates: 100 })).rejects.toThrow(/lets through more than 100 candidates/);
            }
          }
          await index.dispose();
        }
      });
    }

    it.skipIf(!backend)(`${name}: a filter's bitmap is reused across searches, but not after the index or the id array changes`, async () => {
      const index = new FlatIndex(backend!, { dim: d });
      await index.add(xb);
      const all = rowsById(xb, null);
      const subset = (ids: BigInt64Array) => new Map(Array.from(ids, (id) => [Number(id), all.get(Number(id))!]));
      const filter = BigInt64Array.from({ length: 40 }, (_, i) => BigInt(i * 13));
      await expectSearch(index, xq, 5, subset(filter), { filter }, 'first');
      await expectSearch(index, xq, 5, subset(filter), { filter }, 'again (cached)');
      filter[0] = 1999n; // changed in place
      filter[5] = 7n;
      await expectSearch(index, xq, 5, subset(filter), { filter }, 'changed in place');
      await index.removeIds(filter.subarray(0, 3)); // the index changed
      await expectSearch(index, xq, 5, subset(filter.subarray(3)), { filter }, 'after a removal');
      await index.dispose();
    });

    it.skipIf(!backend)(`${name}: bad ids and mixing id kinds are refused, naming the problem`, async () => {
      const index = new FlatIndex(backend!, { dim: d });
      await expect(index.addWithIds(xb.subarray(0, 2 * d), BigInt64Array.of(1n))).rejects.toThrow(/1 ids for 2 vectors/);
      await expect(index.addWithIds(xb.subarray(0, 2 * d), BigInt64Array.of(1n, 1n))).rejects.toThrow(/id 1 appears twice/);
      await expect(index.addWithIds(xb.subarray(0, d), BigInt64Array.of(-2n))).rejects.toThrow(/ids\[0\] is -2/);
      await expect(index.addWithIds(xb.subarray(0, d), BigInt64Array.of(2n ** 53n))).rejects.toThrow(/2\^53 - 1/);
      await expect(index.addWithIds(xb.subarray(0, d), new Float32Array([0.5]))).rejects.toThrow(/ids\[0\] is 0\.5; ids must be integers/);
      await expect(index.addWithIds(xb.subarray(0, d), 'ab' as never)).rejects.toThrow(/ids must be 1 ids \(a BigInt64Array, or an array of numbers or bigints\); got string/);
      await index.addWithIds(xb.subarray(0, d), BigInt64Array.of(5n));
      await expect(index.addWithIds(xb.subarray(0, d), BigInt64Array.of(5n))).rejects.toThrow(/already in the index/);
      await expect(index.add(xb.subarray(0, d))).rejects.toThrow(/caller ids/);
      await expect(index.search(xq, 1, { filter: [1, 2] as never })).rejects.toThrow(/filter must be/);
      await expect(index.rangeSearch(xq, 1e39)).rejects.toThrow(/radius must be a number in \[-1e\+38, 1e\+38\].*got 1e\+39/);
      await expect(index.rangeSearch(xq, NaN)).rejects.toThrow(/radius must be .*got NaN/);
      await expect(index.rangeSearch(xq, 1, { maxCandidates: -1 })).rejects.toThrow(/maxCandidates must be an integer >= 0; got -1/);
      expect(index.ntotal).toBe(1);
      const seq = new FlatIndex(backend!, { dim: d });
      await seq.add(xb.subarray(0, d));
      await expect(seq.addWithIds(xb.subarray(0, d), BigInt64Array.of(7n))).rejects.toThrow(/sequential ids/);
      await index.dispose();
      await seq.dispose();
    });
  }
});
