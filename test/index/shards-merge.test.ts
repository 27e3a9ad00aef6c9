/**
 * The merge of shards' top-k (src/indexes/shards.ts): by the exact float64 scores, so that distances equal
 * in float32 are still ordered as one index orders them; and a library-level split of an index
 * into three, merged, equals the index.
 */
import { describe, expect, it } from 'vitest';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { randomFloats } from '../../src/common/random.js';
import { mergeTopK } from '../../src/indexes/shards.js';
import { cpuBackend } from '../helpers/cpu.js';

describe('mergeTopK', () => {
  it('orders by the exact scores, not by float32 distances that tie, then by id; padding last', () => {
    // Ids 3 and 5 both report distance 1 (float32), but 5 is nearer in float64.
    const a = { labels: Float64Array.of(3, -1), distances: Float32Array.of(1, Infinity), scores: Float64Array.of(1 + 2e-9, Infinity) };
    const b = { labels: Float64Array.of(5, 9), distances: Float32Array.of(1, 2), scores: Float64Array.of(1 + 1e-9, 2) };
    expect(Math.fround(1 + 2e-9)).toBe(Math.fround(1 + 1e-9));
    const m = mergeTopK([a, b], 1, 2, 'l2');
    expect(Array.from(m.labels)).toEqual([5, 3]);
    expect(Array.from(m.scores)).toEqual([1 + 1e-9, 1 + 2e-9]);
    // Equal scores: the smaller id first; fewer results than k: padded.
    const c = { labels: Float64Array.of(7, -1), distances: Float32Array.of(-0.5, -Infinity), scores: Float64Array.of(0.5, Infinity) };
    const e = { labels: Float64Array.of(2, -1), distances: Float32Array.of(-0.5, -Infinity), scores: Float64Array.of(0.5, Infinity) };
    const ip = mergeTopK([c, e], 1, 3, 'ip');
    expect(Array.from(ip.labels)).toEqual([2, 7, -1]);
    expect(Array.from(ip.distances)).toEqual([-0.5, -0.5, -Infinity]);
  });

  for (const metric of ['l2', 'ip', 'cosine'] as const) {
    it(`three Flat shards searched with exactScores and merged equal one Flat index (${metric})`, async () => {
      const backend = cpuBackend();
      const n = 900;
      const d = 24;
      const nq = 40;
      const k = 12;
      const x = randomFloats(n * d, 5);
      // Copies across shards: exact ties broken by id.
      for (const [from, to] of [[10, 700], [20, 400], [450, 899]]) x.set(x.subarray(from * d, (from + 1) * d), to * d);
      const xq = x.slice(0, nq * d);
      const one = new FlatIndex(backend, { dim: d, metric });
      await one.add(x);
      const want = await one.search(xq, k);
      const parts = [];
      for (const [r0, r1] of [[0, 300], [300, 600], [600, 900]]) {
        const shard = new FlatIndex(backend, { dim: d, metric });
        await shard.addWithIds(x.subarray(r0 * d, r1 * d), BigInt64Array.from({ length: r1 - r0 }, (_, i) => BigInt(r0 + i)));
        const r = await shard.search(xq, k, { exactScores: true });
        expect(r.scores).toBeInstanceOf(Float64Array);
        parts.push({ labels: r.labels, distances: r.distances, scores: r.scores! });
      }
      const got = mergeTopK(parts, nq, k, metric);
      expect(Array.from(got.labels)).toEqual(Array.from(want.labels));
      expect(Array.from(got.distances)).toEqual(Array.from(want.distances));
      expect((await one.search(xq, k)).scores, 'scores only when asked for').toBeUndefined();
    });
  }
});
