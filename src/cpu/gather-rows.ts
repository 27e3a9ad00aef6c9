/**
 * CPU twin of shaders/gather-rows.wgsl: copies rows `rows[rows0 + i]` (i < n) of `x`, `words` words
 * each, to rows `out0 + i` of `out`, word for word.
 */
export function gatherRows(x: Uint32Array, rows: Uint32Array, rows0: number, n: number, words: number, out: Uint32Array, out0: number): void {
  for (let i = 0; i < n; i++) {
    const from = rows[rows0 + i] * words;
    out.set(x.subarray(from, from + words), (out0 + i) * words);
  }
}
