/**
 * Bitmaps for the masked kernels (mask-scores, ivf-scan), built from plain lists of allowed
 * positions, so that references read the list, never the bits.
 */

/** Each of `n` positions allowed with probability `p` (1: all, 0: none). */
export function randomAllow(n: number, p: number, r: () => number): boolean[] {
  return Array.from({ length: n }, () => r() < p);
}

/**
 * A bitmap (u32 words, bit b at `mask[b >> 5] >> (b & 31) & 1`) with bit `bit0 + v` set exactly
 * where `allow[v]`, and random bits before and after (which must not matter), built without bit
 * operators.
 */
export function maskOf(allow: boolean[], bit0: number, r: () => number): Uint32Array {
  const mask = Uint32Array.from({ length: Math.ceil((bit0 + allow.length) / 32) + 1 }, () => Math.floor(r() * 2 ** 32));
  allow.forEach((a, v) => {
    const word = Math.floor((bit0 + v) / 32);
    const bit = 2 ** ((bit0 + v) % 32);
    const set = Math.floor(mask[word] / bit) % 2 === 1;
    if (a !== set) mask[word] += a ? bit : -bit;
  });
  return mask;
}

/** A mask-scores case: a score tile with one more row than `rows` (which must be left alone). */
export interface MaskCase {
  rows: number;
  cols: number;
  ldc: number;
  bit0: number;
  /** Column c is allowed where allow[c]. */
  allow: boolean[];
  mask: Uint32Array;
  /** `(rows + 1) * ldc` random scores. */
  scores: Float32Array;
}

/**
 * [rows, cols, ldc, bit0]: one entry; cols not a multiple of 32 or 64 with ldc > cols and bit0 not
 * a multiple of 32; rows past a row block (16 on the GPU) and not a multiple of it; many columns.
 */
export const MASK_SHAPES: [number, number, number, number][] = [
  [1, 1, 1, 0],
  [3, 50, 53, 7],
  [5, 64, 64, 32],
  [17, 100, 128, 45],
  [40, 1000, 1003, 1000],
];

/** Shares of columns allowed: all, none, half, one in twenty. */
export const MASK_DENSITIES = [1, 0, 0.5, 0.05];

export function maskCase(rows: number, cols: number, ldc: number, bit0: number, density: number, r: () => number): MaskCase {
  const allow = randomAllow(cols, density, r);
  const scores = Float32Array.from({ length: (rows + 1) * ldc }, () => r() * 2 - 1);
  return { rows, cols, ldc, bit0, allow, mask: maskOf(allow, bit0, r), scores };
}

/** The tile after mask-scores, by its definition: +Infinity at (r < rows, c < cols) where !allow[c]. */
export function maskedReference(c: MaskCase): Float32Array {
  return c.scores.map((s, j) => (j < c.rows * c.ldc && j % c.ldc < c.cols && !c.allow[j % c.ldc] ? Infinity : s));
}
