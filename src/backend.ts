/**
 * The kernel contract. Indexes, jobs and the scheduler are written once against `Backend`; choosing
 * the GPU or the CPU is a constructor argument, never a code path. Only types live here: the
 * backends implement it, and create-backend.ts picks one.
 */
import type { IvfLists } from './ivf-lists.js';
import type { KernelMetric } from './kernel-facts.js';
import type { SearchResult, SearchTimings } from './types.js';

export type BackendKind = 'webgpu' | 'cpu';

/**
 * Base vectors held by a backend (on the device for WebGPU), with their squared norms computed
 * once when they are added. Vectors are addressed by their position: ids 0 .. ntotal - 1.
 * Every store also keeps one host copy of its rows: the exact re-score of each search's final
 * candidates (src/rescore.ts) and `save` read it, so neither reads the device back.
 */
export interface BaseStoreOptions {
  /**
   * Keep a host copy of the rows (default true). Without one, `rows()` throws; for stores whose
   * rows nobody reads back (dedup's self-join). The CPU store's rows are its host copy either way.
   */
  hostCopy?: boolean;
}

export interface BaseStore {
  readonly d: number;
  readonly ntotal: number;
  /** Appends `n` rows of `x` (`n * d`, already validated). If it throws, nothing was appended. */
  add(x: Float32Array, n: number): Promise<void>;
  /**
   * The host copy of the stored vectors: `ntotal * d` floats, row-major, as added. A view, valid
   * until the next add or reset; do not modify it.
   */
  rows(): Float32Array;
  /** Removes every vector. */
  reset(): void;
  /** Frees device memory; the store is unusable afterwards. */
  dispose(): void;
}

/**
 * One k-means problem held by a backend: the points (on the device for WebGPU) and `nc` centroids.
 * An iteration runs entirely on the backend; only the counts and the objective come back.
 */
export interface KMeansWorkspace {
  /** Replaces the centroids (`nc * d`, row-major). */
  setCentroids(centroids: Float32Array): Promise<void>;
  /**
   * One Lloyd iteration: assigns every point to its nearest centroid (l2; ties to the smaller
   * centroid id), then moves each centroid to the mean of its points; empty centroids stay put.
   * Returns the assignment's objective (sum of squared distances) and the points per centroid.
   */
  iterate(): Promise<{ objective: number; counts: Uint32Array }>;
  /** The current centroids (`nc * d`). */
  centroids(): Promise<Float32Array>;
  /** The latest assignment (`n` centroid ids). */
  labels(): Promise<Int32Array>;
  dispose(): void;
}

/** How a self-join hands its pairs on (see Backend.selfJoinCandidates). */
export interface SelfJoinOptions {
  /** Called once per row tile, in row order, with the tile's pairs sorted by (i, j). */
  onPairs: (block: Uint32Array, rowsDone: number) => void;
  /** Most candidate pairs in all (a non-negative integer or Infinity). */
  maxCandidates?: number;
}

export interface Backend {
  readonly kind: BackendKind;
  /** Largest k that `searchFlat` accepts. */
  readonly maxK: number;
  /** One line: backend, and for WebGPU the adapter (vendor, architecture, device). */
  readonly description: string;
  createBaseStore(d: number, options?: BaseStoreOptions): BaseStore;
  /**
   * Exact k-NN of `nq` queries (`xq`, `nq * d`) against every vector in `store`.
   * Returns distances (l2: squared Euclidean, clamped at 0; ip: inner product) and labels, each
   * `nq * k`, best first, padded with -1 and +-Infinity.
   */
  searchFlat(
    store: BaseStore,
    xq: Float32Array,
    nq: number,
    k: number,
    metric: KernelMetric,
    timings?: SearchTimings,
  ): Promise<SearchResult>;
  /**
   * IVF search: the `nprobe` lists nearest each query (a flat search of `coarse`, the centroids,
   * with the same metric), scanned for the k best. Results as for `searchFlat`.
   */
  searchIvf(
    coarse: BaseStore,
    lists: IvfLists,
    xq: Float32Array,
    nq: number,
    k: number,
    nprobe: number,
    metric: KernelMetric,
    timings?: SearchTimings,
  ): Promise<SearchResult>;
  /**
   * The candidate pairs (i < j) of the self-join of `store`: every pair whose float32 minimised
   * score (l2: squared distance; ip: -dot) is at most `limit` plus the margin
   * `rel * (||x_i||^2 + ||x_j||^2)`, which exceeds the expansion's rounding, so no true pair is
   * missed (see shaders/pairs-threshold.wgsl).
   *
   * The pairs are streamed, never gathered: rows are joined in tiles, in ascending row order, and
   * `options.onPairs(block, rowsDone)` is called once per row tile (also when it has no pairs) with
   * that tile's pairs [i0, j0, i1, j1, ...] sorted by (i, j); every i of a block is below every i of
   * the next, so the blocks in call order are the whole join sorted by (i, j). `rowsDone` is the
   * number of rows finished (n after the last call). A block is valid only during the call (the
   * backend may reuse its memory): copy what you keep. If `onPairs` throws, the join stops, frees
   * its scratch memory and rejects with that error.
   *
   * More than `options.maxCandidates` pairs in all (default DEFAULT_MAX_CANDIDATES, src/pairs.ts)
   * rejects with an InvalidArgumentError (see tooManyCandidates) as soon as a tile crosses the bound,
   * before that tile's pairs are handed on. Resolves to the number of candidate pairs.
   */
  selfJoinCandidates(store: BaseStore, metric: KernelMetric, limit: number, rel: number, options: SelfJoinOptions): Promise<number>;
  /** Holds `n` points (`x`, `n * d`, validated) and `nc` centroids for k-means iterations. */
  createKMeansWorkspace(x: Float32Array, n: number, d: number, nc: number): Promise<KMeansWorkspace>;
  /** Releases the device; for WebGPU this is what lets the process exit. */
  dispose(): void;
}
