/**
 * CPU twin of shaders/topk.wgsl: for each row of a score tile and each of its `nseg` segments, the
 * `k` best (score, id) pairs of that segment, best first.
 *
 * Order: (score, id) ascending; equal scores break on the smaller id. The same total order is used
 * by the GPU kernels, so GPU and CPU results compare element by element.
 * Padding: when a segment holds fewer than k entries, the rest is (+Infinity, PAD_ID).
 * Bound: when `boundS/boundI` are given, candidates no better than the row's running k-th best
 * (`bound[(row0 + r) * k + k - 1]`) cannot reach the final k and are skipped.
 *
 * Layout: `scores[r * ldc + c]` for r < rows, c < cols; the id of column c is `id0 + c`.
 * Transposed: row r reads the tile's column r, `scores[c * ldc + r]`. Bias: each score plus
 * `bias.s[bias0 + the tile's row]` (r, or transposed c), rounded to float32 as the GPU adds.
 * Segment g covers columns [g * segLen, min(cols, (g + 1) * segLen)).
 * Output `outS` / `outI`: `rows * nseg * k`, list (r, g) at offset `(r * nseg + g) * k`.
 * Method: a max-heap of the best (up to) k so far (root = the worst kept), then a heapsort of the
 * m entries kept; the rest of the list is padding. The GPU keeps the same k (for k <= 16 in a
 * sorted list instead: shaders/sorted-list.wgsl), so the lists are the same element by element.
 */
import { PAD_ID } from '../kernel-facts.js';

/** The (score, id) order: is (s1, i1) strictly better than (s2, i2)? */
export function better(s1: number, i1: number, s2: number, i2: number): boolean {
  return s1 < s2 || (s1 === s2 && i1 < i2);
}

/** Adds (s, id) as entry n of the max-heap `hs/hi[off, off + n)` and sifts it up. */
function siftUp(hs: Float32Array, hi: Uint32Array, off: number, n: number, s: number, id: number): void {
  let pos = n;
  while (pos > 0) {
    const parent = (pos - 1) >> 1;
    if (!better(hs[off + parent], hi[off + parent], s, id)) break;
    hs[off + pos] = hs[off + parent];
    hi[off + pos] = hi[off + parent];
    pos = parent;
  }
  hs[off + pos] = s;
  hi[off + pos] = id;
}

/** Places (s, id) at the root of the max-heap `hs/hi[off, off + n)` and sifts it down. */
function siftDown(hs: Float32Array, hi: Uint32Array, off: number, n: number, s: number, id: number): void {
  let pos = 0;
  for (;;) {
    const l = 2 * pos + 1;
    if (l >= n) break;
    const m = l + 1 < n && better(hs[off + l], hi[off + l], hs[off + l + 1], hi[off + l + 1]) ? l + 1 : l;
    if (!better(s, id, hs[off + m], hi[off + m])) break;
    hs[off + pos] = hs[off + m];
    hi[off + pos] = hi[off + m];
    pos = m;
  }
  hs[off + pos] = s;
  hi[off + pos] = id;
}

/** Offers (s, id) to the heap `hs/hi[off ..]` holding m of at most k pairs; returns the new count. */
export function heapOffer(hs: Float32Array, hi: Uint32Array, off: number, m: number, k: number, s: number, id: number): number {
  if (m < k) {
    siftUp(hs, hi, off, m, s, id);
    return m + 1;
  }
  if (better(s, id, hs[off], hi[off])) siftDown(hs, hi, off, k, s, id);
  return m;
}

/**
 * Heapsorts the m pairs kept at `hs/hi[off ..]` (best first) and pads the list to k with
 * (+Infinity, PAD_ID).
 */
export function heapSortAndPad(hs: Float32Array, hi: Uint32Array, off: number, m: number, k: number): void {
  for (let n = m; n > 1; n--) {
    const s = hs[off + n - 1];
    const id = hi[off + n - 1];
    hs[off + n - 1] = hs[off];
    hi[off + n - 1] = hi[off];
    siftDown(hs, hi, off, n - 1, s, id);
  }
  hs.fill(Infinity, off + m, off + k);
  hi.fill(PAD_ID, off + m, off + k);
}

export function topk(
  scores: Float32Array,
  ldc: number,
  rows: number,
  cols: number,
  id0: number,
  k: number,
  nseg: number,
  segLen: number,
  outS: Float32Array,
  outI: Uint32Array,
  bound: { s: Float32Array; i: Uint32Array; row0: number } | null = null,
  transposed = false,
  bias: { s: Float32Array; bias0: number } | null = null,
): void {
  for (let r = 0; r < rows; r++) {
    let bs = Infinity;
    let bi = PAD_ID;
    if (bound) {
      bs = bound.s[(bound.row0 + r) * k + k - 1];
      bi = bound.i[(bound.row0 + r) * k + k - 1];
    }
    for (let g = 0; g < nseg; g++) {
      const off = (r * nseg + g) * k;
      const end = Math.min(cols, (g + 1) * segLen);
      let m = 0; // entries kept, <= k
      for (let c = g * segLen; c < end; c++) {
        let s = transposed ? scores[c * ldc + r] : scores[r * ldc + c];
        if (bias) s = Math.fround(s + bias.s[bias.bias0 + (transposed ? c : r)]);
        const id = id0 + c;
        if (better(s, id, bs, bi)) m = heapOffer(outS, outI, off, m, k, s, id);
      }
      heapSortAndPad(outS, outI, off, m, k);
    }
  }
}
