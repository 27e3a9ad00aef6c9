import { describe, expect, it } from 'vitest';
import { kmeansBlocks, kmeansPartial, kmeansReduce } from '../../src/cpu/kmeans-update.js';
import { ivfScan } from '../../src/cpu/ivf-scan.js';
import { PAD_ID } from '../../src/kernel-facts.js';

describe('cpu kmeans-update', () => {
  it('sums, counts and averages by hand, leaving an empty centroid alone', () => {
    // 5 points in 2-d, 3 centroids, blocks of 2 points; centroid 2 gets no points.
    const x = new Float32Array([1, 0, 3, 0, 0, 2, 0, 4, 5, 5]);
    const xnorm = new Float32Array([1, 9, 4, 16, 50]);
    const label = new Uint32Array([0, 0, 1, 1, 0]);
    // Minimised scores: ||c||^2 - 2 x.c; the objective adds ||x||^2 back.
    const score = new Float32Array([-1, -1, -3, -3, 2]);
    const nblocks = 3;
    const sums = new Float32Array(nblocks * 3 * 2);
    const counts = new Uint32Array(nblocks * 3);
    const obj = new Float32Array(nblocks);
    kmeansPartial(x, xnorm, score, label, 5, 0, 2, 3, 2, sums, counts, obj);
    expect(Array.from(counts)).toEqual([2, 0, 0, 0, 2, 0, 1, 0, 0]);
    expect(Array.from(obj)).toEqual([0 + 8, 1 + 13, 52]);
    const centroids = new Float32Array([9, 9, 9, 9, 7, 7]);
    const outCounts = new Uint32Array(3);
    kmeansReduce(sums, counts, 3, 2, nblocks, centroids, outCounts);
    expect(Array.from(centroids)).toEqual([3, Math.fround(5 / 3), 0, 3, 7, 7]);
    expect(Array.from(outCounts)).toEqual([3, 2, 0]);
  });

  it('sizes blocks from the problem alone', () => {
    expect(kmeansBlocks(100, 4, 8)).toEqual({ block: 100, nblocks: 1 });
    const b = kmeansBlocks(100_000, 1024, 128);
    expect(b.nblocks).toBe(64);
    expect(b.block * b.nblocks).toBeGreaterThanOrEqual(100_000);
  });
});

describe('cpu ivf-scan', () => {
  it('scans the probed lists by hand, with segments and padding', () => {
    // d = 1; list 0 = ids [7, 8] (x = 1, 3), list 1 = ids [9] (x = 10), list 2 empty.
    // The lists' ranges, then the probes (from word 6): lists 1, 0, 2 (nprobe = 3).
    const lists = new Uint32Array([0, 2, 2, 3, 3, 3, 1, 0, 2]);
    const xb = new Float32Array([1, 3, 10]);
    const xnorm = new Float32Array([1, 9, 100]);
    const ids = new Uint32Array([7, 8, 9]);
    const xq = new Float32Array([2]);
    const k = 2;
    const outS = new Float32Array(3 * 2 * k);
    const outI = new Uint32Array(3 * 2 * k);
    ivfScan('l2', xq, 0, 1, lists, 6, 3, 2, xb, null, xnorm, ids, null, 0, 1, k, outS, outI);
    // l2 scores ||x||^2 - 2 q x: id 7 -> -3, id 8 -> -3, id 9 -> 60.
    expect(Array.from(outI)).toEqual([9, PAD_ID, PAD_ID, PAD_ID, 7, PAD_ID, 8, PAD_ID, PAD_ID, PAD_ID, PAD_ID, PAD_ID]);
    expect(Array.from(outS.subarray(0, 8))).toEqual([60, Infinity, Infinity, Infinity, -3, Infinity, -3, Infinity]);
  });
});
