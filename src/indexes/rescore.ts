/**
 * The exact final order of every search, the same on every backend. The kernels score with the
 * expansion ||x||^2 - 2 q.x, whose rounding depends on the summation order of each device: near
 * ties come out in different orders on the GPU and the CPU, and a stored vector searched for
 * itself can rank behind a near copy. So an index asks the backend for at least k +
 * RESCORE_MARGIN candidates (see candidatesFor), and this module re-scores them with the direct
 * formula (l2: sum of (q_j - x_j)^2; ip: sum of q_j x_j; cosine: see cosineDistance), accumulated in
 * float64 in column order, keeps the k best by (float64 score, id) and rounds the distances once
 * to float32. This runs on the host, in this one function, for every backend, so
 * equal candidates give bit-identical results, and identical vectors are at distance exactly 0
 * (cosine exactly 1).
 *
 * What it cannot fix: when more than `candidates - k` vectors tie with the k-th within the
 * kernels' rounding (near copies), the kernels' cut decides which of them are candidates.
 */

import type { Metric, SlotResult, SearchTimings } from '../types.js';
import type { RowAt } from '../contracts.js';

/** Fewest candidates beyond k that are re-scored (fewer only where the backend's largest k leaves no room). */
export const RESCORE_MARGIN = 16;
/** Fewest candidates re-scored. */
export const RESCORE_MIN = 32;

/**
 * How many candidates to ask the backend for, to return `k` re-scored neighbours: k +
 * RESCORE_MARGIN rounded up to a power of two, at least RESCORE_MIN, at most `maxK`. The GPU's heap
 * selection (k <= HEAP_MAX_K) sizes its heaps to the next power of two anyway, so the rounding costs
 * little there; above it, select-radix costs about the same for any k.
 */
export function candidatesFor(k: number, maxK: number): number {
  let kc = RESCORE_MIN;
  while (kc < k + RESCORE_MARGIN) kc *= 2;
  return Math.min(kc, maxK);
}

/**
 * Re-scores `cand` (`nq * kc` labels, -1 = none; distances ignored) against the queries `xq`
 * (`nq * d`, as the index holds them: normalised for cosine), reading the candidates' vectors by id
 * with `rowAt` (see BaseStore.rowsAt), and returns the k best of each row,
 * best first: l2 ascending squared distance, ip and cosine descending, ties on the smaller id,
 * padded with -1 and +Infinity (l2) / -Infinity (ip, cosine). A zero vector has cosine 0 with
 * every vector.
 */
export function rescore(
  metric: Metric,
  xq: Float32Array,
  nq: number,
  d: number,
  cand: SlotResult,
  kc: number,
  k: number,
  rowAt: RowAt,
  /** Orders exact ties (default: the label itself); an index passes its slot -> id map. */
  tieKey: (label: number) => number = (label) => label,
  /** Also return the float64 scores (SlotResult.scores). */
  withScores = false,
): SlotResult {
  const distances = new Float32Array(nq * k).fill(metric === 'l2' ? Infinity : -Infinity);
  const labels = new Int32Array(nq * k).fill(-1);
  const scores = withScores ? new Float64Array(nq * k).fill(Infinity) : null;
  // Per row: the k best so far by (minimised float64 score, tie key), best first. Candidates come
  // nearly in order, so most fail the first compare, with the k-th.
  const keys = new Float64Array(k);
  const ids = new Int32Array(k);
  const labelsIn = cand.labels;
  const score = exactScorer(metric, xq, nq, d);
  // Whether (key, id) goes before the j-th kept.
  const before = (key: number, id: number, j: number): boolean => key < keys[j] || (key === keys[j] && tieKey(id) < tieKey(ids[j]));
  // A row's candidates, scored four at a time (see exactScorer), then kept in their order.
  const block = new Int32Array(EXACT_BLOCK);
  const blockKeys = new Float64Array(EXACT_BLOCK);
  const blockRows: Float32Array[] = new Array<Float32Array>(EXACT_BLOCK);
  for (let r = 0; r < nq; r++) {
    let m = 0;
    for (let c0 = 0; c0 < kc; ) {
      let nb = 0;
      for (; c0 < kc && nb < EXACT_BLOCK; c0++) {
        const id = labelsIn[r * kc + c0];
        if (id >= 0) block[nb++] = id;
      }
      if (nb === 0) break;
      for (let b = 0; b < nb; b++) blockRows[b] = rowAt(block[b]);
      score(r, blockRows, nb, blockKeys);
      for (let b = 0; b < nb; b++) {
        const id = block[b];
        const key = blockKeys[b];
        if (m === k && !before(key, id, k - 1)) continue;
        let j = m < k ? m++ : k - 1;
        for (; j > 0 && before(key, id, j - 1); j--) {
          keys[j] = keys[j - 1];
          ids[j] = ids[j - 1];
        }
        keys[j] = key;
        ids[j] = id;
      }
    }
    for (let i = 0; i < m; i++) {
      labels[r * k + i] = ids[i];
      distances[r * k + i] = reportedScore(metric, keys[i]);
      if (scores) scores[r * k + i] = keys[i];
    }
  }
  return scores ? { distances, labels, scores } : { distances, labels };
}

