/**
 * CPU twin of shaders/topk.wgsl: for each row of a score tile and each of its `nseg` segments, the
 * `k` best (score, id) pairs of that segment, best first.
 *
 * Order: (score, id) ascending; equal scores break on the smaller id. The same total order is used
 * by the GPU kernels, so GPU and CPU results compare element by element.
 * Padding: when a segment holds fewer than k entries, the rest is (+Infinity, PAD_ID).
 *
 * Layout: `scores[r * ldc + c]` for r < rows, c < cols; the id of column c is `id0 + c`.
 * Segment g covers columns [g * segLen, min(cols, (g + 1) * segLen)).
 * Output `outS` / `outI`: `rows * nseg * k`, list (r, g) at offset `(r * nseg + g) * k`.
 */

/** Id of a padding entry; reads as -1 through an Int32Array view. */
export const PAD_ID = 0xffffffff;

/** The (score, id) order: is (s1, i1) strictly better than (s2, i2)? */
export function better(s1: number, i1: number, s2: number, i2: number): boolean {
  return s1 < s2 || (s1 === s2 && i1 < i2);
}

/**
 * Inserts (s, id) into the sorted list `qs/qi[off, off + k)` if it beats the last entry.
 * The list stays sorted; its last entry drops out.
 */
export function insertSorted(qs: Float32Array, qi: Uint32Array, off: number, k: number, s: number, id: number): void {
  const last = off + k - 1;
  if (!better(s, id, qs[last], qi[last])) return;
  let p = last;
  while (p > off && better(s, id, qs[p - 1], qi[p - 1])) {
    qs[p] = qs[p - 1];
    qi[p] = qi[p - 1];
    p--;
  }
  qs[p] = s;
  qi[p] = id;
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
): void {
  for (let r = 0; r < rows; r++) {
    for (let g = 0; g < nseg; g++) {
      const off = (r * nseg + g) * k;
      outS.fill(Infinity, off, off + k);
      outI.fill(PAD_ID, off, off + k);
      const end = Math.min(cols, (g + 1) * segLen);
      for (let c = g * segLen; c < end; c++) insertSorted(outS, outI, off, k, scores[r * ldc + c], id0 + c);
    }
  }
}
