/** Product-quantiser test cases: codes packed independently of the library (BigInt bit strings), tables, references. */
import { rng } from '../../src/common/random.js';

/**
 * `codes` (rows of M numbers of nbits bits) packed as Faiss packs them, into rows of `rowWords`
 * u32 words (zero beyond): code m at bits [m * nbits, (m + 1) * nbits) of the row's little-endian
 * bit string. Written with BigInt, independently of src/codecs/product-quantizer.ts.
 */
export function packCodes(codes: number[][], nbits: number, rowWords: number): Uint32Array {
  const out = new Uint32Array(codes.length * rowWords);
  codes.forEach((row, i) => {
    let bits = 0n;
    row.forEach((c, m) => (bits |= BigInt(c) << BigInt(m * nbits)));
    for (let w = 0; w < rowWords; w++) out[i * rowWords + w] = Number((bits >> BigInt(32 * w)) & 0xffffffffn);
  });
  return out;
}

/** `n` rows of M random codes of nbits bits (seeded). */
export function randomCodes(n: number, M: number, nbits: number, seed: number): number[][] {
  const r = rng(seed);
  return Array.from({ length: n }, () => Array.from({ length: M }, () => Math.floor(r() * (1 << nbits))));
}

/** Float64 reference of pq-scores: qbias[q0 + r] + sum_m luts[(r * M + m) * ksub + code] (rows x ldc, NaN outside the tile). */
export function pqReference(luts: Float32Array, qbias: Float32Array, codes: number[][], M: number, nbits: number, q0: number, rows: number, col0: number, cols: number, ldc: number): Float64Array {
  const ksub = 1 << nbits;
  const out = new Float64Array(rows * ldc).fill(NaN);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      let s = qbias[q0 + r];
      for (let m = 0; m < M; m++) s += luts[(r * M + m) * ksub + codes[col0 + c][m]];
      out[r * ldc + c] = s;
    }
  }
  return out;
}

/** Float64 reference of pq-tables (rows x M x ksub). */
export function tablesReference(metric: 'l2' | 'ip', xq: Float32Array, codebook: Float32Array, q0: number, rows: number, M: number, ksub: number, dsub: number, dpad: number): Float64Array {
  const out = new Float64Array(rows * M * ksub);
  for (let r = 0; r < rows; r++) {
    for (let m = 0; m < M; m++) {
      for (let j = 0; j < ksub; j++) {
        let s = 0;
        for (let t = 0; t < dsub; t++) {
          const x = xq[(q0 + r) * dpad + m * dsub + t];
          const c = codebook[(m * ksub + j) * dsub + t];
          s += metric === 'l2' ? (x - c) ** 2 : x * c;
        }
        out[(r * M + m) * ksub + j] = metric === 'l2' ? s : -s;
      }
    }
  }
  return out;
}

/** The first index where |got - want| > tol * max(1, |want|) (NaN must meet NaN), or null. */
export function firstMismatch(got: ArrayLike<number>, want: ArrayLike<number>, tol: number): string | null {
  for (let i = 0; i < want.length; i++) {
    const g = got[i];
    const w = want[i];
    if (Number.isNaN(w) ? !Number.isNaN(g) : !(Math.abs(g - w) <= tol * Math.max(1, Math.abs(w)))) return `at ${i}: got ${g}, want ${w}`;
  }
  return null;
}
