/**
 * Near-duplicate detection: every pair i < j with cosine >= threshold (or squared L2 <= threshold)
 * in a corpus, grouped into clusters with a keeper each.
 *
 * Search with a safety margin, then confirm: the backend's self-join (tiled, so the corpus may
 * exceed one GPU buffer) returns every pair whose float32 score passes the threshold plus a margin
 * larger than the expansion's rounding error; each candidate is then decided exactly on the
 * original vectors (src/common/threshold.ts: float64 with a bound on its rounding, integers where a pair
 * is within that bound of the threshold, the threshold taken as the decimal it prints as). Rounding
 * can neither add a pair nor lose one: a pair exactly at the threshold is kept.
 *
 * Bounded and typed throughout: the self-join streams its candidates one row tile at a time, in
 * (i, j) order; each block is confirmed as it arrives. With `onPairs` the confirmed pairs go to
 * the caller block by block and memory is one tile's candidates plus O(n) for the clusters;
 * without it they are kept in typed chunks (16 bytes each) for the result, at most maxPairs. Too
 * many candidates (maxCandidates) or pairs (maxPairs) is an InvalidArgumentError, not a crash.
 */
import type { Backend } from '../backend/backend.js';
import { DEFAULT_MAX_CANDIDATES } from '../common/pairs.js';
import { ThresholdTest, dedupMargin, squaredNorm } from '../common/threshold.js';
import { checkDim, checkVectors, normalizeRows } from '../types.js';
import { type VectorSource, checkSource, checkedBlocks } from '../common/vector-source.js';
import { InvalidArgumentError } from '../errors.js';

export { DEFAULT_MAX_CANDIDATES };
/**
 * Default bound on the confirmed pairs: 16 bytes each (i, j, score), so 1.6 GB of result, briefly
 * twice that while the chunks are joined into the result's arrays.
 */
export const DEFAULT_MAX_PAIRS = 100_000_000;

export type DedupMetric = 'cosine' | 'l2';

export interface DedupProgress {
  rowsDone: number;
  n: number;
  /** Candidate pairs so far (before the exact check). */
  candidates: number;
}

export interface DedupOptions {
  metric: DedupMetric;
  /** cosine: pairs with cosine >= threshold; l2: pairs with squared distance <= threshold. */
  threshold: number;
  onProgress?: (p: DedupProgress) => void;
  /**
   * Most candidate pairs (float32 score within the margin) the self-join may let through; more is an
   * InvalidArgumentError, raised as soon as a row tile crosses it. Candidates are confirmed block by
   * block and not kept, so this bounds time rather than memory (each costs an O(d) float64 check).
   * Default DEFAULT_MAX_CANDIDATES (50,000,000); Infinity for no bound.
   */
  maxCandidates?: number;
  /**
   * Most confirmed pairs kept in the result; more is an InvalidArgumentError. They are kept (16
   * bytes each), so this bounds memory. Default DEFAULT_MAX_PAIRS (100,000,000, 1.6 GB); Infinity
   * for no bound. Does not apply with `onPairs`, where nothing is kept.
   */
  maxPairs?: number;
  /**
   * Receives the confirmed pairs block by block as they are found, in (i, j) order across blocks:
   * `i[p] < j[p]` and their exact scores. The arrays are valid during the call only. With it, the
   * result's `i`, `j` and `score` are empty (memory stays bounded by one block plus O(n) for the
   * clusters); `pairs` counts them.
   */
  onPairs?: (i: Uint32Array, j: Uint32Array, score: Float64Array) => void;
}

export interface DedupResult {
  /** How many pairs passed the exact check. */
  pairs: number;
  /**
   * Pairs (i[p], j[p]) with i < j, sorted by i then j, and their exact scores (cosine or squared L2);
   * empty when `onPairs` received them instead.
   */
  i: Uint32Array;
  j: Uint32Array;
  score: Float64Array;
  /** Connected groups of duplicates, each sorted ascending; the first member is the keeper. */
  clusters: number[][];
  /** Every member but the keeper of each cluster, ascending. */
  drop: Uint32Array;
  /** Candidates the margin let through, before the exact check. */
  candidates: number;
}

/**
 * Every near-duplicate pair of `x`: an array (`n * d`) or a source read block by block (a file of
 * any size), whose rows are then held once on the host, in blocks, for the exact check (and once
 * on the device for the join).
 */
