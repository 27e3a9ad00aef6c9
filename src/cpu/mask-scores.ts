/**
 * CPU twin of shaders/mask-scores.wgsl: sets to +Infinity the score-tile columns a bitmap does not
 * allow. For c < cols, unless bit `bit0 + c` of `mask` is set (maskAllows), every
 * `scores[r * ldc + c]`, r < rows, becomes +Infinity; other columns, and columns c >= cols, are
 * left as they are.
 */
export function maskScores(scores: Float32Array, ldc: number, rows: number, cols: number, mask: Uint32Array, bit0: number): void {
  const masked: number[] = [];
  for (let c = 0; c < cols; c++) if (!maskAllows(mask, bit0 + c)) masked.push(c);
  for (let r = 0; r < rows; r++) for (const c of masked) scores[r * ldc + c] = Infinity;
}

/** Whether bit `b` of a bitmap of u32 words is set: `mask[b >> 5] >> (b & 31) & 1`. */
export function maskAllows(mask: Uint32Array, b: number): boolean {
  return ((mask[b >>> 5] >>> (b & 31)) & 1) === 1;
}
