import { checkPqScoresArgs } from '../device.js';

/**
 * CPU twin of shaders/pq-scores.wgsl: scores of product-quantised codes, a sum of table entries.
 * For r < rows, c < cols:
 *   scores[r * ldc + c] = qbias[q0 + r] + sum_{m < M} luts[(r * M + m) * ksub + code(col0 + c, m)]
 * in float32, qbias first and then m ascending, as the kernel sums (every step rounded: the same
 * bits as the kernel). code(i, m): bits [m * nbits, (m + 1) * nbits) of row i's `codeWords` words
 * (bit b is bit b & 31 of word b >> 5), Faiss's PQ code packing.
 */
export function pqScores(
  luts: Float32Array,
  qbias: Float32Array,
  q0: number,
  rows: number,
  codes: Uint32Array,
  col0: number,
  cols: number,
  M: number,
  nbits: number,
  codeWords: number,
  scores: Float32Array,
  ldc: number,
): void {
  checkPqScoresArgs({ M, nbits, codeWords });
  const f = Math.fround;
  const ksub = 1 << nbits;
  const code = new Uint16Array(M);
  for (let c = 0; c < cols; c++) {
    pqCodeRow(codes, (col0 + c) * codeWords, M, nbits, code);
    for (let r = 0; r < rows; r++) {
      const t = r * M * ksub;
      let s = qbias[q0 + r];
      for (let m = 0; m < M; m++) s = f(s + luts[t + m * ksub + code[m]]);
      scores[r * ldc + c] = s;
    }
  }
}

/** The M codes of the row whose words start at `codes[at]` (see pqScores), into `out`. */
export function pqCodeRow(codes: Uint32Array, at: number, M: number, nbits: number, out: Uint16Array | Uint8Array | number[]): void {
  const mask = (1 << nbits) - 1;
  for (let m = 0; m < M; m++) {
    const bit = m * nbits;
    const w = at + (bit >>> 5);
    const s = bit & 31;
    let v = codes[w] >>> s;
    if (s + nbits > 32) v |= codes[w + 1] << (32 - s);
    out[m] = v & mask;
  }
}