export async function dedup(backend: Backend, x: Float32Array | VectorSource, d: number, options: DedupOptions): Promise<DedupResult> {
  const { n, metric, threshold, maxCandidates, kept, exact } = startDedup(x, d, options);

  const store = backend.createBaseStore(d, { hostCopy: false });
  try {
    const blocks = x instanceof Float32Array ? [{ data: x, rows: n, start: 0 }] : checkedBlocks(x, 'vectors', metric !== 'cosine', (b) => b);
    await store.reserve(n);
    for await (const b of blocks) {
      exact.addRows(b.data, b.rows, b.start);
      await store.add(metric === 'cosine' ? normalizeRows(b.data, d) : b.data, b.rows);
    }
    await backend.selfJoinCandidates(store, ...joinArgs(metric, threshold, d), {
      onPairs: (block, rowsDone) => exact.confirm(block, rowsDone),
      maxCandidates,
    });
  } finally {
    store.dispose();
  }

  return finishDedup(kept, exact);
}

/**
 * What every dedup does first: the input and options checked, and the exact check set up with
 * its sink (the caller's onPairs, or `kept` for the result).
 */
export function startDedup(x: Float32Array | VectorSource, d: number, options: DedupOptions) {
  checkDim(d);
  let n: number;
  if (x instanceof Float32Array) n = checkVectors(x, d, 'vectors', true, options.metric !== 'cosine');
  else {
    checkSource(x, d, 'vectors');
    n = x.rows;
  }
  const { metric, threshold } = options;
  if (metric !== 'cosine' && metric !== 'l2') throw new InvalidArgumentError(`metric must be cosine or l2; got ${String(metric)}`);
  if (typeof threshold !== 'number' || !Number.isFinite(threshold)) {
    throw new InvalidArgumentError(`threshold must be a finite number; got ${String(threshold)}`);
  }
  if (metric === 'cosine' && (threshold < -1 || threshold > 1)) {
    throw new InvalidArgumentError(`a cosine threshold must be in [-1, 1]; got ${threshold}`);
  }
  if (metric === 'l2' && threshold < 0) throw new InvalidArgumentError(`a squared-L2 threshold must be >= 0; got ${threshold}`);

  const maxCandidates = checkBound(options.maxCandidates, DEFAULT_MAX_CANDIDATES, 'maxCandidates');
  const maxPairs = checkBound(options.maxPairs, DEFAULT_MAX_PAIRS, 'maxPairs');

  const kept = new PairChunks(maxPairs, n);
  // Where the confirmed pairs of each block go: the caller, or the result.
  const sink = options.onPairs ?? ((i: Uint32Array, j: Uint32Array, score: Float64Array) => kept.append(i, j, score));
  const exact = new PairConfirmation(n, d, metric, threshold, sink, options.onProgress);
  return { n, metric, threshold, maxCandidates, kept, exact };
}

/** The result of a dedup whose candidates `exact` has confirmed. */
export function finishDedup(kept: PairChunks, exact: PairConfirmation): DedupResult {
  const { i, j, score } = kept.finish();
  const { clusters, drop } = exact.groups.result();
  return { pairs: exact.pairs, i, j, score, clusters, drop, candidates: exact.candidates };
}

/** The self-join's kernel metric, limit and margin for a dedup threshold. */
export function joinArgs(metric: DedupMetric, threshold: number, d: number): ['ip' | 'l2', number, number] {
  return [metric === 'cosine' ? 'ip' : 'l2', metric === 'cosine' ? -threshold : threshold, dedupMargin(d)];
}

/**
 * The candidate pairs (a, b), a < b, between rows [i0, i0 + ni) (`xi`) and rows [j0, j0 + nj)
 * (`xj`) of a corpus, sorted by (a, b), in corpus row numbers: one block pair of a distributed
 * self-join (`xj` null: the block with itself). The same join, margin and preparation as dedup, so
 * the candidates are a superset of the exact pairs that PairConfirmation keeps. Two blocks go into
 * one store, joined across the split between them only (no pair within a block is scored).
 */
