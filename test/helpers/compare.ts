/**
 * Comparators for k-NN results, with the tolerances in one place.
 * Floats agree when |a - b| <= atol or |a - b| <= rtol * max(|a|, |b|); for l2, atol is scaled by
 * ||q||^2 + ||x||^2, the size of the terms the expansion cancels.
 */
import { expect } from 'vitest';
/** A k-NN result: an index's (labels as ids) or a plan's (labels as slots). */
export interface Result {
  distances: Float32Array;
  labels: ArrayLike<number>;
}

export const RTOL = 1e-5;
/** Absolute tolerance relative to the expansion's magnitude (f32 has 24 bits: ~6e-8 per operation). */
export const L2_ATOL_SCALE = 1e-5;
export const IP_ATOL = 1e-5;

export function close(a: number, b: number, atol: number, rtol = RTOL): boolean {
  if (a === b) return true;
  const diff = Math.abs(a - b);
  return diff <= atol || diff <= rtol * Math.max(Math.abs(a), Math.abs(b));
}

/** Element-by-element equality (for small-integer data, where every intermediate is exact). */
export function expectIdentical(got: Result, want: Result, what: string): void {
  expect(got.labels.length, `${what}: labels length`).toBe(want.labels.length);
  for (let i = 0; i < want.labels.length; i++) {
    if (got.labels[i] !== want.labels[i] || !Object.is(got.distances[i], want.distances[i])) {
      throw new Error(
        `${what}: first difference at element ${i}: got (${got.distances[i]}, ${got.labels[i]}), want (${want.distances[i]}, ${want.labels[i]})`,
      );
    }
  }
}

/**
 * Tie-aware comparison in the manner of Faiss's check_ref_knn_with_draws: distances must agree
 * within tolerance position by position; within a run of equal (within tolerance) reference
 * distances, the id sets must agree, except at the end of the row, where the run may be cut.
 * A repeated id in a row is always a failure.
 * `atolOf(row)` gives the absolute tolerance for that query.
 */
export function expectTieAwareEqual(
  got: Result,
  want: Result,
  nq: number,
  k: number,
  atolOf: (row: number) => number,
  what: string,
): void {
  for (let r = 0; r < nq; r++) {
    const atol = atolOf(r);
    const o = r * k;
    const seen = new Set<number>();
    for (let j = 0; j < k; j++) {
      const id = got.labels[o + j];
      if (id !== -1 && seen.has(id)) throw new Error(`${what}: row ${r} repeats id ${id}`);
      seen.add(id);
      const a = got.distances[o + j];
      const b = want.distances[o + j];
      if (!(Object.is(a, b) || close(a, b, atol))) {
        throw new Error(`${what}: row ${r} position ${j}: distance ${a}, want ${b} (atol ${atol})`);
      }
    }
    let j = 0;
    while (j < k) {
      let e = j + 1;
      while (e < k && close(want.distances[o + e], want.distances[o + j], atol)) e++;
      const gotIds = Array.prototype.slice.call(got.labels, o + j, o + e).sort((x: number, y: number) => x - y);
      const wantIds = Array.prototype.slice.call(want.labels, o + j, o + e).sort((x: number, y: number) => x - y);
      // A run that reaches the end of the row may be cut differently; its ids need not match.
      if (e < k && gotIds.join(',') !== wantIds.join(',')) {
        throw new Error(`${what}: row ${r} positions ${j}..${e - 1} (tied distances): ids ${gotIds}, want ${wantIds}`);
      }
      j = e;
    }
  }
}

/**
 * Tie-aware recall@k against published ground truth (`gt`: nq rows of `gtK` ids, nearest first):
 * a returned id counts as a hit when its true distance is no worse than the k-th true distance.
 * `trueDist(q, id)` computes the exact distance (float64).
 */
export function tieAwareRecall(
  labels: ArrayLike<number>,
  k: number,
  gt: Int32Array,
  gtK: number,
  nq: number,
  trueDist: (q: number, id: number) => number,
): number {
  let hits = 0;
  for (let q = 0; q < nq; q++) {
    const kth = trueDist(q, gt[q * gtK + k - 1]);
    for (let j = 0; j < k; j++) {
      const id = labels[q * k + j];
      if (id >= 0 && trueDist(q, id) <= kth) hits++;
    }
  }
  return hits / (nq * k);
}

/** Squared L2 between row i of a and row j of b, in float64. */
export function l2Exact(a: Float32Array, i: number, b: Float32Array, j: number, d: number): number {
  let s = 0;
  for (let t = 0; t < d; t++) {
    const diff = a[i * d + t] - b[j * d + t];
    s += diff * diff;
  }
  return s;
}
