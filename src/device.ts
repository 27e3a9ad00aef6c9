/**
 * The kernel contract: what a plan (src/plans) may ask of a device. A device owns buffers, runs one
 * kernel at a time in call order, and reports its limits; it knows nothing of searches, indexes or
 * tiles. The GPU device (src/gpu/gpu-device.ts) records each call as a WGSL dispatch and submits
 * them together; the CPU device (src/cpu/cpu-device.ts) runs each kernel's twin on typed arrays at
 * once. A plan written over `Device` is therefore one orchestration for both, and the CPU runs the
 * very tiling the GPU runs.
 *
 * Buffers hold 32-bit words (f32 or u32). Rows of vectors are stored `dpad` floats long (d rounded
 * up to a multiple of 4, zero-padded) on every device, so kernels use vec4 loads on the GPU and the
 * twins see the same layout.
 */
import type { KernelMetric } from './kernel-facts.js';
import { type SearchTimings } from './types.js';
import { InvalidArgumentError } from './errors.js';

/** `gpujs`: the CPU device with scoring and norms run through gpu.js (src/gpujs/gpujs-device.ts). */
export type DeviceKind = 'webgpu' | 'gpujs' | 'cpu';

/** A buffer owned by a device; opaque to plans. Its contents are undefined until written. */
export interface DeviceBuffer {
  readonly label: string;
  /** Bytes usable (at least what was asked for). */
  readonly size: number;
}

export interface DeviceLimits {
  /** Most bytes one kernel may bind from one buffer: every buffer a plan creates fits it. */
  readonly maxBindingBytes: number;
  /** Largest k (and nprobe) the selection kernels support. */
  readonly maxK: number;
  /**
   * Most base vectors one gemm-scores call may score: on the GPU, the columns one workgroup of the
   * device's variant covers times the workgroups a dispatch may have per dimension.
   */
  readonly maxTileCols: number;
}

/**
 * How plans tile work on this device (defaults differ per device; tests set them to drive every
 * split on small data). Results never depend on them: only speed does.
 */
export interface DeviceTuning {
  /** Base vectors per score tile (default 16384 on the GPU, 4096 on the CPU). */
  tileCols?: number;
  /** Bytes of one score tile (default 64 MiB on the GPU, 1 MiB on the CPU; capped by the binding limit). */
  scoreTileBytes?: number;
  /** Most queries per search batch (default: as many as fit one binding). */
  queryBatch?: number;
  /** Most rows per chunk of a vector store (default: as many as fit one binding). */
  chunkRows?: number;
  /**
   * Selection invocations to aim for per tile (rows x segments). Default: 512 on the CPU and on a
   * CPU-emulated adapter, whose few cores are busy with a few hundred, 65536 on a real GPU.
   */
  selectInvocations?: number;
  /** Candidate pairs the self-join's pair buffer holds before a tile is re-run (default 2^20). */
  pairCapacity?: number;
  /**
   * Segments the IVF scan splits each (query, list) into, where lists are long enough (8 rows or
   * more a segment): default 8 on the GPU, whose SIMD lanes then scan one list together, 1 on the
   * CPU, which gains nothing from them.
   */
  scanSegments?: number;
  /**
   * How IVF lists are scored (src/plans/ivf-search.ts): `scan` (one query against one list per
   * invocation), `gemm` (each list against all the batch's queries that probe it), or `auto`
   * (default: GEMM once lists have, on average, six queries or more each). For k above HEAP_MAX_K
   * the GEMM runs whatever this says: the scan's heaps hold no more.
   */
  ivfStrategy?: 'auto' | 'scan' | 'gemm';
  /**
   * Whether k-means keeps bounds on the host (src/plans/kmeans-step.ts) and scores only the points
   * whose nearest centroid may have changed. The same centroids either way; the objective is then
   * the exact float64 sum rather than the GEMM's float32 one. Default on for the CPU and a
   * CPU-emulated adapter, where the score GEMM is the cost (README, "k-means with bounds"), off on
   * a real GPU, where a pass over the points on the host costs more than the GEMM it saves, and
   * for gpu.js, whose GL arithmetic is not held to float32's rounding.
   */
  kmeansBounds?: boolean;
  /**
   * Whether IVF-Flat lists keep a float16 copy of their rows that the scan strategy reads first
   * (src/stores/half-rows.ts): half the loads, candidates checked against a bound on the float16
   * rounding, and any query whose candidates the bound cannot vouch for searched again on the
   * float32 rows, so results do not change. Costs half as much memory again as the lists. Default
   * on for a CPU-emulated adapter, whose scan is bound by loads (README, "IVF scans on float16
   * rows"), off on a real GPU (not yet measured there), the CPU and gpu.js.
   */
  ivfHalfScan?: boolean;
  /**
   * Whether stores keep a host copy of their rows where the device's memory is not the host's
   * (src/stores/rows.ts), so that the exact re-score of each search's candidates and `save` read
   * the host instead of the device. Default on for a real GPU, off for a CPU-emulated adapter
   * (lavapipe, SwiftShader): its device memory is host memory already, so a copy would double what
   * an index takes (a 1 GB index searched on lavapipe peaked at 2.6 GB against 1.4 GB on the CPU
   * backend); there the re-score reads its candidates back, one round trip a search. An index's own
   * `hostCopy` option overrides it. Nothing to decide on the CPU, which reads its own memory.
   */
  hostCopy?: boolean;
  /**
   * Invocations that score one row together in the CAGRA walk (shaders/graph-search.wgsl `TEAM`):
   * a power of two from 1 to GRAPH_SEARCH_MAX_TEAM, or `auto`: by the walk's row width
   * (graphSearchTeam: about 64 bytes of the row a lane, as cuVS sizes its teams; not yet measured
   * on a real GPU). Default 1 on a CPU-emulated adapter (on lavapipe each doubling past 2 cost
   * the walk time: docs/graph-index.md, "The walk's profile"), `auto` on a real GPU. It changes
   * only the order in which the walk's float32 dot products are summed: where two rows are that
   * near, a walk may step differently (the re-score stays exact). Nothing to decide on the CPU,
   * whose twin scores in float64.
   */
  graphTeam?: number | 'auto';
}

