/**
 * sq-scores cases: queries, biases and base code rows with the values each code stands for, built
 * from the values (packed by arithmetic, no bit operators), so that a reference reads the values
 * and never decodes a code.
 */
import { type SqCodeKind, padRows, paddedDim, sqCodeWords } from '../../src/device.js';
import type { KernelMetric } from '../../src/kernel-facts.js';
import { randomFloats, randomSmallInts } from '../../src/common/random.js';
import { SCORE_TILE_SHAPES } from './score-tiles.js';

export const SQ_KINDS: readonly SqCodeKind[] = ['sq8', 'sq4', 'fp16'];

/** Score-tile shapes (SCORE_TILE_SHAPES), and one row, and one column (col0 > 0, ldc > cols). */
export const SQ_SHAPES: readonly number[][] = [...SCORE_TILE_SHAPES, [5, 40, 12, 2, 1, 3, 37, 40], [12, 50, 44, 1, 11, 49, 1, 3]];

export interface SqCase {
  kind: SqCodeKind;
  nq: number;
  nb: number;
  d: number;
  dpad: number;
  codeWords: number;
  /** `nq * dpad` floats (zero beyond d). */
  xq: Float32Array;
  qbias: Float32Array;
  /** `nb * codeWords` words. */
  codes: Uint32Array;
  /** `nb * dpad` values the codes stand for (zero beyond d). */
  values: Float64Array;
  /** Squared norms of the value rows. */
  xnorm: Float32Array;
  /** Largest |xq| and |value|: the magnitude bound of a dot product's terms. */
  maxQ: number;
  maxV: number;
}

/**
 * A case of `kind` codes: `int` data (small integers: queries in [0, 7], biases in [-8, 8], fp16
 * values in [-8, 8]; every sum is exact in float32) or `float` data (queries and biases in
 * [-1, 1), fp16 values of every exponent from 2^-6 to 2^1). Code values are uniform over the
 * kind's range (0 .. 255, 0 .. 15). Rows take `extraWords` words more than sq-scores reads.
 */
export function sqCase(kind: SqCodeKind, nq: number, nb: number, d: number, data: 'int' | 'float', seed: number, extraWords = 0): SqCase {
  const dpad = paddedDim(d);
  const codeWords = sqCodeWords(kind, dpad) + extraWords;
  const xq = padRows(data === 'int' ? randomSmallInts(nq * d, seed) : randomFloats(nq * d, seed), nq, d, dpad);
  const qbias = data === 'int' ? randomSmallInts(nq, seed + 1, 16).map((v) => v - 8) : randomFloats(nq, seed + 1);
  const values = new Float64Array(nb * dpad);
  const codes = new Uint32Array(nb * codeWords);
  if (kind === 'fp16') {
    const n = nb * d;
    const sign = randomSmallInts(n, seed + 2, 1);
    const ints = randomSmallInts(n, seed + 3, 16);
    const exps = randomSmallInts(n, seed + 4, 7);
    const mants = randomSmallInts(n, seed + 5, 1023);
    for (let i = 0; i < nb; i++) {
      for (let j = 0; j < d; j++) {
        const e = i * d + j;
        const v = data === 'int' ? ints[e] - 8 : (sign[e] ? -1 : 1) * (1 + mants[e] / 1024) * 2 ** (exps[e] - 6);
        values[i * dpad + j] = v;
        codes[i * codeWords + Math.floor(j / 2)] += halfBits(v) * (j % 2 === 0 ? 1 : 2 ** 16);
      }
    }
  } else {
    // Dimension j is digit j % per of word j / per, in base 2^bits, lowest first.
    const [bits, per] = kind === 'sq8' ? [8, 4] : [4, 8];
    const raw = randomSmallInts(nb * d, seed + 2, 2 ** bits - 1);
    for (let i = 0; i < nb; i++) {
      for (let j = 0; j < d; j++) {
        const v = raw[i * d + j];
        values[i * dpad + j] = v;
        codes[i * codeWords + Math.floor(j / per)] += v * 2 ** (bits * (j % per));
      }
    }
  }
  const xnorm = new Float32Array(nb);
  for (let i = 0; i < nb; i++) {
    let s = 0;
    for (let j = 0; j < dpad; j++) s += values[i * dpad + j] ** 2;
    xnorm[i] = s;
  }
  const maxAbs = (a: Float32Array | Float64Array): number => {
    let m = 0;
    for (const v of a) m = Math.max(m, Math.abs(v));
    return m;
  };
  return { kind, nq, nb, d, dpad, codeWords, xq, qbias, codes, values, xnorm, maxQ: maxAbs(xq), maxV: maxAbs(values) };
}

/** IEEE binary16 bits of `v`, which must be 0 or a normal half (an exact value, not rounded). */
export function halfBits(v: number): number {
  if (v === 0) return 0;
  const e = Math.floor(Math.log2(Math.abs(v)));
  const m = (Math.abs(v) / 2 ** e - 1) * 1024;
  if (!Number.isInteger(m) || e < -14 || e > 15) throw new Error(`${v} is not a normal half`);
  return (v < 0 ? 0x8000 : 0) + (e + 15) * 1024 + m;
}

/**
 * The tile of `c` in float64 from the values (rows x ldc, NaN outside the tile), and the magnitude
 * bound of each score's terms: ||x||^2 (l2) + 2 (|qbias| + d max|q| max|v|), as gemm-scores' tests
 * scale their tolerance.
 */
export function sqReference(
  c: SqCase,
  metric: KernelMetric,
  q0: number,
  rows: number,
  col0: number,
  cols: number,
  ldc: number,
): { want: Float64Array; scale: Float64Array } {
  const want = new Float64Array(rows * ldc).fill(NaN);
  const scale = new Float64Array(rows * ldc).fill(NaN);
  for (let r = 0; r < rows; r++) {
    for (let k = 0; k < cols; k++) {
      let dot = c.qbias[q0 + r];
      for (let j = 0; j < c.dpad; j++) dot += c.xq[(q0 + r) * c.dpad + j] * c.values[(col0 + k) * c.dpad + j];
      const xn = metric === 'l2' ? c.xnorm[col0 + k] : 0;
      want[r * ldc + k] = metric === 'l2' ? xn - 2 * dot : -dot;
      scale[r * ldc + k] = xn + 2 * (Math.abs(c.qbias[q0 + r]) + c.d * c.maxQ * c.maxV);
    }
  }
  return { want, scale };
}

/**
 * The first element of a rows x ldc tile where `got` is wrong, described, or null: NaN (unwritten)
 * where `want` is NaN, else equal to `want` (`tol` 0) or within `tol * scale`.
 */
export function sqMismatch(got: Float32Array, want: ArrayLike<number>, scale: ArrayLike<number>, ldc: number, tol: number): string | null {
  for (let e = 0; e < want.length; e++) {
    const g = got[e];
    const w = want[e];
    const ok = Number.isNaN(w) ? Number.isNaN(g) : tol === 0 ? g === w : Math.abs(g - w) <= tol * scale[e];
    if (!ok) return `(${Math.floor(e / ldc)}, ${e % ldc}): got ${g}, want ${w}${Number.isNaN(w) ? ' (outside the tile: unwritten)' : tol === 0 ? '' : ` within ${tol * scale[e]}`}`;
  }
  return null;
}
