/**
 * The contracts below the backend facade: what stores hold and how rows are laid out (RowFormat),
 * the store and list-store interfaces the plans read, the k-means workspace and the self-join's
 * options, and `Compute`, the small surface that codecs, k-means and refine train and encode on.
 * Implementers (src/stores, src/plans/kmeans-step.ts, src/backend/backend.ts) and users (plans,
 * codecs, indexes) import these from here, so nothing low imports the backend; this module imports
 * only the kernel contract (src/device.ts) and leaves.
 */
import type { Device, DeviceBuffer, SqCodeKind } from './device.js';
import type { KernelMetric } from './kernel-facts.js';
import type { SearchTimings, SlotResult } from './types.js';

/** Rows of one chunk: the device buffer, and the host's copy where there is one (src/stores/rows.ts). */
export interface RowChunk {
  xb: DeviceBuffer;
  /** This chunk's rows on the host (see above; words, as a Float32Array), or null: read back from the device. */
  host: Float32Array | null;
}

/** A stored row by id: a view whose first `d` floats are the row. */
export type RowAt = (id: number) => Float32Array;

/**
 * Query rows as a coded format's kernel takes them: `xq` (`nq * d`) and one bias per row. `lists`
 * (residual formats only): row i is scored against rows of list lists[i].
 */
export type QueryTransform = (xq: Float32Array, nq: number, metric: KernelMetric, lists?: Uint32Array) => { xq: Float32Array; qbias: Float32Array };

/** How a plan scores queries against rows of a format. */
export type RowScoring =
  | { kernel: 'gemm-scores' }
  | {
      kernel: 'sq-scores';
      kind: SqCodeKind;
      /** With the kernel's bias + xq . code, the score of the row's reconstruction. */
      transform: QueryTransform;
    }
  | {
      kernel: 'pq-scores';
      M: number;
      nbits: number;
      ksub: number;
      dsub: number;
      /** The sub-quantizers' centroids (M * ksub * dsub floats), the pq-tables kernel's codebook. */
      codebook: Float32Array;
      /** The rows pq-tables makes tables of, and the bias each score starts from. */
      transform: QueryTransform;
    }
  | {
      kernel: 'hamming-scores';
      /** Query rows (`nq * d`, as the index holds them) as the codes they are compared with (rowWords u32 a row). */
      encode: (xq: Float32Array, nq: number) => Uint32Array;
    };

export interface RowFormat {
  readonly d: number;
  /** Query rows and float rows are `dpad` floats (d rounded up to a multiple of 4). */
  readonly dpad: number;
  /** 32-bit words a stored row takes. */
  readonly rowWords: number;
  readonly scoring: RowScoring;
  /** Whether rows are codes of residuals to their list's centroid (IVF; see above). */
  readonly residual: boolean;
  /**
   * `n` rows (`n * d`, as the index holds them: residuals for a residual format) as stored words
   * (`n * rowWords`, a Float32Array over the words' bits), and the squared norms of the rows as they
   * will be scored, or null where the `norms` kernel computes them from the stored rows (float
   * rows). Null for product codes, which the index encodes on the backend (ProductQuantizer.encode)
   * and adds as stored.
   */
  readonly encode: ((x: Float32Array, n: number) => { words: Float32Array; norms: Float32Array | null }) | null;
  /** As `encode`, for rows already stored in this format (`n * rowWords` words: codes, a compaction, a load). */
  stored(words: Float32Array, n: number): { words: Float32Array; norms: Float32Array | null };
  /** The row stored at `words[offset .. offset + rowWords)` as `d` floats (a view for float rows; the residual for a residual format). */
  row(words: Float32Array, offset: number): Float32Array;
  /** `n` stored rows as `n * d` floats (a view where the rows need no change). */
  rows(words: Float32Array, n: number): Float32Array;
}

/** Encoded rows as a store takes them (see RowFormat.encode). */
export interface EncodedRows {
  words: Float32Array;
  norms: Float32Array | null;
}

/** One chunk of a store: one device buffer of rows (within one binding) and their squared norms. */
export interface StoreChunk extends RowChunk {
  xnorm: DeviceBuffer;
  rows: number;
  capacity: number;
}

/** One chunk of inverted lists: rows grouped by list in extents, their ids, and each list's ranges. */
export interface ListChunk extends RowChunk {
  /** The rows as halves, where the lists keep them (`half`): what the scan reads first. */
  xh: DeviceBuffer | null;
  xnorm: DeviceBuffer;
  ids: DeviceBuffer;
  /** Rows the buffers hold. */
  capacity: number;
  /** Rows reserved by extents (the first free row). */
  used: number;
  /** Host mirror of the device table (2 * nlist u32). */
  ranges: Uint32Array;
  rangesBuf: DeviceBuffer;
  /** Host mirror of `ids` (the GEMM strategy maps the rows it selects to ids on the host). */
  hostIds: Uint32Array;
}

export interface BaseStoreOptions {
  /**
   * Where the device's memory is not the host's (WebGPU): keep one host copy of the rows, so that
   * the exact re-score of each search's candidates and `save` read the host, not the device.
   * False: no host copy; those read the rows back from the device. Default: the device's
   * `tuning.hostCopy` (on for a real GPU, off for a CPU-emulated adapter, whose device memory is
   * host memory already). On the CPU device rows are read in place and there is never a copy. See
   * src/stores/rows.ts.
   */
  hostCopy?: boolean;
}