/** Options every device takes (createBackend passes them on). */
export interface DeviceOptions extends DeviceTuning {
  /**
   * Most bytes bound at once (default: the device's own limit). Lower it, on either device, to drive
   * on small data the splits that large data needs; at least 256.
   */
  maxBindingBytes?: number;
}

// One argument record per kernel; `B` is the buffer type (DeviceBuffer for plans, GPUBuffer for the
// WGSL encoders). Each shader's header comment says what its parameters mean.

export interface NormsArgs<B = DeviceBuffer> {
  /** Rows of `dpad` floats. */
  x: B;
  out: B;
  n: number;
  dpad: number;
  row0: number;
  out0: number;
}

export interface GemmScoresArgs<B = DeviceBuffer> {
  metric: KernelMetric;
  xq: B;
  xb: B;
  xnorm: B;
  scores: B;
  /** Queries q0 .. q0 + rows - 1 against base rows col0 .. col0 + cols - 1. */
  q0: number;
  rows: number;
  col0: number;
  cols: number;
  dpad: number;
  /** Row stride of `scores`. */
  ldc: number;
}

export interface TopkArgs<B = DeviceBuffer> {
  scores: B;
  outS: B;
  outI: B;
  rows: number;
  cols: number;
  ldc: number;
  k: number;
  nseg: number;
  segLen: number;
  id0: number;
  /** The running lists whose k-th entries bound each row (see the shader), or null on the first tile. */
  bound: { s: B; i: B; row0: number } | null;
  /** Row r is the tile's column r (`scores[c * ldc + r]`, c < cols): `rows` columns of a tile of `cols` rows. */
  transposed?: boolean;
  /** Each score plus `buf[bias0 + the tile's row]` (f32; the tile's row is the list's row, or transposed, the candidate's), or none. */
  bias?: { buf: B; bias0: number } | null;
}

export interface TopkMergeArgs<B = DeviceBuffer> {
  partS: B;
  partI: B;
  /** Running lists in; ignored when `first` (there is none yet), but must still be bound. */
  runInS: B;
  runInI: B;
  runOutS: B;
  runOutI: B;
  rows: number;
  k: number;
  nseg: number;
  first: boolean;
  /** First row of the running lists. */
  row0: number;
  /** Partial lists per row in partS/partI (default nseg) and the first one to merge (default 0). */
  stride?: number;
  seg0?: number;
}

export interface SelectRadixArgs<B = DeviceBuffer> {
  /** The score tile: row r's `cols` scores at `scores[r * ldc ..]`; column c has id `id0 + c`, or `ids[id0 + c]`. */
  scores: B;
  /** Ids of rows in storage order (such as an IVF chunk's), or null: the ids are the positions `id0 + c`. */
  ids: B | null;
  /** Running lists in (row r at `(row0 + r) * k`); ignored when `first` (there is none yet), but must still be bound. */
  runInS: B;
  runInI: B;
  /** Running lists out, as runIn; the selected entries in no particular order, then padding. Must not alias runIn. */
  runOutS: B;
  runOutI: B;
  rows: number;
  cols: number;
  ldc: number;
  k: number;
  id0: number;
  first: boolean;
  row0: number;
}

export interface IvfScanArgs<B = DeviceBuffer> {
  metric: KernelMetric;
  /**
   * Which rows may be results (see MaskScoresArgs), or null: every row may. Row `v` of this chunk
   * is skipped unless bit `maskBit0 + v` is set.
   */
  mask: B | null;
  maskBit0: number;
  xq: B;
  /**
   * Words: `lists[2L], lists[2L + 1]`, list L's rows in this chunk, [start, end); from `probe0`
   * the lists each row probes (row r's p-th at `probe0 + r * nprobe + p`; PAD_ID: none). One
   * binding, so that the kernel binds 8 storage buffers (every WebGPU device allows 8).
   */
  lists: B;
  probe0: number;
  xb: B;
  /**
   * The rows as float16 (src/stores/half-rows.ts: `halfRowWords(dpad)` words a row, two halves a
   * word, low first), scored instead of xb; null: score xb.
   */
  xh: B | null;
  xnorm: B;
  ids: B;
  outS: B;
  outI: B;
  rows: number;
  k: number;
  nprobe: number;
  nseg: number;
  dpad: number;
  q0: number;
}