/** Stored rows an exactScorer call scores at once. */
export const EXACT_BLOCK = 4;

/**
 * Scores the first `n` (1 .. EXACT_BLOCK) stored rows of `x` (their first `d` floats each; `x`
 * has room for EXACT_BLOCK, the rest filled with the last row) against query row r of `xq`
 * (`nq * d`): `out[i]` is the exact minimised float64 score of `x[i]`, for i < n.
 */
export type ExactScorer = (r: number, x: Float32Array[], n: number, out: Float64Array) => void;

/** ExactScorer's work on a full block of EXACT_BLOCK rows. */
type BlockScorer = (r: number, x: readonly Float32Array[], out: Float64Array) => void;

/**
 * The exact minimised float64 scores of query rows against stored rows, each accumulated in
 * column order: l2 the squared distance, sum of (q_j - x_j)^2; ip minus the inner product;
 * cosine the cosine distance (see cosineDistance). Four rows a call: four independent sums a
 * column, which V8 runs side by side (about 1.5x one row at a time at d = 128 and 784), each the
 * same sum, in the same order, as one row alone.
 */
export function exactScorer(metric: Metric, xq: Float32Array, nq: number, d: number): ExactScorer {
  const full = blockScorer(metric, xq, nq, d);
  return (r, x, n, out) => {
    for (let b = n; b < EXACT_BLOCK; b++) x[b] = x[n - 1];
    full(r, x, out);
  };
}

