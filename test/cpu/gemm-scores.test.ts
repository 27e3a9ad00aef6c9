import { Matrix } from 'ml-matrix';
import { describe, expect, it } from 'vitest';
import { gemmScores } from '../../src/cpu/gemm-scores.js';
import { norms } from '../../src/cpu/norms.js';
import { randomFloats } from '../../src/common/random.js';

describe('cpu gemm-scores', () => {
  it('scores a tile by hand (l2 and ip)', () => {
    const xq = new Float32Array([1, 0, 0, 1]); // 2 queries, d = 2
    const xb = new Float32Array([1, 1, 2, 0, 0, 3]); // 3 base vectors
    const xn = norms(xb, 3, 2); // 2, 4, 9
    const s = new Float32Array(2 * 3);
    gemmScores('l2', xq, 0, 2, xb, xn, 0, 3, 2, s, 3);
    // ||x||^2 - 2 q.x
    expect(Array.from(s)).toEqual([2 - 2, 4 - 4, 9 - 0, 2 - 2, 4 - 0, 9 - 6]);
    gemmScores('ip', xq, 0, 2, xb, xn, 0, 3, 2, s, 3);
    expect(Array.from(s)).toEqual([-1, -2, -0, -1, -0, -3]);
  });

  it('matches an ml-matrix product on a sub-tile with offsets and a wider stride', () => {
    const d = 13;
    const nq = 11;
    const nb = 29;
    const xq = randomFloats(nq * d, 1);
    const xb = randomFloats(nb * d, 2);
    const xn = norms(xb, nb, d);
    const q0 = 2;
    const rows = 7; // not a multiple of the 4-query block
    const col0 = 5;
    const cols = 20;
    const ldc = 24;
    const s = new Float32Array(rows * ldc).fill(NaN);
    gemmScores('l2', xq, q0, rows, xb, xn, col0, cols, d, s, ldc);
    const Q = new Matrix(nq, d);
    const B = new Matrix(nb, d);
    for (let i = 0; i < nq; i++) for (let j = 0; j < d; j++) Q.set(i, j, xq[i * d + j]);
    for (let i = 0; i < nb; i++) for (let j = 0; j < d; j++) B.set(i, j, xb[i * d + j]);
    const dots = Q.mmul(B.transpose());
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < ldc; c++) {
        const v = s[r * ldc + c];
        if (c >= cols) {
          expect(Number.isNaN(v), `column ${c} outside the tile must not be written`).toBe(true);
          continue;
        }
        const want = xn[col0 + c] - 2 * dots.get(q0 + r, col0 + c);
        expect(Math.abs(v - want)).toBeLessThan(1e-5 * (1 + Math.abs(want)));
      }
    }
  });
});