/**
 * A CAGRA-style graph search, one query at a time (shaders/graph-search.wgsl, whose header states the
 * algorithm step by step; CPU twin src/cpu/graph-search.ts): from the query's seeds, expand the best
 * not-yet-expanded entries of an internal list of `itopk` (score, id), `searchWidth` parents an
 * iteration, scoring their graph neighbours not yet visited, until no parent is left or after
 * `maxIterations`; then write the k best allowed entries of the list.
 * Scores as the other kernels: l2 `xnorm[v] - 2 q.x_v`, ip `-q.x_v`; (score, id) ascending.
 * Ids in `graph` and `seeds` are rows below `n`, or PAD_ID (none).
 */
export interface GraphSearchArgs<B = DeviceBuffer> {
  metric: KernelMetric;
  /** Queries: rows of dpad floats; rows [q0, q0 + rows) are searched. */
  xq: B;
  q0: number;
  rows: number;
  /**
   * Base rows (dpad floats each, n rows; with xbHi the rows before rowSplit) and their squared
   * norms (float32, all n rows). With
   * `half`, xb holds the rows as float16 instead (src/stores/half-rows.ts: `halfRowWords(dpad)` u32
   * a row, two halves a word, low half first, zero-padded), and xnorm the squared norms of the
   * half rows as they decode (the caller computes them: halfRowsWithNorms). The walk's distances
   * then only approximate the float32 ones: they steer the traversal, and the caller re-scores.
   */
  xb: B;
  xnorm: B;
  /** The rows in xb are halves (half the bytes and loads); false or absent: float32. */
  half?: boolean;
  /**
   * With `half`, the rows from `rowSplit` on where they are more than one binding holds: row v at
   * (v - rowSplit) * halfRowWords(dpad) here, xb holding the rows before. Null or absent: all in xb.
   */
  xbHi?: B | null;
  rowSplit?: number;
  /** Neighbour ids u32[n * degree]: row A holds A's neighbours (PAD_ID: none). */
  graph: B;
  degree: number;
  n: number;
  /** Entry-point ids u32[rows * nseeds]: query r's at r * nseeds (PAD_ID entries are skipped). */
  seeds: B;
  nseeds: number;
  /**
   * Which rows may be results, or null: every row may. Row v is allowed when bit `maskBit0 + v` is
   * set (as ivf-scan's); a disallowed row is still walked through, never written out.
   */
  mask: B | null;
  maskBit0: number;
  dpad: number;
  /** Internal list length (k <= itopk <= GRAPH_SEARCH_MAX_ITOPK). */
  itopk: number;
  /** Parents expanded per iteration. */
  searchWidth: number;
  /**
   * Invocations that score one row together on a GPU (a power of two, at most
   * GRAPH_SEARCH_MAX_TEAM; default 1): see DeviceTuning.graphTeam. The twin, which scores in
   * float64, ignores it.
   */
  team?: number;
  /** Most iterations (expansions) a query runs; 0: the seeds only. */
  maxIterations: number;
  /** The visited hash holds 2^hashBits ids (see checkGraphSearchArgs for what it must hold). */
  hashBits: number;
  /** Results per query. */
  k: number;
  /** f32 / u32 [rows * k]: query r's (score, id) best first at r * k, padded with (+Infinity, PAD_ID). */
  outS: B;
  outI: B;
  /** u32[2 rows], or null: each query's iterations and ids scored (its distances), (2 r, 2 r + 1). */
  outWork?: B | null;
}

/** graph-search's caps (shaders/graph-search.wgsl sizes its workgroup memory by them). */
export const GRAPH_SEARCH_MAX_ITOPK = 256;
/** Most ids scored in one batch: the seeds, or searchWidth * degree neighbours. */
export const GRAPH_SEARCH_MAX_CANDIDATES = 512;
export const GRAPH_SEARCH_MAX_WIDTH = 32;
export const GRAPH_SEARCH_MAX_HASH_BITS = 10;
export const GRAPH_SEARCH_MAX_DPAD = 1024;
/** Most invocations scoring one row together: the kernel's workgroup (shaders/graph-search.wgsl WG). */
export const GRAPH_SEARCH_MAX_TEAM = 64;

/** Whether t is a power of two in [1, GRAPH_SEARCH_MAX_TEAM]. */
function isTeam(t: unknown): t is number {
  return typeof t === 'number' && Number.isInteger(t) && t >= 1 && t <= GRAPH_SEARCH_MAX_TEAM && (t & (t - 1)) === 0;
}

