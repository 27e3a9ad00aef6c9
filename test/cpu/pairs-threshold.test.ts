import { describe, expect, it } from 'vitest';
import { pairsThreshold } from '../../src/cpu/pairs-threshold.js';
import { PairList, sortTilePairs } from '../../src/common/pairs.js';
import { randomFloats } from '../../src/common/random.js';

/** Runs the twin on one tile and returns its pairs as [i, j] tuples, in the order appended. */
function run(
  metric: 'l2' | 'ip',
  scores: number[][],
  ldc: number,
  cols: number,
  q0: number,
  id0: number,
  xnormQ: number[],
  xnormB: number[],
  limit: number,
  rel: number,
  allPairs = false,
): number[][] {
  const rows = scores.length;
  const s = new Float32Array(rows * ldc);
  scores.forEach((row, r) => s.set(row, r * ldc));
  const out = new PairList(1); // room for one pair: every later push grows it
  pairsThreshold(metric, allPairs, s, ldc, rows, cols, q0, id0, new Float32Array(xnormQ), new Float32Array(xnormB), limit, rel, out);
  const v = Array.from(out.view());
  return v.filter((_, k) => k % 2 === 0).map((i, k) => [i, v[2 * k + 1]]);
}

describe('cpu pairs-threshold', () => {
  it('takes every entry at or under the limit, up to the last row and the last column of the tile', () => {
    // Rows 4..6 against columns 8..11 (right of the diagonal); ldc 5, so column 4 of each row is
    // padding beyond the tile, and must never be read as a pair.
    const scores = [
      [-1, 0, 0, -0.5, -9],
      [0, 0, 0, 0, -9],
      [0, -0.7, 0, -2, -9],
    ];
    const got = run('ip', scores, 5, 4, 4, 8, [1, 1, 1], [1, 1, 1, 1], -0.5, 0);
    // (4, 11): last column, exactly at the limit; (6, 11): last row and last column.
    expect(got).toEqual([[4, 8], [4, 11], [6, 9], [6, 11]]);
  });

  it('keeps only i < j on a tile that straddles the diagonal', () => {
    const scores = [
      [-1, -1, -1, -1],
      [-1, -1, -1, -1],
      [-1, -1, -1, -1],
    ];
    expect(run('ip', scores, 4, 4, 4, 4, [1, 1, 1], [1, 1, 1, 1], 0, 0)).toEqual([[4, 5], [4, 6], [4, 7], [5, 6], [5, 7], [6, 7]]);
  });

  it('all pairs: keeps every pair that passes, on, left of and right of the diagonal', () => {
    const scores = [
      [-1, -1, -1, -1],
      [-1, -1, -1, -1],
      [-1, 0, -1, -1],
    ];
    expect(run('ip', scores, 4, 4, 4, 4, [1, 1, 1], [1, 1, 1, 1], -0.5, 0, true)).toEqual([
      [4, 4], [4, 5], [4, 6], [4, 7], [5, 4], [5, 5], [5, 6], [5, 7], [6, 4], [6, 6], [6, 7],
    ]);
    // Rows 10..12 against columns 0..3: every pair has i > j, which only all pairs keeps.
    expect(run('ip', scores, 4, 4, 10, 0, [1, 1, 1], [1, 1, 1, 1], -0.5, 0)).toEqual([]);
    expect(run('ip', scores, 4, 4, 10, 0, [1, 1, 1], [1, 1, 1, 1], -0.5, 0, true).length).toBe(11);
  });

  it('all pairs equals a plain reference on random tiles, both metrics', () => {
    const rows = 23;
    const cols = 37;
    const ldc = 40;
    const s = randomFloats(rows * ldc, 5);
    const qn = randomFloats(rows, 6).map(Math.abs);
    const xn = randomFloats(cols, 7).map(Math.abs);
    for (const metric of ['l2', 'ip'] as const) {
      for (const [q0, id0] of [[0, 0], [30, 5], [3, 50]]) {
        const out = new PairList();
        pairsThreshold(metric, true, s, ldc, rows, cols, q0, id0, qn, xn, -0.2, 0.05, out);
        const want: number[] = [];
        for (let r = 0; r < rows; r++) {
          for (let c = 0; c < cols; c++) {
            const score = Math.fround(metric === 'l2' ? Math.fround(s[r * ldc + c] + qn[r]) : s[r * ldc + c]);
            if (score <= Math.fround(Math.fround(-0.2) + Math.fround(Math.fround(0.05) * Math.fround(qn[r] + xn[c])))) want.push(q0 + r, id0 + c);
          }
        }
        expect(want.length).toBeGreaterThan(50);
        expect(want.length).toBeLessThan(2 * rows * cols * 0.9);
        expect(Array.from(out.view()), `${metric} q0 ${q0} id0 ${id0}`).toEqual(want);
      }
    }
  });

  it('l2: adds the row norm, and the margin grows with each column norm', () => {
    // Squared distances 1, 2, 2.5, 3 (score = distance - ||q||^2); limit 1.5, rel 1/16: the bound
    // is 1.5 + (4 + xn) / 16 = 2 for xn = 4 and 8 for xn = 100. Column 1 sits exactly on the bound;
    // column 2 misses it; column 3 (the last) passes only through its own large norm.
    const got = run('l2', [[-3, -2, -1.5, -1]], 4, 4, 0, 1, [4], [4, 4, 4, 100], 1.5, 1 / 16);
    expect(got).toEqual([[0, 1], [0, 2], [0, 4]]);
  });
});

describe('pair lists', () => {
  it('a PairList grows from one pair and clears without losing its memory', () => {
    const l = new PairList(1);
    for (let p = 0; p < 5; p++) l.push(p, 10 + p);
    expect(Array.from(l.view())).toEqual([0, 10, 1, 11, 2, 12, 3, 13, 4, 14]);
    l.clear();
    l.push(7, 8);
    expect(Array.from(l.view())).toEqual([7, 8]);
  });

  it('sortTilePairs sorts by (i, j); with columnsSorted it keeps each row in input order', () => {
    const pairs = new Uint32Array([6, 9, 5, 30, 6, 7, 5, 8, 7, 9, 6, 8]);
    expect(Array.from(sortTilePairs(pairs, 5, 3, false))).toEqual([5, 8, 5, 30, 6, 7, 6, 8, 6, 9, 7, 9]);
    // Stable by row: the CPU appends each row's columns in ascending order, so no column sort.
    expect(Array.from(sortTilePairs(pairs, 5, 3, true))).toEqual([5, 30, 5, 8, 6, 9, 6, 7, 6, 8, 7, 9]);
    expect(sortTilePairs(new Uint32Array(0), 0, 4, false).length).toBe(0);
    expect(() => sortTilePairs(pairs, 6, 2, false)).toThrow(/pair 1 has row 5, outside the tile's rows \[6, 8\)/);
  });

});
