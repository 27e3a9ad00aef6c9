/**
 * Shared types, error classes and input validation. Every public entry point validates here, before
 * it changes anything, so a call that throws leaves the index exactly as it was.
 */
import { InvalidArgumentError } from './errors.js';

/**
 * `l2`: squared Euclidean, ascending. `ip`: inner product, descending. `cosine`: `ip` on
 * L2-normalised vectors. A zero vector has no direction: under cosine it stays zero, so its cosine
 * with every vector (itself and other zero vectors included) is 0, as with Faiss's normalize_L2 and
 * scikit-learn's cosine_similarity.
 */
export type Metric = 'l2' | 'ip' | 'cosine';

export const METRICS: readonly Metric[] = ['l2', 'ip', 'cosine'];

/**
 * k-NN results for `nq` queries: `distances` and `labels` are each `nq * k`, row-major, best first.
 * Missing results are padded with label -1 and distance +Infinity (l2) or -Infinity (ip, cosine).
 * Labels are the vectors' ids (see src/indexes/ids.ts): integers in [0, 2^53 - 1] held as float64, so that
 * `Number(label)` and `BigInt(label)` both convert every one of them exactly.
 */
export interface SearchResult {
  distances: Float32Array;
  labels: Float64Array;
  /**
   * With `exactScores`: the float64 scores the results were ordered by, `nq * k` (minimised: l2 the
   * squared distance, ip minus the inner product, cosine the cosine distance; +Infinity for
   * padding). Results of several indexes merged by (score, id) are in the order one index holding
   * all their rows gives (distances alone can tie where these do not).
   */
  scores?: Float64Array;
}

/**
 * What the backends' plans return: as SearchResult, but labels are the store's 32-bit slots (a
 * row's position in a flat store; the id an IVF list keeps with each row), -1 for padding. An index
 * turns slots into the caller's ids (src/indexes/ids.ts).
 */
export interface SlotResult {
  distances: Float32Array;
  labels: Int32Array;
  /** The exact re-score's float64 scores (see SearchResult.scores), where it ran. */
  scores?: Float64Array;
  /** Scored on float16 rows (src/stores/half-rows.ts): the candidates are still to be vouched for. */
  halfScores?: boolean;
}

/**
 * Range-search results for `nq` queries, in Faiss's layout: query i's results are entries
 * `lims[i] .. lims[i + 1] - 1` of `distances` and `labels`, best first (l2 ascending squared
 * distance, ip / cosine descending), ties on the smaller label.
 */
export interface RangeSearchResult {
  lims: Float64Array;
  distances: Float32Array;
  labels: Float64Array;
}

/** Time spent in each phase of one search, in milliseconds; filled in when passed to `search`. */
export interface SearchTimings {
  uploadMs: number;
  computeMs: number;
  readbackMs: number;
  /** Host time re-scoring the final candidates exactly (src/indexes/rescore.ts). */
  rescoreMs?: number;
  /** GPU time per kernel name (from timestamp queries, where the adapter has them). */
  kernelMs?: Record<string, number>;
  /**
   * How a CAGRA search found its candidates: `walk` through the graph, or `scan`, the exact
   * pre-filtered scan (a filter and the removals allowing less than GRAPH_FILTER_MIN_SELECTIVITY
   * of the rows, more candidates than the walk holds, or fewer than 2 rows).
   */
  strategy?: 'walk' | 'scan';
  /**
   * A CAGRA walk's work, summed over the queries it walked (the same on every device: the CPU
   * twin takes the kernel's steps): iterations (parents expanded, searchWidth at a time), ids
   * scored (distances computed) and the most iterations any query ran.
   */
  walk?: { queries: number; iterations: number; distances: number; maxIterations: number };
}

export function emptyTimings(): SearchTimings {
  return { uploadMs: 0, computeMs: 0, readbackMs: 0 };
}

/** Largest id: ids are exact integers in float64. */
export const MAX_ID = Number.MAX_SAFE_INTEGER;

export function checkMetric(metric: unknown): Metric {
  if (typeof metric !== 'string' || !(METRICS as readonly string[]).includes(metric)) {
    throw new InvalidArgumentError(`metric must be one of ${METRICS.join(', ')}; got ${String(metric)}`);
  }
  return metric as Metric;
}

export function checkDim(dim: unknown): number {
  if (typeof dim !== 'number' || !Number.isInteger(dim) || dim < 1 || dim > 65536) {
    throw new InvalidArgumentError(`dim must be an integer in [1, 65536]; got ${String(dim)}`);
  }
  return dim;
}

