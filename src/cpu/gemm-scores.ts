import type { KernelMetric } from '../kernel-facts.js';

/**
 * CPU twin of shaders/gemm-scores.wgsl: the score tile of a block of queries against a block of
 * base vectors. Scores are minimised everywhere: `l2` -> `||x||^2 - 2 q.x` (the query's own norm is
 * added to the final k only), `ip` -> `-q.x`.
 *
 * For r in [0, rows) and c in [0, cols):
 *   scores[r * ldc + c] = score(xq row q0 + r, xb row col0 + c)
 * `xq` and `xb` are row-major with `d` columns; `xnorm[i]` is `||xb row i||^2` (used for l2 only).
 *
 * Dot products are accumulated in float64 and rounded once to float32 on store; four queries share
 * each pass over a base vector so that each base value is loaded once per four multiply-adds.
 */
export function gemmScores(
  metric: KernelMetric,
  xq: Float32Array,
  q0: number,
  rows: number,
  xb: Float32Array,
  xnorm: Float32Array,
  col0: number,
  cols: number,
  d: number,
  scores: Float32Array,
  ldc: number,
): void {
  const l2 = metric === 'l2';
  let r = 0;
  for (; r + 4 <= rows; r += 4) {
    const a0 = (q0 + r) * d;
    const a1 = a0 + d;
    const a2 = a1 + d;
    const a3 = a2 + d;
    for (let c = 0; c < cols; c++) {
      const b = (col0 + c) * d;
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      for (let j = 0; j < d; j++) {
        const x = xb[b + j];
        s0 += xq[a0 + j] * x;
        s1 += xq[a1 + j] * x;
        s2 += xq[a2 + j] * x;
        s3 += xq[a3 + j] * x;
      }
      const o = r * ldc + c;
      if (l2) {
        const xn = xnorm[col0 + c];
        scores[o] = xn - 2 * s0;
        scores[o + ldc] = xn - 2 * s1;
        scores[o + 2 * ldc] = xn - 2 * s2;
        scores[o + 3 * ldc] = xn - 2 * s3;
      } else {
        scores[o] = -s0;
        scores[o + ldc] = -s1;
        scores[o + 2 * ldc] = -s2;
        scores[o + 3 * ldc] = -s3;
      }
    }
  }
  for (; r < rows; r++) {
    const a = (q0 + r) * d;
    for (let c = 0; c < cols; c++) {
      const b = (col0 + c) * d;
      let s = 0;
      for (let j = 0; j < d; j++) s += xq[a + j] * xb[b + j];
      scores[r * ldc + c] = l2 ? xnorm[col0 + c] - 2 * s : -s;
    }
  }
}
