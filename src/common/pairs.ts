/**
 * Pair lists [i0, j0, i1, j1, ...] as the self-join produces them: typed throughout, because a loose
 * threshold can let through tens of millions of pairs (a JS number[] of that size is gigabytes, or
 * a V8 fatal "invalid size" error).
 */
import { TooManyCandidatesError } from '../errors.js';

/** Default bound on the candidate pairs of one self-join (see dedup's maxCandidates). */
export const DEFAULT_MAX_CANDIDATES = 50_000_000;

/** The error a self-join throws when more than `max` candidate pairs pass, found in the rows from `row` on. */
export function tooManyCandidates(max: number, row: number, n: number): TooManyCandidatesError {
  return new TooManyCandidatesError(
    `the threshold lets through more than ${max} candidate pairs (at row ${row} of ${n}); use a stricter threshold or raise maxCandidates (the CLI's --max-candidates)`,
  );
}

/**
 * A growable buffer of pairs, reused tile after tile: `clear()` keeps the memory. Capacity doubles,
 * so the buffer is as large as the largest tile's pairs (at most twice that), never the whole join's.
 */
export class PairList {
  private buf: Uint32Array;
  /** Pairs held. */
  length = 0;

  constructor(capacity = 1024) {
    this.buf = new Uint32Array(2 * Math.max(1, capacity));
  }

  push(i: number, j: number): void {
    const o = 2 * this.length;
    if (o === this.buf.length) {
      const next = new Uint32Array(2 * this.buf.length);
      next.set(this.buf);
      this.buf = next;
    }
    this.buf[o] = i;
    this.buf[o + 1] = j;
    this.length++;
  }

  /** The pairs held, [i0, j0, ...]: a view, valid until the next push or clear. */
  view(): Uint32Array {
    return this.buf.subarray(0, 2 * this.length);
  }

  clear(): void {
    this.length = 0;
  }
}

/**
 * Sorts the pairs of one row tile, every i in [q0, q0 + rows), by (i, j), into a new array.
 * A counting sort by row (stable, O(pairs + rows)); then, unless `columnsSorted` (each row's j
 * already ascending in input order, as the CPU twin appends them), each row's j with a typed sort.
 */
export function sortTilePairs(pairs: Uint32Array, q0: number, rows: number, columnsSorted: boolean): Uint32Array {
  const m = pairs.length >>> 1;
  const start = new Uint32Array(rows + 1);
  for (let p = 0; p < m; p++) {
    const r = pairs[2 * p] - q0;
    if (!(r >= 0 && r < rows)) throw new Error(`pair ${p} has row ${pairs[2 * p]}, outside the tile's rows [${q0}, ${q0 + rows})`);
    start[r + 1]++;
  }
  for (let r = 0; r < rows; r++) start[r + 1] += start[r];
  const next = start.slice(0, rows);
  const js = new Uint32Array(m);
  for (let p = 0; p < m; p++) js[next[pairs[2 * p] - q0]++] = pairs[2 * p + 1];
  const out = new Uint32Array(2 * m);
  for (let r = 0; r < rows; r++) {
    const a = start[r];
    const b = start[r + 1];
    if (!columnsSorted && b - a > 1) js.subarray(a, b).sort();
    for (let p = a; p < b; p++) {
      out[2 * p] = q0 + r;
      out[2 * p + 1] = js[p];
    }
  }
  return out;
}