export async function blockPairCandidates(
  backend: Backend,
  d: number,
  metric: DedupMetric,
  threshold: number,
  xi: Float32Array,
  i0: number,
  xj: Float32Array | null,
  j0: number,
  maxCandidates = Infinity,
): Promise<Uint32Array> {
  const ni = xi.length / d;
  const nj = xj ? xj.length / d : 0;
  const store = backend.createBaseStore(d, { hostCopy: false });
  const out: Uint32Array[] = [];
  let total = 0;
  try {
    await store.reserve(ni + nj);
    for (const x of xj ? [xi, xj] : [xi]) await store.add(metric === 'cosine' ? normalizeRows(x, d) : x, x.length / d);
    await backend.selfJoinCandidates(store, ...joinArgs(metric, threshold, d), {
      onPairs: (block) => {
        // Store rows to corpus rows: [0, ni) is block i, [ni, ni + nj) block j.
        const kept = block.slice();
        for (let p = 0; p < kept.length; p += 2) {
          kept[p] += i0;
          kept[p + 1] += xj ? j0 - ni : i0;
        }
        out.push(kept);
        total += kept.length;
      },
      maxCandidates,
      split: xj ? ni : 0,
    });
  } finally {
    store.dispose();
  }
  const pairs = new Uint32Array(total);
  let o = 0;
  for (const b of out) {
    pairs.set(b, o);
    o += b.length;
  }
  // Row tiles come in order, and within one tile by (a, b): sorted, as (a, b) of one tile < the next.
  return pairs;
}

/**
 * The exact check of candidate pairs and their union-find, shared by dedup and the distributed
 * dedup's reduce: rows are added (in blocks, any order of blocks but each row once), then
 * candidate blocks confirmed in (i, j) order; confirmed pairs go to `sink`.
 */
export class PairConfirmation {
  /** The original rows on the host, for the exact check (the store keeps none). */
  private readonly rows: RowBlocks;
  /** Float64 sums of squares of the original vectors, for the exact cosine. */
  private readonly squares: Float64Array;
  /** The exact cut (src/common/threshold.ts). */
  private readonly test: ThresholdTest;
  readonly groups: PairGroups;
  candidates = 0;
  pairs = 0;

  constructor(
    readonly n: number,
    private readonly d: number,
    private readonly metric: DedupMetric,
    threshold: number,
    private readonly sink: (i: Uint32Array, j: Uint32Array, score: Float64Array) => void,
    private readonly onProgress?: (p: DedupProgress) => void,
  ) {
    this.rows = new RowBlocks(d);
    this.squares = new Float64Array(metric === 'cosine' ? n : 0);
    this.test = new ThresholdTest(metric, threshold, d);
    this.groups = new PairGroups(n);
  }

  /** Rows [start, start + rows) (`data`, kept as it is); blocks must come in row order. */
  addRows(data: Float32Array, rows: number, start: number): void {
    const d = this.d;
    this.rows.append(data, rows);
    if (this.metric !== 'cosine') return;
    for (let r = 0; r < rows; r++) this.squares[start + r] = squaredNorm(data, r * d, d);
  }

  /** Confirms each candidate (a, b) of a block exactly and hands the pairs that pass to the sink. */
  confirm(block: Uint32Array, rowsDone: number): void {
    const { test, squares, rows } = this;
    const cosine = this.metric === 'cosine';
    const bi = new Uint32Array(block.length / 2);
    const bj = new Uint32Array(block.length / 2);
    const bs = new Float64Array(block.length / 2);
    let m = 0;
    for (let p = 0; p < block.length; p += 2) {
      const a = block[p];
      const b = block[p + 1];
      const [xa, ao] = rows.at(a);
      const [xb, bo] = rows.at(b);
      const s = cosine ? test.score(xa, ao, xb, bo, squares[a], squares[b]) : test.score(xa, ao, xb, bo);
      if (Number.isNaN(s)) continue;
      this.groups.add(a, b);
      bi[m] = a;
      bj[m] = b;
      bs[m++] = s;
    }
    this.pairs += m;
    if (m > 0) this.sink(bi.subarray(0, m), bj.subarray(0, m), bs.subarray(0, m));
    this.candidates += block.length / 2;
    this.onProgress?.({ rowsDone, n: this.n, candidates: this.candidates });
  }
}

/**
 * Rows kept on the host in blocks as they arrive (no block copied twice, no single array however
 * many rows): `at(r)` finds row r's block by its first row. One block of a given array holds it all.
 */
class RowBlocks {
  private blocks: Float32Array[] = [];
  /** The first row of each block. */
  private starts: number[] = [];
  private rows = 0;

  constructor(private readonly d: number) {}

  append(x: Float32Array, rows: number): void {
    if (rows === 0) return;
    this.blocks.push(x);
    this.starts.push(this.rows);
    this.rows += rows;
  }

  /** Row r: its block and the offset of its first value there. */
  at(r: number): [Float32Array, number] {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid] <= r) lo = mid;
      else hi = mid - 1;
    }
    return [this.blocks[lo], (r - this.starts[lo]) * this.d];
  }
}

function checkBound(v: number | undefined, dflt: number, name: string): number {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !(v === Infinity || (Number.isInteger(v) && v >= 0))) {
    throw new InvalidArgumentError(`${name} must be a non-negative integer or Infinity; got ${String(v)}`);
  }
  return v;
}