/** Base vectors held by a backend: see CodeStore (src/stores/code-store.ts). */
export interface BaseStore {
  readonly d: number;
  readonly ntotal: number;
  /** Query rows (and float rows) are `dpad` floats. */
  readonly dpad: number;
  /** Rows per chunk: every chunk but the last that holds rows is full. */
  readonly chunkRows: number;
  /** The chunks, in row order (what the plans tile over). */
  readonly chunks: readonly StoreChunk[];
  /** The first row of each chunk. */
  chunkStarts(): number[];
  /** Appends `n` rows of `x` (`n * d`, already validated). If it throws, nothing was appended. */
  add(x: Float32Array, n: number): Promise<void>;
  /** Appends `n` rows as another store of the same format stored them (`readRows(true)`). */
  addStored(words: Float32Array, n: number): Promise<void>;
  /** Appends `n` rows encoded by their codec (see Codec.encode). */
  addEncoded(rows: EncodedRows, n: number): Promise<void>;
  /** Words a stored row takes. */
  readonly rowWords: number;
  /** How rows are stored and scored (float rows, or a codec's codes). */
  readonly format: RowFormat;
  /** Makes room for `n` more rows in buffers of exactly that size (no doubling). */
  reserve(n: number): Promise<void>;
  /** What the store holds now, for `rollback`. */
  mark(): number[];
  /** Back to what `mark` saw: rows added since are dropped. */
  rollback(mark: number[]): void;
  /**
   * The stored rows of `ids` (all the caller will ask for), by id: a view of each row's `d` floats,
   * valid until the next add or reset; do not modify it.
   */
  rowsAt(ids: ArrayLike<number>): Promise<RowAt>;
  /**
   * Every stored row in id order, in blocks of whole rows (each valid until the next is asked for):
   * `d` floats a row, or with `stored`, the row as stored (`rowWords` words: codes stay coded).
   */
  readRows(stored?: boolean): AsyncGenerator<Float32Array>;
  /** Removes every vector and frees its device memory. */
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
  dispose(): void;
}

/** How a self-join hands its pairs on (see Backend.selfJoinCandidates). */
export interface SelfJoinOptions {
  /** Called once per row tile, in row order, with the tile's pairs sorted by (i, j). */
  onPairs: (block: Uint32Array, rowsDone: number) => void;
  /** Most candidate pairs in all (a non-negative integer or Infinity). */
  maxCandidates?: number;
  /**
   * Only the pairs (i, j) with i < split <= j: the join of rows [0, split) with rows [split,
   * ntotal), two blocks held in one store (a distributed dedup's block pair). Default (or 0):
   * every pair.
   */
  split?: number;
}

/** The live rows of an index, in slot order (IdMap, src/indexes/ids.ts): what a save or a compaction keeps. */
export interface LiveRows {
  /** Live vectors. */
  readonly ntotal: number;
  /** The live rows of `blocks` (every slot's row in slot order, `width` words a row), in blocks; `slotAt(row)` is a row's slot. */
  liveRows(blocks: AsyncIterable<Float32Array>, width: number, slotAt: (row: number) => number): AsyncGenerator<Float32Array>;
}

/**
 * Inverted lists on a device (src/stores/inverted-lists.ts, DeviceLists): what the IVF plans read.
 * Rows sit in extents of per-list capacity inside chunks; a row's position is its place in the
 * chunks, its id the one stored with it.
 */
export interface ListStore {
  readonly d: number;
  readonly nlist: number;
  readonly ntotal: number;
  readonly format: RowFormat;
  readonly dpad: number;
  readonly rowWords: number;
  readonly chunkRows: number;
  readonly chunks: readonly ListChunk[];
  /** The lists' half rows, where they keep them: row words and the bounds of the halves' error. */
  readonly half: { rowWords: number; maxNorm: number; maxError: number } | null;
  /** Whether a position's id is the position itself (lists built in id order, never compacted). */
  readonly idsInPositionOrder: boolean;
  /** List l's extents: runs of `size` rows from row `start` of chunk `chunk`. */
  extentsOf(l: number): readonly { chunk: number; start: number; size: number }[];
  /** The position of a chunk's row. */
  position(chunk: number, row: number): number;
  /** The id stored at a position. */
  idAt(position: number): number;
}

/**
 * What codecs, k-means and refine compute with (implemented by Backend): the device, float stores,
 * a flat search, and k-means workspaces. Training and encoding are written once against this.
 */
export interface Compute {
  readonly device: Device;
  /** Largest k that searches accept. */
  readonly maxK: number;
  /** A store of `d`-dimensional rows (float32, or `format`'s codes). */
  createBaseStore(d: number, options?: BaseStoreOptions, format?: RowFormat): BaseStore;
  /** Exact k-NN of `nq` queries against the store (see Backend.searchFlat). */
  searchFlat(store: BaseStore, xq: Float32Array, nq: number, k: number, metric: KernelMetric, timings?: SearchTimings, masks?: Uint32Array[] | null): Promise<SlotResult>;
  /** Holds `n` points and `nc` centroids for k-means iterations (see Backend.createKMeansWorkspace). */
  createKMeansWorkspace(x: Float32Array, n: number, d: number, nc: number): Promise<KMeansWorkspace>;
}