/** The metric's four sums a column over a full block (see exactScorer). */
function blockScorer(metric: Metric, xq: Float32Array, nq: number, d: number): BlockScorer {
  if (metric === 'l2') {
    return (r, x, out) => {
      const q = r * d;
      const x0 = x[0];
      const x1 = x[1];
      const x2 = x[2];
      const x3 = x[3];
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      for (let j = 0; j < d; j++) {
        const v = xq[q + j];
        const t0 = v - x0[j];
        const t1 = v - x1[j];
        const t2 = v - x2[j];
        const t3 = v - x3[j];
        s0 += t0 * t0;
        s1 += t1 * t1;
        s2 += t2 * t2;
        s3 += t3 * t3;
      }
      out[0] = s0;
      out[1] = s1;
      out[2] = s2;
      out[3] = s3;
    };
  }
  if (metric === 'ip') {
    return (r, x, out) => {
      const q = r * d;
      const x0 = x[0];
      const x1 = x[1];
      const x2 = x[2];
      const x3 = x[3];
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      for (let j = 0; j < d; j++) {
        const v = xq[q + j];
        s0 -= v * x0[j];
        s1 -= v * x1[j];
        s2 -= v * x2[j];
        s3 -= v * x3[j];
      }
      out[0] = s0;
      out[1] = s1;
      out[2] = s2;
      out[3] = s3;
    };
  }
  const qnorm = new Float64Array(nq);
  for (let r = 0; r < nq; r++) {
    for (let j = 0; j < d; j++) qnorm[r] += xq[r * d + j] * xq[r * d + j];
    qnorm[r] = Math.sqrt(qnorm[r]);
  }
  return (r, x, out) => {
    const q = r * d;
    const x0 = x[0];
    const x1 = x[1];
    const x2 = x[2];
    const x3 = x[3];
    let p0 = 0;
    let p1 = 0;
    let p2 = 0;
    let p3 = 0;
    let n0 = 0;
    let n1 = 0;
    let n2 = 0;
    let n3 = 0;
    for (let j = 0; j < d; j++) {
      const v = xq[q + j];
      const a0 = x0[j];
      const a1 = x1[j];
      const a2 = x2[j];
      const a3 = x3[j];
      p0 += v * a0;
      p1 += v * a1;
      p2 += v * a2;
      p3 += v * a3;
      n0 += a0 * a0;
      n1 += a1 * a1;
      n2 += a2 * a2;
      n3 += a3 * a3;
    }
    const qn = qnorm[r];
    out[0] = cosineFromDot(xq, q, qn, x0, 0, Math.sqrt(n0), p0, d);
    out[1] = cosineFromDot(xq, q, qn, x1, 0, Math.sqrt(n1), p1, d);
    out[2] = cosineFromDot(xq, q, qn, x2, 0, Math.sqrt(n2), p2, d);
    out[3] = cosineFromDot(xq, q, qn, x3, 0, Math.sqrt(n3), p3, d);
  };
}

/**
 * The score reported for a minimised one: l2 the distance, ip the inner product, cosine 1 - the
 * distance; rounded once, to float32, where it is stored (0 - x: never -0).
 */
export function reportedScore(metric: Metric, key: number): number {
  return metric === 'l2' ? key : metric === 'ip' ? 0 - key : 1 - key;
}

/**
 * Runs `fn` (reading the candidates' rows, then the re-score) and, when timings are asked for,
 * records its time in `timings.rescoreMs`.
 */
export async function timedRescore(timings: SearchTimings | undefined, fn: () => Promise<SlotResult>): Promise<SlotResult> {
  const t0 = performance.now();
  const out = await fn();
  if (timings) timings.rescoreMs = performance.now() - t0;
  return out;
}

/**
 * The cosine distance (1 - cosine) of row a (at offset `ao`, L2 norm `an`) and row b (at `bo`,
 * norm `bn`), `d` floats each, in float64; 1 when either is a zero vector (cosine 0). Two
 * formulas, each where it is exact enough: 1 - a.b / (an bn), exact for small-integer data
 * (cosines such as 0.6 or 0 come out exactly); and, for near-parallel rows (cosine above
 * 1 - 2^-20), |a/an - b/bn|^2 / 2, because there the dot product's rounding swamps the difference
 * from 1: identical rows are at exactly 0, and any other direction above 0, even when 1 - that
 * rounds to 1. Callers compare distances (dedup: distance <= 1 - threshold; the re-score orders
 * by it), never cosines rounded back. Used by the re-score and by dedup's exact check.
 */
export function cosineDistance(a: Float32Array, ao: number, an: number, b: Float32Array, bo: number, bn: number, d: number): number {
  if (!(an > 0 && bn > 0)) return 1;
  let dot = 0;
  for (let j = 0; j < d; j++) dot += a[ao + j] * b[bo + j];
  return cosineFromDot(a, ao, an, b, bo, bn, dot, d);
}

/** cosineDistance, given the rows' dot product `dot` (summed in column order in float64). */
function cosineFromDot(a: Float32Array, ao: number, an: number, b: Float32Array, bo: number, bn: number, dot: number, d: number): number {
  if (!(an > 0 && bn > 0)) return 1;
  const c = dot / (an * bn);
  if (c < 1 - 2 ** -20) return 1 - Math.max(-1, c);
  let s = 0;
  for (let j = 0; j < d; j++) {
    const t = a[ao + j] / an - b[bo + j] / bn;
    s += t * t;
  }
  return s / 2;
}