/**
 * The walk's team (GraphSearchArgs.team) for a device's `tuning.graphTeam` and the walk's rows
 * (`dpad` floats, or with `half` as halves): `auto` gives each lane of the team about 64 bytes of
 * the row, four vec4 loads (the smallest power of two at least rowBytes / 64), from 1 to 32; SIFT's
 * 128 floats: 8, Fashion-MNIST's 784 as halves: 32.
 */
export function graphSearchTeam(graphTeam: number | 'auto', dpad: number, half: boolean): number {
  if (graphTeam !== 'auto') return graphTeam;
  const vec4s = half ? Math.ceil(dpad / 8) : dpad / 4;
  let t = 1;
  while (t < 32 && 4 * t < vec4s) t *= 2;
  return t;
}

/**
 * Throws InvalidArgumentError unless a graph-search call is within the caps and its visited hash
 * can never fill (both devices check the same). The hash of S = 2^hashBits slots takes the
 * nseeds seeds into an empty table, then each iteration up to searchWidth * degree new ids into a
 * table at most half full (else it is reset to the list's <= itopk ids first), so it needs
 * nseeds <= S, searchWidth * degree <= S / 2 and itopk + searchWidth * degree <= S.
 */
export function checkGraphSearchArgs(a: {
  itopk: number; k: number; searchWidth: number; degree: number; nseeds: number; hashBits: number;
  maxIterations: number; dpad: number; n: number; rows: number; q0: number; maskBit0: number;
  half?: boolean; xbHi?: unknown; rowSplit?: number; team?: number;
}): void {
  const bad = (what: string) => {
    throw new InvalidArgumentError(`graph-search: ${what}`);
  };
  const int = (v: number) => Number.isInteger(v);
  const range = (name: string, v: number, lo: number, hi: number, cap = '') => {
    if (!(int(v) && v >= lo && v <= hi)) bad(`${name} must be an integer in [${lo}, ${hi}]${cap}; got ${String(v)}`);
  };
  range('itopk', a.itopk, 1, GRAPH_SEARCH_MAX_ITOPK, ' (GRAPH_SEARCH_MAX_ITOPK)');
  range('k', a.k, 1, a.itopk, ' (k <= itopk)');
  range('searchWidth', a.searchWidth, 1, GRAPH_SEARCH_MAX_WIDTH, ' (GRAPH_SEARCH_MAX_WIDTH)');
  range('degree', a.degree, 1, GRAPH_SEARCH_MAX_CANDIDATES, ' (GRAPH_SEARCH_MAX_CANDIDATES)');
  if (a.searchWidth * a.degree > GRAPH_SEARCH_MAX_CANDIDATES) {
    bad(`searchWidth * degree must be at most ${GRAPH_SEARCH_MAX_CANDIDATES} (GRAPH_SEARCH_MAX_CANDIDATES); got ${a.searchWidth} * ${a.degree} = ${a.searchWidth * a.degree}`);
  }
  range('nseeds', a.nseeds, 0, GRAPH_SEARCH_MAX_CANDIDATES, ' (GRAPH_SEARCH_MAX_CANDIDATES)');
  range('hashBits', a.hashBits, 1, GRAPH_SEARCH_MAX_HASH_BITS, ' (GRAPH_SEARCH_MAX_HASH_BITS)');
  if (a.team !== undefined && !isTeam(a.team)) bad(`team must be a power of two in [1, ${GRAPH_SEARCH_MAX_TEAM}] (GRAPH_SEARCH_MAX_TEAM); got ${String(a.team)}`);
  const slots = 2 ** a.hashBits;
  const batch = a.searchWidth * a.degree;
  if (a.nseeds > slots || 2 * batch > slots || a.itopk + batch > slots) {
    bad(`hashBits ${a.hashBits} (${slots} slots) is too small: it needs nseeds <= ${slots}, 2 * searchWidth * degree <= ${slots} and itopk + searchWidth * degree <= ${slots}; got nseeds ${a.nseeds}, searchWidth * degree ${batch}, itopk ${a.itopk}`);
  }
  range('maxIterations', a.maxIterations, 0, 0xffffffff);
  if (!(int(a.dpad) && a.dpad >= 4 && a.dpad % 4 === 0 && a.dpad <= GRAPH_SEARCH_MAX_DPAD)) {
    bad(`dpad must be a multiple of 4 in [4, ${GRAPH_SEARCH_MAX_DPAD}] (GRAPH_SEARCH_MAX_DPAD); got ${String(a.dpad)}`);
  }
  range('n', a.n, 0, 0xfffffffe); // ids are u32 below PAD_ID
  range('rows', a.rows, 0, 0xffffffff);
  range('q0', a.q0, 0, 0xffffffff);
  range('maskBit0', a.maskBit0, 0, 0xffffffff);
  if (a.xbHi != null) {
    if (!a.half) bad('xbHi holds half rows: it needs half');
    range('rowSplit', a.rowSplit ?? NaN, 1, Math.max(1, a.n), ' (the first row in xbHi, at most n)');
  }
}

