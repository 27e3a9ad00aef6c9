import { checkHammingScoresArgs } from '../device.js';

/**
 * CPU twin of shaders/hamming-scores.wgsl: Hamming distances between binary codes. For r < rows,
 * c < cols:
 *   scores[r * ldc + c] = sum_{w < codeWords} popcount(xq[(q0 + r) * codeWords + w] ^ codes[(col0 + c) * codeWords + w])
 * An integer, exact in float32: the same bits as the kernel.
 */
export function hammingScores(
  xq: Uint32Array,
  q0: number,
  rows: number,
  codes: Uint32Array,
  col0: number,
  cols: number,
  codeWords: number,
  scores: Float32Array,
  ldc: number,
): void {
  checkHammingScoresArgs({ codeWords });
  for (let r = 0; r < rows; r++) {
    const q = (q0 + r) * codeWords;
    for (let c = 0; c < cols; c++) {
      const x = (col0 + c) * codeWords;
      let s = 0;
      for (let w = 0; w < codeWords; w++) s += popcount(xq[q + w] ^ codes[x + w]);
      scores[r * ldc + c] = s;
    }
  }
}

/** The number of set bits of a 32-bit word (WGSL's countOneBits). */
export function popcount(v: number): number {
  v -= (v >>> 1) & 0x55555555;
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (Math.imul((v + (v >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24);
}
