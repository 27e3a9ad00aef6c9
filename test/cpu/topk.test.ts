import { describe, expect, it } from 'vitest';
import { topk } from '../../src/cpu/topk.js';
import { PAD_ID } from '../../src/kernel-facts.js';
import { topkMerge } from '../../src/cpu/topk-merge.js';
import { rng } from '../../src/common/random.js';

/** Full-sort oracle: the k best (score, id) of a row, ties on the smaller id. */
function oracle(scores: number[], id0: number, k: number): [number, number][] {
  const pairs = scores.map((s, c) => [s, id0 + c] as [number, number]);
  pairs.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const out = pairs.slice(0, k);
  while (out.length < k) out.push([Infinity, PAD_ID]);
  return out;
}

describe('cpu topk', () => {
  it('selects by hand, breaking ties on the smaller id and padding short segments', () => {
    const scores = new Float32Array([5, 1, 3, 1, 9, 0, 7]);
    const outS = new Float32Array(2 * 3);
    const outI = new Uint32Array(2 * 3);
    // Two segments of length 4: [5, 1, 3, 1] and [9, 0, 7]; ids start at 10.
    topk(scores, 7, 1, 7, 10, 3, 2, 4, outS, outI);
    expect(Array.from(outS)).toEqual([1, 1, 3, 0, 7, 9]);
    expect(Array.from(outI)).toEqual([11, 13, 12, 15, 16, 14]);
    topk(scores, 7, 1, 2, 10, 3, 1, 7, outS, outI);
    expect(Array.from(outS.subarray(0, 3))).toEqual([1, 5, Infinity]);
    expect(Array.from(outI.subarray(0, 3))).toEqual([11, 10, PAD_ID]);
  });

  it('agrees with a full sort on random rows with many ties', () => {
    const r = rng(7);
    for (const [cols, k, nseg] of [[100, 1, 1], [100, 10, 3], [37, 50, 2], [256, 64, 4]]) {
      const rows = 5;
      const ldc = cols + 3;
      const scores = new Float32Array(rows * ldc);
      for (let i = 0; i < scores.length; i++) scores[i] = Math.floor(r() * 20);
      const segLen = Math.ceil(cols / nseg);
      const partS = new Float32Array(rows * nseg * k);
      const partI = new Uint32Array(rows * nseg * k);
      topk(scores, ldc, rows, cols, 100, k, nseg, segLen, partS, partI);
      const runS = new Float32Array(rows * k);
      const runI = new Uint32Array(rows * k);
      topkMerge(partS, partI, rows, nseg, k, null, null, runS, runI);
      for (let row = 0; row < rows; row++) {
        const want = oracle(Array.from(scores.subarray(row * ldc, row * ldc + cols)), 100, k);
        const got = Array.from({ length: k }, (_, j) => [runS[row * k + j], runI[row * k + j]]);
        expect(got, `cols ${cols} k ${k} nseg ${nseg} row ${row}`).toEqual(want);
      }
    }
  });
});

describe('cpu topk-merge', () => {
  it('merges partial lists with a running list by hand', () => {
    const k = 3;
    const partS = new Float32Array([1, 4, Infinity, 2, 2, 8]);
    const partI = new Uint32Array([5, 6, PAD_ID, 9, 10, 11]);
    const runS = new Float32Array([0, 2, 3]);
    const runI = new Uint32Array([1, 3, 4]);
    const outS = new Float32Array(k);
    const outI = new Uint32Array(k);
    topkMerge(partS, partI, 1, 2, k, runS, runI, outS, outI);
    expect(Array.from(outS)).toEqual([0, 1, 2]);
    expect(Array.from(outI)).toEqual([1, 5, 3]);
  });
});
