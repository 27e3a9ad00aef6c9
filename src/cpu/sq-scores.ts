import type { KernelMetric } from '../kernel-facts.js';
import { type SqCodeKind, checkSqScoresArgs } from '../device.js';
import { halfToFloat } from '../common/fp16.js';

/**
 * CPU twin of shaders/sq-scores.wgsl: the score tile of a block of queries against a block of
 * scalar-quantised base vectors. For r in [0, rows) and c in [0, cols):
 *   dot = qbias[q0 + r] + sum_{j < dpad} xq[(q0 + r) * dpad + j] * v(c, j)
 *   scores[r * ldc + c] = l2: xnorm[col0 + c] - 2 dot;  ip: -dot
 * where v(c, j) is dimension j of base row col0 + c, whose `codeWords` words start at
 * `codes[(col0 + c) * codeWords]` (decodeSqRow says how each kind lays them out).
 *
 * In the kernel's order (each sum starts at qbias, then adds the dimensions in order), but as the
 * gemm-scores twin in float64, rounded once to float32 on store. Each base row is decoded once
 * and then scored against every query, four queries a pass.
 */
export function sqScores(
  metric: KernelMetric,
  kind: SqCodeKind,
  xq: Float32Array,
  qbias: Float32Array,
  q0: number,
  rows: number,
  codes: Uint32Array,
  xnorm: Float32Array,
  col0: number,
  cols: number,
  dpad: number,
  codeWords: number,
  scores: Float32Array,
  ldc: number,
): void {
  checkSqScoresArgs({ kind, dpad, codeWords });
  const l2 = metric === 'l2';
  const x = new Float64Array(dpad);
  // A score from its column's norm and dot product.
  const score = (xn: number, dot: number): number => (l2 ? xn - 2 * dot : -dot);
  for (let c = 0; c < cols; c++) {
    decodeSqRow(kind, codes, (col0 + c) * codeWords, dpad, x);
    const xn = l2 ? xnorm[col0 + c] : 0;
    let r = 0;
    for (; r + 4 <= rows; r += 4) {
      const a0 = (q0 + r) * dpad;
      const a1 = a0 + dpad;
      const a2 = a1 + dpad;
      const a3 = a2 + dpad;
      let s0 = qbias[q0 + r];
      let s1 = qbias[q0 + r + 1];
      let s2 = qbias[q0 + r + 2];
      let s3 = qbias[q0 + r + 3];
      for (let j = 0; j < dpad; j++) {
        const v = x[j];
        s0 += xq[a0 + j] * v;
        s1 += xq[a1 + j] * v;
        s2 += xq[a2 + j] * v;
        s3 += xq[a3 + j] * v;
      }
      const o = r * ldc + c;
      scores[o] = score(xn, s0);
      scores[o + ldc] = score(xn, s1);
      scores[o + 2 * ldc] = score(xn, s2);
      scores[o + 3 * ldc] = score(xn, s3);
    }
    for (; r < rows; r++) {
      const a = (q0 + r) * dpad;
      let s = qbias[q0 + r];
      for (let j = 0; j < dpad; j++) s += xq[a + j] * x[j];
      scores[r * ldc + c] = score(xn, s);
    }
  }
}

/**
 * Decodes the first `dpad` dimensions of the code row at `codes[at ..]` into `out`:
 *   sq8:  dimension j is byte j & 3 of word j >> 2, low byte first (0 .. 255)
 *   sq4:  nibble j & 7 of word j >> 3, low nibble first (0 .. 15)
 *   fp16: half j & 1 of word j >> 1, low half first (IEEE binary16)
 */
export function decodeSqRow(kind: SqCodeKind, codes: Uint32Array, at: number, dpad: number, out: Float64Array): void {
  if (kind === 'sq8') {
    for (let j = 0; j < dpad; j++) out[j] = (codes[at + (j >>> 2)] >>> (8 * (j & 3))) & 0xff;
  } else if (kind === 'sq4') {
    for (let j = 0; j < dpad; j++) out[j] = (codes[at + (j >>> 3)] >>> (4 * (j & 7))) & 0xf;
  } else {
    for (let j = 0; j < dpad; j++) out[j] = halfToFloat((codes[at + (j >>> 1)] >>> (16 * (j & 1))) & 0xffff);
  }
}