export interface PairsThresholdArgs<B = DeviceBuffer> {
  metric: KernelMetric;
  /**
   * Which pairs pass on indices: false (the self-join) only i < j; true (range search) every
   * (i, j), i = q0 + r a query row, j = id0 + c a base row, the two numbered independently.
   */
  allPairs: boolean;
  scores: B;
  xnormQ: B;
  xnormB: B;
  /** One u32: pairs found so far (counts past `capacity` too). */
  count: B;
  /** Room for `capacity` pairs (i, j). */
  pairs: B;
  rows: number;
  cols: number;
  ldc: number;
  q0: number;
  id0: number;
  limit: number;
  rel: number;
  capacity: number;
  /** First element of xnormQ for the tile's row 0. */
  qn0: number;
  /** First element of xnormB for the tile's column 0. */
  cn0: number;
}

/** The scalar quantisers' code layouts sq-scores reads (see src/codecs/scalar-quantizer.ts). */
export type SqCodeKind = 'sq8' | 'sq4' | 'fp16';

export interface SqScoresArgs<B = DeviceBuffer> {
  metric: KernelMetric;
  kind: SqCodeKind;
  /** Transformed queries: rows of dpad floats (q'_j, zero beyond d). */
  xq: B;
  /** One float per query row: the bias added to each dot product (0 for fp16). */
  qbias: B;
  /** Base codes: rows of `codeWords` u32. */
  codes: B;
  /** Squared norms of the decoded base vectors. */
  xnorm: B;
  scores: B;
  q0: number;
  rows: number;
  col0: number;
  cols: number;
  dpad: number;
  codeWords: number;
  ldc: number;
}

/**
 * Fewest u32 words a row of `kind` codes takes for `dpad` dimensions (sq-scores reads that many;
 * a store may give rows more): 4 dimensions a word for sq8, 8 for sq4, 2 for fp16.
 */
export function sqCodeWords(kind: SqCodeKind, dpad: number): number {
  return kind === 'sq8' ? Math.ceil(dpad / 4) : kind === 'sq4' ? Math.ceil(dpad / 8) : Math.ceil(dpad / 2);
}

/** Throws unless an sq-scores call's rows hold the words it reads (both devices check the same). */
export function checkSqScoresArgs(a: { kind: SqCodeKind; dpad: number; codeWords: number }): void {
  const min = sqCodeWords(a.kind, a.dpad);
  if (!(a.dpad % 4 === 0 && Number.isInteger(a.codeWords) && a.codeWords >= min)) {
    throw new InvalidArgumentError(`sq-scores (${a.kind}): dpad must be a multiple of 4 and codeWords at least ${min} for dpad ${a.dpad}; got dpad ${a.dpad}, codeWords ${a.codeWords}`);
  }
}

/**
 * Product-quantiser lookup tables (ADC): for each of `rows` query rows (rows q0 .. of `xq`, dpad
 * floats each) and each sub-quantizer m < M and centroid j < ksub, one entry
 *   luts[(r * M + m) * ksub + j] = l2: sum_{t < dsub} (xq[(q0 + r) * dpad + m * dsub + t] - cb[(m * ksub + j) * dsub + t])^2
 *                                  ip: -sum_{t < dsub} xq[..] * cb[..]
 * (the tile's row r at luts row r, whatever q0 is), so that a code's score is a sum of M entries.
 */
export interface PqTablesArgs<B = DeviceBuffer> {
  metric: KernelMetric;
  xq: B;
  /** The sub-quantizers' centroids: M * ksub rows of dsub floats. */
  codebook: B;
  luts: B;
  q0: number;
  rows: number;
  M: number;
  ksub: number;
  dsub: number;
  dpad: number;
}

/**
 * Scores of product-quantised codes against lookup tables (pq-tables): for r < rows, c < cols,
 *   scores[r * ldc + c] = qbias[q0 + r] + sum_{m < M} luts[(r * M + m) * ksub + code(col0 + c, m)]
 * summed in float32 in that order (qbias first, then m ascending), where code(i, m) is bits
 * [m * nbits, (m + 1) * nbits) of row i's codes (`codeWords` u32 words from codes[i * codeWords],
 * little-endian: bit b is bit b & 31 of word b >> 5), as Faiss packs PQ codes.
 */
export interface PqScoresArgs<B = DeviceBuffer> {
  luts: B;
  qbias: B;
  codes: B;
  scores: B;
  q0: number;
  rows: number;
  col0: number;
  cols: number;
  ldc: number;
  M: number;
  nbits: number;
  codeWords: number;
}

/** Sub-quantizer widths the pq kernels take (Faiss's PQ<M>x<nbits> with nbits 1 .. 8 would also be possible; the issue asks 4 .. 8). */
export const PQ_MIN_NBITS = 4;
export const PQ_MAX_NBITS = 8;

