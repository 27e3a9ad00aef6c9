/**
 * VectorIndex: the one interface every index implements (Faiss's `Index`), with its search and
 * training parameters. What the indexes share behind it is IndexCore (src/indexes/index-core.ts).
 */
import type { Backend } from '../backend/backend.js';
import { type IdFilter, type IdList } from './ids.js';

import type { Metric, RangeSearchResult, SearchResult, SearchTimings } from '../types.js';
import { type RowProgress, type VectorSource } from '../common/vector-source.js';
import type { KMeansProgress } from '../codecs/kmeans.js';

import type { IvfSearchParams } from './ivf/params.js';
import type { GraphSearchParams } from './graph/params.js';
import type { MemoryBytes } from './memory.js';

/**
 * A search's parameters: the common ones, and each kind's own (Faiss's SearchParametersIVF:
 * nprobe is IVF's), which the other kinds ignore. A new kind with parameters of its own adds its
 * interface here.
 */
export type SearchParams = CommonSearchParams & IvfSearchParams & GraphSearchParams;

/** The parameters every kind takes. */
export interface CommonSearchParams {
  /**
   * Candidates re-ranked per result (a number >= 1, default 1; Faiss's IndexRefine k_factor): an
   * index with a re-rank (refine rows: `,RFlat`, `,Refine(SQfp16)`; LSH codes, re-ranked by their
   * +-1 reconstructions) re-scores exactly k x kFactor (rounded down, as Faiss) of its codes' best
   * against it and keeps the k best. Elsewhere the final re-score compares the very rows the
   * kernels scored, and kFactor only widens its margin (see rerankCount).
   */
  kFactor?: number;
  /** Only these ids may be results (see IdFilter): each row gets its k nearest allowed vectors. */
  filter?: IdFilter;
  /**
   * How a filter is applied: `pre` (rows not allowed are masked inside scoring), `post` (a search
   * for more candidates, the disallowed dropped; rows left short are searched again with `pre`;
   * only where those candidates number at most HEAP_MAX_K, else `pre`), or `auto` (default: by
   * the filter's selectivity, see POST_FILTER_MIN_SELECTIVITY). Both give the exact answer.
   */
  filterMode?: 'auto' | 'pre' | 'post';
  /** Filled with the time spent uploading, computing, reading back and re-scoring. */
  timings?: SearchTimings;
  /** Also return the float64 scores the results were ordered by (SearchResult.scores): what a merge of shards orders by. */
  exactScores?: boolean;
  /**
   * Range search only: most candidates in all (default 50,000,000, as dedup's); more fail with an
   * InvalidArgumentError before they are held (a radius too loose for the corpus).
   */
  maxCandidates?: number;
}

/** What `train` takes beyond the training set: IVF's k-means progress and sample sizes (Flat, which trains nothing, ignores them). */
export interface TrainOptions {
  onProgress?: (progress: KMeansProgress) => void;
  /** Most training points per list (default 256, as Faiss). */
  maxPointsPerCentroid?: number;
  /** Most training points in all. */
  maxPoints?: number;
}

export interface VectorIndex {
  readonly dim: number;
  readonly metric: Metric;
  /** Vectors stored now (removed ones not counted). */
  readonly ntotal: number;
  /** Whether the index can take vectors (Flat: always; IVF: once trained). */
  readonly isTrained: boolean;
  readonly backend: Backend;
  /** Trains on `xt` (an array, or a source read block by block) where the index has something to train (IVF: k-means); checks it and returns for Flat. */
  train(xt: Float32Array | VectorSource, options?: TrainOptions): Promise<void>;
  /** Adds vectors with sequential ids (0, 1, ... in add order). */
  add(x: Float32Array): Promise<void>;
  /**
   * Adds every row of `source` (a file of any size) block by block, with sequential ids or
   * `options.ids` (one per row, as addWithIds). If it throws, nothing was added.
   */
  addFrom(source: VectorSource, options?: { onProgress?: RowProgress; ids?: IdList }): Promise<void>;
  /** Adds vectors with the caller's ids (one per vector, see src/indexes/ids.ts). */
  addWithIds(x: Float32Array, ids: IdList): Promise<void>;
  /** Removes the vectors with these ids (ids not held are ignored); resolves to how many were removed. */
  removeIds(ids: IdList): Promise<number>;
  /** Whether a live vector has this id (a number or a bigint): after the adds and removals that have resolved. */
  contains(id: number | bigint): boolean;
  /**
   * The stored vectors of these ids, `dim` floats each in the order given, after every operation
   * called before it: float32 rows as stored (unit norm for cosine), a coded index's
   * reconstructions, a refined index's refine rows. An id not held is refused, naming it.
   */
  reconstruct(ids: IdList): Promise<Float32Array>;
  /** The k nearest of each query (see SearchResult), labels being ids. */
  search(xq: Float32Array, k: number, params?: SearchParams): Promise<SearchResult>;
  /** Every vector within `radius` of each query: l2 squared distance <= radius; ip / cosine score >= radius. */
  rangeSearch(xq: Float32Array, radius: number, params?: SearchParams): Promise<RangeSearchResult>;
  reset(): Promise<void>;
  /** Writes the index to a file (Node); `loadIndex` reads it. */
  save(path: string, options?: { onProgress?: (bytesDone: number, bytesTotal: number) => void }): Promise<void>;
  /** The bytes `save` writes, in memory (also in a browser); `deserializeIndex` reads them. */
  serialize(options?: { onProgress?: (bytesDone: number, bytesTotal: number) => void }): Promise<Uint8Array>;
  /** Bytes held now (a getter): `host` in typed arrays, `device` in GPU buffers (0 on the CPU backend); see IndexCore.memoryBytes. */
  readonly memoryBytes: MemoryBytes;
  dispose(): Promise<void>;
}

/**
 * Filters allowing at least this fraction of the index run as post-filters (see SearchParams).
 * Measured on lavapipe (`bench filters`, Flat and IVF512 on clustered 100,000 x 128; the table is
 * in the README, "Filtered search and removal, measured"): only at 0.9 allowed were pre and post
 * within the machine's noise; at 0.5 and below the mask won in every run but one.
 */
export const POST_FILTER_MIN_SELECTIVITY = 0.9;

