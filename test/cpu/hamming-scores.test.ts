/** The hamming-scores twin against hand-counted cases and a bit-by-bit oracle. */
import { describe, expect, it } from 'vitest';
import { hammingScores, popcount } from '../../src/cpu/hamming-scores.js';
import { rng } from '../../src/common/random.js';

/** Set bits counted one at a time (the oracle). */
function slowPopcount(v: number): number {
  let c = 0;
  for (let b = 0; b < 32; b++) c += (v >>> b) & 1;
  return c;
}

describe('hamming-scores (cpu twin)', () => {
  it('popcount counts the set bits of any 32-bit word', () => {
    const r = rng(3);
    for (const v of [0, 1, 0x80000000, 0xffffffff, 0x55555555, 0xaaaaaaaa, 0x0f0f0f0f, 0x12345678]) expect(popcount(v)).toBe(slowPopcount(v));
    for (let i = 0; i < 2000; i++) {
      const v = Math.floor(r() * 2 ** 32) >>> 0;
      expect(popcount(v)).toBe(slowPopcount(v));
    }
  });

  it('scores a hand case: rows of two words, at tile offsets, row stride ldc', () => {
    // Queries (2 words each): q0 = 0, q1 = all ones in word 0, q2 = bit 3 of word 1.
    const xq = Uint32Array.from([0, 0, 0xffffffff, 0, 0, 8]);
    // Base: b0 = 0, b1 = bits 0..3 of word 0 and bit 3 of word 1, b2 = all ones in both words.
    const codes = Uint32Array.from([0, 0, 0xf, 8, 0xffffffff, 0xffffffff]);
    const ldc = 4;
    const scores = new Float32Array(2 * ldc).fill(-1);
    // Query rows 1 and 2 (q0 = 1) against base rows 1 and 2 (col0 = 1).
    hammingScores(xq, 1, 2, codes, 1, 2, 2, scores, ldc);
    // q1 vs b1: word 0 differs in 28 bits, word 1 in 1 -> 29; q1 vs b2: 0 + 32 = 32.
    // q2 vs b1: 4 + 0 = 4; q2 vs b2: 32 + 31 = 63. Columns past cols untouched.
    expect(Array.from(scores)).toEqual([29, 32, -1, -1, 4, 63, -1, -1]);
  });

  it('equals a bit-by-bit count on random codes', () => {
    const r = rng(9);
    const W = 3;
    const nq = 5;
    const n = 17;
    const rand = (len: number): Uint32Array => Uint32Array.from({ length: len }, () => Math.floor(r() * 2 ** 32) >>> 0);
    const xq = rand(nq * W);
    const codes = rand(n * W);
    const scores = new Float32Array(nq * n);
    hammingScores(xq, 0, nq, codes, 0, n, W, scores, n);
    for (let i = 0; i < nq; i++) {
      for (let j = 0; j < n; j++) {
        let want = 0;
        for (let w = 0; w < W; w++) want += slowPopcount((xq[i * W + w] ^ codes[j * W + w]) >>> 0);
        expect(scores[i * n + j]).toBe(want);
      }
    }
  });

  it('refuses rows of no words', () => {
    expect(() => hammingScores(new Uint32Array(1), 0, 1, new Uint32Array(1), 0, 1, 0, new Float32Array(1), 1)).toThrow(/codeWords must be an integer >= 1; got 0/);
  });
});