/** Throws unless a pq-scores call's rows hold the bits it reads (both devices check the same). */
export function checkPqScoresArgs(a: { M: number; nbits: number; codeWords: number }): void {
  const min = Math.ceil((a.M * a.nbits) / 32);
  if (!(Number.isInteger(a.nbits) && a.nbits >= PQ_MIN_NBITS && a.nbits <= PQ_MAX_NBITS && Number.isInteger(a.M) && a.M >= 1 && a.codeWords >= min)) {
    throw new InvalidArgumentError(`pq-scores: nbits must be in [${PQ_MIN_NBITS}, ${PQ_MAX_NBITS}] and codeWords at least ceil(M * nbits / 32); got M ${a.M}, nbits ${a.nbits}, codeWords ${a.codeWords}`);
  }
}

/**
 * Hamming distances between binary codes (Faiss's IndexLSH): for r < rows, c < cols,
 *   scores[r * ldc + c] = sum_{w < codeWords} countOneBits(xq[(q0 + r) * codeWords + w] ^ codes[(col0 + c) * codeWords + w])
 * as a float32 (an exact integer). Rows of both are `codeWords` u32 words; bits past the code's
 * length are 0 in both, so they add nothing.
 */
export interface HammingScoresArgs<B = DeviceBuffer> {
  /** Query codes: rows of codeWords u32. */
  xq: B;
  /** Base codes: rows of codeWords u32. */
  codes: B;
  scores: B;
  q0: number;
  rows: number;
  col0: number;
  cols: number;
  ldc: number;
  codeWords: number;
}

/** Throws unless a hamming-scores call's rows are whole words (both devices check the same). */
export function checkHammingScoresArgs(a: { codeWords: number }): void {
  if (!(Number.isInteger(a.codeWords) && a.codeWords >= 1)) {
    throw new InvalidArgumentError(`hamming-scores: codeWords must be an integer >= 1; got ${String(a.codeWords)}`);
  }
}

/**
 * Masks score-tile columns: for c < cols, unless bit `bit0 + c` of `mask` is set (u32 words, bit b
 * at `mask[b >> 5] >> (b & 31) & 1`), every score `scores[r * ldc + c]`, r < rows, becomes +Infinity.
 * A minimised score of a stored vector is always finite (types.ts checkVectors), so +Infinity
 * marks a column that is not a result: selection may keep it only as padding, and the host drops
 * it (results.ts). Bits are storage positions (chunk * chunkRows + row): tombstones of removed rows
 * and search filters are both such masks.
 */
export interface MaskScoresArgs<B = DeviceBuffer> {
  scores: B;
  mask: B;
  rows: number;
  cols: number;
  ldc: number;
  bit0: number;
}

/**
 * Rows of one store chunk gathered into a compact buffer: row `rows[rows0 + i]` of `x` (`words`
 * u32 words a row) to row `out0 + i` of `out`, for i < n, bit for bit.
 */
export interface GatherRowsArgs<B = DeviceBuffer> {
  x: B;
  rows: B;
  out: B;
  n: number;
  words: number;
  rows0: number;
  out0: number;
}

export interface KmeansPartialArgs<B = DeviceBuffer> {
  /** This chunk's points: global points p0 .. p0 + n - 1, rows of dpad. */
  x: B;
  xnorm: B;
  score: B;
  label: B;
  /** Accumulated into (zero them before the first chunk of an iteration). */
  sums: B;
  counts: B;
  obj: B;
  n: number;
  p0: number;
  dpad: number;
  nc: number;
  /** Points per block (blocks are global: block b is points [b * block, (b + 1) * block)). */
  block: number;
}

export interface KmeansReduceArgs<B = DeviceBuffer> {
  sums: B;
  counts: B;
  centroids: B;
  outCounts: B;
  nc: number;
  dpad: number;
  nblocks: number;
}

/**
 * CAGRA's rank-based pruning of a tile of nodes (shaders/cagra-prune.wgsl: the rules, and how a
 * plan tiles it). Node node0 + r (r < nodes) keeps the `degree` edges of its kNN row with the
 * fewest detours. The kNN graph: `kin` ids a row, best first, PAD_ID after the last neighbour.
 */
export interface CagraPruneArgs<B = DeviceBuffer> {
  /** The tile's own rows: node node0 + r's at words (a0 + r) * kin of `a`. */
  a: B;
  a0: number;
  /** The rows of nodes d0 .. d0 + drows - 1 (node d0 + t's at words t * kin): the detour nodes' lists this call reads. */
  d: B;
  d0: number;
  drows: number;
  /**
   * u32[nodes * kin], row r at r * kin: the detours of node node0 + r's entries, zeroed by the
   * call with `first`, added to by every call; after the call with `last`, PAD_ID where an entry
   * is not an edge (padding, the node itself, a repeated id).
   */
  detours: B;
  /** With `last`: row out0 + r (`degree` ids, PAD_ID after the last edge) = node node0 + r's kept edges. */
  out: B;
  out0: number;
  n: number;
  kin: number;
  degree: number;
  node0: number;
  nodes: number;
  /** The tile's first call (over its first chunk of detour rows) and its last (which selects). */
  first: boolean;
  last: boolean;
}