const EMPTY_U32 = new Uint32Array(0);
const EMPTY_F64 = new Float64Array(0);

/**
 * Confirmed pairs in fixed-size typed chunks: no copying as they grow, one join at the end. More
 * than `max` pairs is an InvalidArgumentError (`n`: the rows, for its message).
 */
export class PairChunks {
  static readonly CHUNK = 1 << 20;
  private is: Uint32Array[] = [];
  private js: Uint32Array[] = [];
  private ss: Float64Array[] = [];
  /** Pairs held. */
  length = 0;

  constructor(
    private readonly max: number,
    private readonly n: number,
  ) {}

  append(i: Uint32Array, j: Uint32Array, score: Float64Array): void {
    for (let p = 0; p < i.length; p++) {
      if (this.length === this.max) {
        throw new InvalidArgumentError(
          `the threshold matches more than ${this.max} pairs (at row ${i[p]} of ${this.n}); use a stricter threshold, raise maxPairs, or take the pairs as they come with onPairs`,
        );
      }
      this.push(i[p], j[p], score[p]);
    }
  }

  private push(a: number, b: number, s: number): void {
    const o = this.length % PairChunks.CHUNK;
    if (o === 0) {
      this.is.push(new Uint32Array(PairChunks.CHUNK));
      this.js.push(new Uint32Array(PairChunks.CHUNK));
      this.ss.push(new Float64Array(PairChunks.CHUNK));
    }
    const c = this.is.length - 1;
    this.is[c][o] = a;
    this.js[c][o] = b;
    this.ss[c][o] = s;
    this.length++;
  }

  /** The pairs as three arrays of `length`; the chunks are released as they are copied. */
  finish(): { i: Uint32Array; j: Uint32Array; score: Float64Array } {
    const i = new Uint32Array(this.length);
    const j = new Uint32Array(this.length);
    const score = new Float64Array(this.length);
    for (let c = 0, o = 0; c < this.is.length; c++, o += PairChunks.CHUNK) {
      const len = Math.min(PairChunks.CHUNK, this.length - o);
      i.set(this.is[c].subarray(0, len), o);
      j.set(this.js[c].subarray(0, len), o);
      score.set(this.ss[c].subarray(0, len), o);
      // Let each chunk go once copied, so the peak stays near twice the result, not more.
      this.is[c] = this.js[c] = EMPTY_U32;
      this.ss[c] = EMPTY_F64;
    }
    this.is = [];
    this.js = [];
    this.ss = [];
    return { i, j, score };
  }
}

/** Union-find over the pairs: the groups of two or more, each ascending (keeper = lowest id). */
export function groupPairs(n: number, is: ArrayLike<number>, js: ArrayLike<number>): { clusters: number[][]; drop: Uint32Array } {
  const groups = new PairGroups(n);
  for (let p = 0; p < is.length; p++) groups.add(is[p], js[p]);
  return groups.result();
}

/**
 * Union-find over ids 0 .. n - 1, fed one pair at a time (so pairs need not be kept): O(n) memory
 * whatever the number of pairs.
 */
export class PairGroups {
  private readonly parent: Int32Array;
  /** Marks, not a Set: there may be tens of millions of pairs, but only n members. */
  private readonly member: Uint8Array;

  constructor(readonly n: number) {
    this.parent = new Int32Array(n).map((_, k) => k);
    this.member = new Uint8Array(n);
  }

  private find(v: number): number {
    const parent = this.parent;
    while (parent[v] !== v) {
      parent[v] = parent[parent[v]];
      v = parent[v];
    }
    return v;
  }

  add(i: number, j: number): void {
    this.member[i] = this.member[j] = 1;
    const a = this.find(i);
    const b = this.find(j);
    // The smaller root wins, so each root is its cluster's lowest id.
    if (a !== b) this.parent[Math.max(a, b)] = Math.min(a, b);
  }

  /** The groups of two or more, each ascending (first = keeper), by keeper; and every other member, ascending. */
  result(): { clusters: number[][]; drop: Uint32Array } {
    const groups = new Map<number, number[]>();
    for (let v = 0; v < this.n; v++) {
      if (!this.member[v]) continue;
      const root = this.find(v);
      const g = groups.get(root);
      if (g) g.push(v);
      else groups.set(root, [v]);
    }
    const clusters = [...groups.values()].sort((a, b) => a[0] - b[0]);
    const drop = Uint32Array.from(clusters.flatMap((c) => c.slice(1))).sort();
    return { clusters, drop };
  }
}
