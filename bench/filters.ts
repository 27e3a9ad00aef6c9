/**
 * Filtered search and removal benchmarks (issue 14).
 *
 * `filters`: a Flat or IVF index of generated clustered data; for each selectivity (the fraction of ids a
 * filter allows, drawn at random), queries/s with the filter applied inside scoring (`pre`) and
 * by searching more candidates and dropping the rest (`post`), and which one `auto` picks. Both
 * give the exact answer; the records say how far apart their speeds are, which is what
 * POST_FILTER_MIN_SELECTIVITY (src/indexes/vector-index.ts) rests on.
 *
 * `remove`: removeIds of a fraction of a large index (seconds), queries/s before, with the
 * tombstones (masked), and after `compact()`, and how long the compaction took.
 */
import type { Backend, VectorIndex } from 'webgpu-knn';
import { measure } from './measure.js';
import { FlatIndex, HEAP_MAX_K, IvfFlatIndex, POST_FILTER_MIN_SELECTIVITY, clusteredFloats, createBackend, postFilterK, rng } from 'webgpu-knn';

export interface FilterBenchOptions {
  type: 'Flat' | 'IVF';
  nlist: number;
  nprobe: number;
  n: number;
  d: number;
  nq: number;
  k: number;
  /** Fractions of the ids allowed. */
  selectivities: number[];
  /** Queries per search call. */
  batch: number;
  repeats: number;
  backend: 'webgpu' | 'cpu';
  seed: number;
  log: (line: string) => void;
}

export interface FilterBenchRecord {
  bench: 'filters';
  type: 'Flat' | 'IVF';
  backend: string;
  adapter: string;
  n: number;
  d: number;
  nq: number;
  k: number;
  selectivity: number;
  allowed: number;
  /** Queries/s (best of the repeats) per mode; null where the mode falls back to pre (enlarged k beyond the heaps). */
  qps: { pre: number; post: number | null; none: number };
  auto: 'pre' | 'post';
}

/** Queries/s of `o.nq` queries in batches of `o.batch`: one pass to warm up, the best of `o.repeats` (the one timing procedure, bench/measure.ts). */
async function qpsOf(index: VectorIndex, xq: Float32Array, o: { nq: number; d: number; k: number; batch: number; repeats: number }, params: Parameters<VectorIndex['search']>[2]): Promise<number> {
  const m = await measure(async (q) => (await index.search(q, o.k, params)).labels, xq, o.nq, o.d, o.k, { batch: o.batch, warmup: 1, repeats: o.repeats });
  return o.nq / Math.min(...m.passSeconds);
}

export async function runFilterBench(o: FilterBenchOptions): Promise<FilterBenchRecord[]> {
  o.log(`generating clustered n=${o.n} d=${o.d} nq=${o.nq} (seed ${o.seed})`);
  const xb = clusteredFloats(o.n, o.d, 100, o.seed);
  const xq = clusteredFloats(o.nq, o.d, 100, o.seed + 1);
  const backend: Backend = await createBackend({ backend: o.backend });
  const records: FilterBenchRecord[] = [];
  try {
    const index = await buildIndex(backend, o, xb);
    const none = await qpsOf(index, xq, o, {});
    o.log(`${o.backend}: ${backend.description}; unfiltered ${none.toFixed(1)} q/s`);
    const r = rng(o.seed + 2);
    for (const selectivity of o.selectivities) {
      const ids: bigint[] = [];
      for (let i = 0; i < o.n; i++) if (r() < selectivity) ids.push(BigInt(i));
      const filter = BigInt64Array.from(ids);
      const pre = await qpsOf(index, xq, o, { filter, filterMode: 'pre' });
      const kPost = postFilterK(o.k, filter.length / o.n, backend.maxK);
      const post = kPost <= Math.min(HEAP_MAX_K, backend.maxK) ? await qpsOf(index, xq, o, { filter, filterMode: 'post' }) : null;
      const auto = post !== null && filter.length / o.n >= POST_FILTER_MIN_SELECTIVITY ? 'post' : 'pre';
      const rec: FilterBenchRecord = {
        bench: 'filters', type: o.type, backend: o.backend, adapter: backend.description, n: o.n, d: o.d, nq: o.nq, k: o.k,
        selectivity, allowed: filter.length, qps: { pre, post, none }, auto,
      };
      o.log(JSON.stringify(rec));
      records.push(rec);
    }
  } finally {
    backend.dispose();
  }
  return records;
}

/** A Flat index, or an IVF index trained on the data, holding `xb`. */
async function buildIndex(backend: Backend, o: { type: 'Flat' | 'IVF'; d: number; nlist: number; nprobe: number }, xb: Float32Array): Promise<FlatIndex | IvfFlatIndex> {
  let index: FlatIndex | IvfFlatIndex;
  if (o.type === 'Flat') index = new FlatIndex(backend, { dim: o.d });
  else {
    index = new IvfFlatIndex(backend, { dim: o.d, nlist: o.nlist, nprobe: o.nprobe });
    await index.train(xb);
  }
  await index.add(xb);
  return index;
}

export interface RemoveBenchOptions {
  type: 'Flat' | 'IVF';
  n: number;
  d: number;
  nq: number;
  k: number;
  nlist: number;
  nprobe: number;
  /** Fraction of the ids removed. */
  fraction: number;
  batch: number;
  repeats: number;
  backend: 'webgpu' | 'cpu';
  seed: number;
  log: (line: string) => void;
}

export interface RemoveBenchRecord {
  bench: 'remove';
  backend: string;
  adapter: string;
  type: 'Flat' | 'IVF';
  n: number;
  d: number;
  removed: number;
  removeSeconds: number;
  compactSeconds: number;
  qps: { before: number; tombstones: number; compacted: number };
}

export async function runRemoveBench(o: RemoveBenchOptions): Promise<RemoveBenchRecord> {
  o.log(`generating clustered n=${o.n} d=${o.d} (seed ${o.seed})`);
  const xb = clusteredFloats(o.n, o.d, 100, o.seed);
  const xq = clusteredFloats(o.nq, o.d, 100, o.seed + 1);
  const backend: Backend = await createBackend({ backend: o.backend });
  try {
    const index = await buildIndex(backend, o, xb);
    o.log(`${o.backend}: ${backend.description}; ${o.type} of ${index.ntotal} built`);
    const before = await qpsOf(index, xq, o, {});
    const r = rng(o.seed + 3);
    const ids: bigint[] = [];
    for (let i = 0; i < o.n; i++) if (r() < o.fraction) ids.push(BigInt(i));
    let t = performance.now();
    const removed = await index.removeIds(BigInt64Array.from(ids));
    const removeSeconds = (performance.now() - t) / 1000;
    o.log(`removed ${removed} in ${removeSeconds.toFixed(3)} s (${index.ndead} tombstones)`);
    const tombstones = await qpsOf(index, xq, o, {});
    t = performance.now();
    await index.compact();
    const compactSeconds = (performance.now() - t) / 1000;
    const compacted = await qpsOf(index, xq, o, {});
    const rec: RemoveBenchRecord = {
      bench: 'remove', backend: o.backend, adapter: backend.description, type: o.type, n: o.n, d: o.d, removed,
      removeSeconds, compactSeconds, qps: { before, tombstones, compacted },
    };
    o.log(JSON.stringify(rec));
    await index.dispose();
    return rec;
  } finally {
    backend.dispose();
  }
}