/**
 * The reverse edges of a pruned CAGRA graph (shaders/cagra-reverse.wgsl), sources node0 ..
 * node0 + nodes - 1. Without `scatter`: counts[t] += 1 for every edge s -> t. With `scatter` (after
 * cagra-offsets turned the finished counts into offsets): each edge s -> t, at rank k of s's row,
 * is stored as the key k * n + s at a slot of [offsets[t], offsets[t + 1]) of `edges`, taken by
 * counting counts[t] back down (all zero once every source is scattered). Which slot of its range
 * an edge takes is not deterministic; cagra-merge reads each range as a set, in key order.
 */
export interface CagraReverseArgs<B = DeviceBuffer> {
  /** The pruned graph, all of it: node s's `degree` ids at words s * degree (PAD_ID: none). */
  graph: B;
  /** u32[n]: zeroed (Device.clear) before the first tile is counted. */
  counts: B;
  /** u32[n + 1] (read by the scatter only). */
  offsets: B;
  /** u32[offsets[n]] (written by the scatter only; n * degree words always suffice). */
  edges: B;
  n: number;
  degree: number;
  node0: number;
  nodes: number;
  scatter: boolean;
}

/** Exclusive prefix sums (shaders/cagra-offsets.wgsl): offsets[i] = counts[0] + .. + counts[i - 1], i <= n. */
export interface CagraOffsetsArgs<B = DeviceBuffer> {
  /** u32[n]. */
  counts: B;
  /** u32[n + 1]. */
  offsets: B;
  n: number;
}

/**
 * CAGRA's final rows (shaders/cagra-merge.wgsl: the rule): node node0 + r's pruned row merged with
 * its reverse edges, into row out0 + r of `out` (`degree` ids, PAD_ID after the last).
 */
export interface CagraMergeArgs<B = DeviceBuffer> {
  /** The pruned graph (read at the tile's rows). */
  graph: B;
  /** cagra-offsets of the in-degrees, and the scattered reverse edges (cagra-reverse). */
  offsets: B;
  edges: B;
  out: B;
  out0: number;
  n: number;
  degree: number;
  node0: number;
  nodes: number;
}

/**
 * Every kernel by name, with its argument record: the one list of kernels. Each device's registry
 * (src/cpu/twins.ts, src/gpu/kernels/registry.ts) is typed as a map over these names, so a kernel
 * added here does not compile until every device runs it.
 */
export interface KernelArgs<B = DeviceBuffer> {
  'norms': NormsArgs<B>;
  'gemm-scores': GemmScoresArgs<B>;
  'topk': TopkArgs<B>;
  'topk-merge': TopkMergeArgs<B>;
  'select-radix': SelectRadixArgs<B>;
  'ivf-scan': IvfScanArgs<B>;
  'graph-search': GraphSearchArgs<B>;
  'pairs-threshold': PairsThresholdArgs<B>;
  'mask-scores': MaskScoresArgs<B>;
  'gather-rows': GatherRowsArgs<B>;
  'sq-scores': SqScoresArgs<B>;
  'pq-tables': PqTablesArgs<B>;
  'pq-scores': PqScoresArgs<B>;
  'hamming-scores': HammingScoresArgs<B>;
  'kmeans-partial': KmeansPartialArgs<B>;
  'kmeans-reduce': KmeansReduceArgs<B>;
  'cagra-prune': CagraPruneArgs<B>;
  'cagra-reverse': CagraReverseArgs<B>;
  'cagra-offsets': CagraOffsetsArgs<B>;
  'cagra-merge': CagraMergeArgs<B>;
}

export type KernelName = keyof KernelArgs;

/** One kernel call: the kernel's name and its arguments (a union over KernelArgs). */
export type KernelCall<B = DeviceBuffer> = { [K in KernelName]: { kernel: K } & KernelArgs<B>[K] }[KernelName];