export function checkK(k: unknown, maxK: number): number {
  if (typeof k !== 'number' || !Number.isInteger(k) || k < 1 || k > maxK) {
    throw new InvalidArgumentError(`k must be an integer in [1, ${maxK}]; got ${String(k)}`);
  }
  return k;
}

/** The largest finite float32. */
const FLOAT32_MAX = 3.4028234663852886e38;

/**
 * The largest squared norm of a vector an index compares queries with (and of a query): a quarter
 * of float32's range, so that every squared distance between two such vectors, at most
 * (||q|| + ||x||)^2, and every inner product stays finite. `add` refuses rows above it; loading
 * refuses files whose rows, centroids or codes' reconstructions can exceed it.
 */
export const MAX_SQUARED_NORM = FLOAT32_MAX / 4;

/** How messages about loaded rows, centroids and tables state MAX_SQUARED_NORM. */
export const MAX_SQUARED_NORM_TEXT = `at most ${MAX_SQUARED_NORM.toExponential(3)} (a quarter of float32's range, the bound on added vectors, so that distances stay finite)`;

/**
 * Checks that `x` is a Float32Array of `n * dim` finite values, each row's squared norm at most a
 * quarter of float32's range (so that every squared distance between rows is finite; pass
 * `checkNorms` false for rows that are normalised before use, as for cosine), and returns `n`.
 * `what` names the argument in messages ("xb", "xq"). Rows are 0-based in messages, counted from
 * `row0` (a block's first row in its file).
 */
export function checkVectors(x: unknown, dim: number, what: string, allowEmpty: boolean, checkNorms = true, row0 = 0): number {
  if (!(x instanceof Float32Array)) {
    const got = x === null ? 'null' : typeof x === 'object' ? (x as object).constructor?.name : typeof x;
    throw new InvalidArgumentError(`${what} must be a Float32Array of n * ${dim} values; got ${got}`);
  }
  if (x.length % dim !== 0) {
    throw new InvalidArgumentError(
      `${what} has length ${x.length}, which is not a multiple of dim ${dim} (expected n * ${dim} values)`,
    );
  }
  const n = x.length / dim;
  if (n === 0 && !allowEmpty) {
    throw new InvalidArgumentError(`${what} is empty; expected at least one vector of dim ${dim}`);
  }
  for (let row = 0; row < n; row++) {
    // Squared norms and distances are float32 on the device: a row whose squared norm overflows
    // float32 would come back at distance +Infinity, indistinguishable from padding.
    let norm2 = 0;
    for (let i = row * dim; i < (row + 1) * dim; i++) {
      if (!Number.isFinite(x[i])) {
        throw new InvalidArgumentError(
          `${what} row ${row0 + row} has a non-finite value (${x[i]}) at column ${i % dim}; all values must be finite`,
        );
      }
      norm2 += x[i] * x[i];
    }
    if (checkNorms && norm2 > MAX_SQUARED_NORM) {
      throw new InvalidArgumentError(
        `${what} row ${row0 + row} has a squared norm of ${norm2.toExponential(3)}; at most ${MAX_SQUARED_NORM.toExponential(3)} ` +
          `(a quarter of float32's range, so that distances stay finite): scale the vectors down`,
      );
    }
  }
  return n;
}

/**
 * Returns a copy of `x` (`n * d`) with each row scaled to unit L2 norm; zero rows stay zero (cosine 0
 * with everything: see Metric).
 */
export function normalizeRows(x: Float32Array, d: number): Float32Array {
  const out = new Float32Array(x.length);
  for (let off = 0; off < x.length; off += d) {
    let s = 0;
    for (let j = 0; j < d; j++) s += x[off + j] * x[off + j];
    const inv = s > 0 ? 1 / Math.sqrt(s) : 0;
    for (let j = 0; j < d; j++) out[off + j] = x[off + j] * inv;
  }
  return out;
}

/**
 * A copy of `x` (`rows of d`) as an index of `metric` holds it: normalised for cosine, as given
 * otherwise. Indexes take it when a call is made, so the caller may reuse `x` at once.
 */
export function prepareRows(metric: Metric, x: Float32Array, d: number): Float32Array {
  return metric === 'cosine' ? normalizeRows(x, d) : x.slice();
}

/** As prepareRows, for rows the index may keep as they are (a block read for it): no copy unless normalising. */
export function prepareOwnRows(metric: Metric, x: Float32Array, d: number): Float32Array {
  return metric === 'cosine' ? normalizeRows(x, d) : x;
}
