import { describe, expect, it } from 'vitest';
import { paretoFront, type CompareRecord } from '../../bench/compare-report.js';
import { exactScores, scoresOfIds, tieAwareRecall, trueScore } from '../../bench/exact.js';
import { measure, percentile } from '../../bench/measure.js';
import { randomSmallInts } from '../../src/common/random.js';

// The scoring and timing pieces of `bench compare`, by hand.
describe('bench compare: exact reference and tie-aware recall', () => {
  // 1-d base: 0, 1, 1, 3, 7 (ids 1 and 2 tie); query at 0.
  const xb = Float32Array.from([0, 1, 1, 3, 7]);
  const xq = Float32Array.from([0]);

  it('exactScores lists the k best true scores, padded past n', () => {
    expect(Array.from(exactScores(xb, xq, 5, 1, 1, 3, 'l2'))).toEqual([0, 1, 1]);
    expect(Array.from(exactScores(xb, xq, 5, 1, 1, 7, 'l2'))).toEqual([0, 1, 1, 9, 49, Infinity, Infinity]);
    expect(Array.from(exactScores(xb, Float32Array.from([1]), 5, 1, 1, 2, 'ip'))).toEqual([7, 3]);
    expect(Array.from(exactScores(xb, xq, 5, 1, 1, 2, 'ip'))).toEqual([0, 0]);
  });

  it('scoresOfIds sorts the given ids by true score', () => {
    expect(Array.from(scoresOfIds(xb, xq, 1, 1, Int32Array.from([3, 0, 1]), 3, 'l2'))).toEqual([0, 1, 9]);
  });

  it('counts a tied neighbour as a hit, a worse one as a miss, a duplicate once', () => {
    const ref = exactScores(xb, xq, 5, 1, 1, 3, 'l2');
    expect(tieAwareRecall(2, Int32Array.from([0, 2, 1]), 3, ref, 3, xb, xq, 1, 'l2')).toBe(1); // 2 ties with 1
    expect(tieAwareRecall(2, Int32Array.from([0, 3, 1]), 3, ref, 3, xb, xq, 1, 'l2')).toBe(0.5);
    expect(tieAwareRecall(3, Int32Array.from([1, 1, 0]), 3, ref, 3, xb, xq, 1, 'l2')).toBeCloseTo(2 / 3, 12);
    expect(tieAwareRecall(3, Int32Array.from([0, -1, -1]), 3, ref, 3, xb, xq, 1, 'l2')).toBeCloseTo(1 / 3, 12);
    expect(tieAwareRecall(1, Int32Array.from([1, 0, 2]), 3, ref, 3, xb, xq, 1, 'l2')).toBe(0);
    expect(() => tieAwareRecall(4, Int32Array.from([0, 1, 2]), 3, ref, 3, xb, xq, 1, 'l2')).toThrow(/recall@4/);
  });

  it('counts only real reference entries when n < r', () => {
    const ref = exactScores(xb, xq, 5, 1, 1, 7, 'l2');
    expect(tieAwareRecall(7, Int32Array.from([0, 1, 2, 3, 4, -1, -1]), 7, ref, 7, xb, xq, 1, 'l2')).toBe(1);
  });

  it('agrees with a plain id-set recall when there are no ties (random data)', () => {
    const d = 5;
    const n = 200;
    const b = Float32Array.from({ length: n * d }, (_, i) => Math.sin(i * 12.9898) * 43758.5453 % 1);
    const q = b.slice(0, 4 * d).map((v) => v + 0.01);
    const k = 10;
    const ref = exactScores(b, q, n, 4, d, k, 'cosine');
    // A result that swaps the 10th neighbour for the 11th: 9 of 10 per query.
    const labels = new Int32Array(4 * k);
    for (let qi = 0; qi < 4; qi++) {
      const order = Array.from({ length: n }, (_, i) => i).sort((x, y) => trueScore(b, q, d, qi, y, 'cosine') - trueScore(b, q, d, qi, x, 'cosine'));
      labels.set([...order.slice(0, 9), order[10]], qi * k);
    }
    expect(tieAwareRecall(10, labels, k, ref, k, b, q, d, 'cosine')).toBeCloseTo(0.9, 12);
    expect(tieAwareRecall(1, labels, k, ref, k, b, q, d, 'cosine')).toBe(1);
  });

  it('integer data: the reference from ids equals the brute force', () => {
    const d = 4;
    const n = 300;
    const b = randomSmallInts(n * d, 3, 3);
    const q = randomSmallInts(5 * d, 4, 3);
    const ref = exactScores(b, q, n, 5, d, 20, 'l2');
    const ids = new Int32Array(5 * 20);
    for (let qi = 0; qi < 5; qi++) {
      const order = Array.from({ length: n }, (_, i) => i).sort((x, y) => trueScore(b, q, d, qi, x, 'l2') - trueScore(b, q, d, qi, y, 'l2'));
      ids.set(order.slice(0, 20), qi * 20);
    }
    expect(scoresOfIds(b, q, 5, d, ids, 20, 'l2')).toEqual(ref);
  });
});

describe('bench compare: timing and Pareto front', () => {
  it('nearest-rank percentiles', () => {
    const v = Array.from({ length: 100 }, (_, i) => 100 - i); // 1..100
    expect(percentile(v, 50)).toBe(50);
    expect(percentile(v, 95)).toBe(95);
    expect(percentile(v, 99)).toBe(99);
    expect(percentile([3, 1, 2], 99)).toBe(3);
    expect(percentile([5], 50)).toBe(5);
  });

  it('measure times every batch of every timed pass and keeps the last pass labels', async () => {
    const calls: number[] = [];
    const xq = Float32Array.from({ length: 7 * 2 }, (_, i) => i);
    const m = await measure((q, nb) => {
      calls.push(nb);
      return Int32Array.from({ length: nb * 3 }, (_, i) => q[0] * 100 + i);
    }, xq, 7, 2, 3, { batch: 3, warmup: 1, repeats: 2 });
    expect(calls).toEqual([3, 3, 1, 3, 3, 1, 3, 3, 1]);
    expect(m.batchMs).toHaveLength(6);
    expect(m.passSeconds).toHaveLength(2);
    expect(m.labels[0]).toBe(0);
    expect(m.labels[3 * 3]).toBe(6 * 100); // batch 2 starts at query 3, whose first float is 6
    await expect(measure(() => new Int32Array(1), xq, 7, 2, 3, { batch: 3, warmup: 0, repeats: 1 })).rejects.toThrow(/expected 9/);
  });

  it('the Pareto front keeps what no other row beats on both recall and queries/s', () => {
    const rec = (recall10: number, qps: number) => ({ recall1: recall10, recall10, qps }) as CompareRecord;
    expect(paretoFront([rec(0.5, 100), rec(0.9, 50), rec(0.8, 40), rec(0.9, 60), rec(1, 10)])).toEqual([true, false, false, true, true]);
    expect(paretoFront([rec(1, 10), rec(1, 10)])).toEqual([true, true]);
    // Each batch size has its own front: a batch-1 row is not beaten by the batch-100 rows' throughput.
    const at = (recall10: number, qps: number, batch: number) => ({ ...rec(recall10, qps), batch }) as CompareRecord;
    expect(paretoFront([at(0.9, 100, 100), at(0.95, 5, 1), at(1, 50, 100), at(0.9, 4, 1)])).toEqual([true, true, true, false]);
  });
});