export interface Device {
  readonly kind: DeviceKind;
  /** One line: the device, and for WebGPU the adapter (vendor, architecture, device). */
  readonly description: string;
  readonly limits: DeviceLimits;
  readonly tuning: Required<DeviceTuning>;
  /**
   * A buffer of at least `bytes` bytes (from the pool where the device has one), at most
   * `limits.maxBindingBytes`. Contents are undefined. Throws WebGpuUnavailableError when the device
   * is out of memory.
   */
  buffer(label: string, bytes: number): DeviceBuffer;
  /**
   * The buffer's memory as floats, where the device's memory is the host's (the CPU device): stores
   * read rows there in place instead of keeping a host copy. Null where it is not (WebGPU).
   */
  hostView(buffer: DeviceBuffer): Float32Array | null;
  /** Returns a buffer to the device; work already called that uses it still sees it. */
  release(buffer: DeviceBuffer): void;
  /** Writes `data` at `byteOffset`, after every call made before it. */
  upload(buffer: DeviceBuffer, byteOffset: number, data: ArrayBufferView): void;
  /** Zero-fills the whole buffer. */
  clear(buffer: DeviceBuffer): void;
  copy(src: DeviceBuffer, srcOffset: number, dst: DeviceBuffer, dstOffset: number, bytes: number): void;
  /** Runs one kernel after every call made before it. */
  dispatch(call: KernelCall): void;
  /**
   * Runs everything called so far and reads the given byte ranges back, in one submit and one
   * readback. With `timings`, adds compute and readback milliseconds (and per-kernel GPU times
   * where the device measures them).
   */
  read(ranges: { buffer: DeviceBuffer; offset: number; bytes: number }[], timings?: SearchTimings): Promise<ArrayBuffer[]>;
  /** Runs everything called so far and waits for it (errors surface here). */
  flush(): Promise<void>;
  /**
   * Drops the calls made since the last read or flush, for a plan that fails while making them.
   * Plans make their calls without awaiting anything in between, and read or flush before they
   * await, so the calls dropped are the failing plan's own.
   */
  discard(): void;
  /** Frees every buffer and the device itself; for WebGPU this is what lets the process exit. */
  dispose(): void;
}

/** Words of one half row: ceil(dpad / 8) vec4s of two halves a word (shaders/ivf-scan.wgsl, HALF). */
export function halfRowWords(dpad: number): number {
  return 4 * Math.ceil(dpad / 8);
}

/** Rounds d up to the vec4 row length every device stores. */
export function paddedDim(d: number): number {
  return Math.ceil(d / 4) * 4;
}

/** Copies `n` rows of `d` floats into rows of `dpad` floats (zero padding); no copy when d == dpad. */
export function padRows(x: Float32Array, n: number, d: number, dpad: number): Float32Array {
  if (d === dpad) return x.length === n * d ? x : x.subarray(0, n * d);
  const out = new Float32Array(n * dpad);
  for (let i = 0; i < n; i++) out.set(x.subarray(i * d, (i + 1) * d), i * dpad);
  return out;
}

/** The inverse of padRows: `n` rows of `dpad` floats back to rows of `d`; no copy when d == dpad. */
export function unpadRows(x: Float32Array, n: number, d: number, dpad: number): Float32Array {
  if (d === dpad) return x.length === n * d ? x : x.subarray(0, n * d);
  const out = new Float32Array(n * d);
  for (let i = 0; i < n; i++) out.set(x.subarray(i * dpad, i * dpad + d), i * d);
  return out;
}

/** Checks the tuning knobs a caller gave (either device): positive integers, a known strategy. */
export function checkTuning(t: DeviceTuning, alsoKnown: string[] = []): void {
  for (const key of ['tileCols', 'scoreTileBytes', 'queryBatch', 'chunkRows', 'selectInvocations', 'pairCapacity', 'scanSegments'] as const) {
    const v = t[key];
    if (v !== undefined && !(typeof v === 'number' && Number.isInteger(v) && v >= 1)) {
      throw new InvalidArgumentError(`tuning.${key} must be an integer >= 1; got ${String(v)}`);
    }
  }
  if (t.ivfStrategy !== undefined && !['auto', 'scan', 'gemm'].includes(t.ivfStrategy)) {
    throw new InvalidArgumentError(`tuning.ivfStrategy must be auto, scan or gemm; got ${String(t.ivfStrategy)}`);
  }
  for (const key of ['kmeansBounds', 'ivfHalfScan', 'hostCopy'] as const) {
    if (t[key] !== undefined && typeof t[key] !== 'boolean') throw new InvalidArgumentError(`tuning.${key} must be true or false; got ${String(t[key])}`);
  }
  if (t.graphTeam !== undefined && t.graphTeam !== 'auto' && !isTeam(t.graphTeam)) {
    throw new InvalidArgumentError(`tuning.graphTeam must be auto or a power of two in [1, ${GRAPH_SEARCH_MAX_TEAM}]; got ${String(t.graphTeam)}`);
  }
  const known = ['tileCols', 'scoreTileBytes', 'queryBatch', 'chunkRows', 'selectInvocations', 'pairCapacity', 'scanSegments', 'ivfStrategy', 'kmeansBounds', 'ivfHalfScan', 'hostCopy', 'graphTeam'];
  const unknown = Object.keys(t).filter((key) => !known.includes(key) && !alsoKnown.includes(key) && key !== 'maxBindingBytes');
  if (unknown.length > 0) throw new InvalidArgumentError(`unknown tuning option ${unknown.join(', ')}; expected ${known.join(', ')}`);
}

/** Checks a caller's maxBindingBytes (either device). */
export function checkMaxBindingBytes(m: unknown): void {
  if (m !== undefined && !(typeof m === 'number' && Number.isInteger(m) && m >= 256)) {
    throw new InvalidArgumentError(`maxBindingBytes must be an integer >= 256; got ${String(m)}`);
  }
}
