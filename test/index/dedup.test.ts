import { afterAll, describe, expect, it } from 'vitest';
import { cpuBackend } from '../helpers/cpu.js';
import { type DedupMetric, dedup, groupPairs } from '../../src/jobs/dedup.js';
import { randomSmallInts, rng } from '../../src/common/random.js';
import { fioriEmbeddings } from '../helpers/embeddings.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { type VectorSource, arraySource } from '../../src/common/vector-source.js';

const gpu = await gpuBackend();
// Tiny tiles, chunks and pair buffer: the self-join crosses chunks and tiles and overflows.
const gpuTiled = await gpuBackend({ tileCols: 64, scoreTileBytes: 64 * 4 * 40, chunkRows: 250, pairCapacity: 16 });
const cpu = cpuBackend();
afterAll(disposeGpuBackends);

/** Float64 brute force over all pairs: "i,j" keys of the pairs at or past the threshold. */
function bruteForce(x: Float32Array, n: number, d: number, metric: DedupMetric, t: number): string[] {
  const norms = new Float64Array(n);
  for (let a = 0; a < n; a++) for (let k = 0; k < d; k++) norms[a] += x[a * d + k] ** 2;
  const out: string[] = [];
  for (let a = 0; a < n; a++) {
    for (let b = a + 1; b < n; b++) {
      let s = 0;
      if (metric === 'cosine') {
        for (let k = 0; k < d; k++) s += x[a * d + k] * x[b * d + k];
        const den = Math.sqrt(norms[a]) * Math.sqrt(norms[b]);
        if ((den > 0 ? s / den : 0) >= t) out.push(`${a},${b}`);
      } else {
        for (let k = 0; k < d; k++) s += (x[a * d + k] - x[b * d + k]) ** 2;
        if (s <= t) out.push(`${a},${b}`);
      }
    }
  }
  return out;
}

const backends = [['cpu', cpu], ['webgpu', gpu], ['webgpu (tiny tiles)', gpuTiled]] as const;

/** Pairs as "i,j" keys, in result order. */
const keys = (r: { i: Uint32Array; j: Uint32Array }): string[] => Array.from(r.i, (a, p) => `${a},${r.j[p]}`);

/**
 * The real embeddings with rows overwritten by copies of others turned to an exact cosine: for each
 * [a, b, c], row b becomes row a rotated (in float64, then stored as float32) to cosine c.
 */
function plantCosines(x0: Float32Array, d: number, plants: [number, number, number][], seed: number): Float32Array {
  const x = x0.slice();
  const r = rng(seed);
  for (const [a, b, c] of plants) {
    const va = Array.from(x.subarray(a * d, (a + 1) * d));
    const na = Math.hypot(...va);
    const ah = va.map((v) => v / na);
    // A random unit direction orthogonal to a.
    const u = ah.map(() => r() - 0.5);
    const dot = u.reduce((s, v, k) => s + v * ah[k], 0);
    for (let k = 0; k < d; k++) u[k] -= dot * ah[k];
    const nu = Math.hypot(...u);
    for (let k = 0; k < d; k++) x[b * d + k] = na * (c * ah[k] + Math.sqrt(1 - c * c) * (u[k] / nu));
  }
  return x;
}

describe('dedup', () => {
  const emb = fioriEmbeddings();
  // The real set has no pair at cosine 0.99: plant some just above it, and some just below it but
  // within the float32 margin (about 1.9e-4 at d = 384), which the exact check must reject.
  const above: [number, number, number][] = [[3, 400, 0.9901], [100, 101, 0.995], [500, 777, 0.9902]];
  const below: [number, number, number][] = [[7, 300, 0.9899], [250, 600, 0.98995]];
  const planted = plantCosines(emb.x, emb.d, [...above, ...below], 99);
  const cases: [DedupMetric, number, Float32Array, string[] | null][] = [
    ['cosine', 0.9, emb.x, null],
    ['cosine', 0.95, emb.x, null],
    ['cosine', 0.99, planted, ['3,400', '100,101', '500,777']],
    ['l2', 0.05, emb.x, null],
  ];
  for (const [metric, t, x, expected] of cases) {
    const want = bruteForce(x, emb.n, emb.d, metric, t);
    if (expected) {
      it(`planted cosines around ${t}: brute force finds exactly the pairs planted above it`, () => {
        expect(want).toEqual(expected);
      });
    }
    for (const [name, backend] of backends) {
      it.skipIf(!backend)(`real embeddings${expected ? ' with planted pairs' : ''}, ${metric} ${t}, ${name}: exactly the float64 brute-force pairs (${want.length})`, async () => {
        const r = await dedup(backend!, x, emb.d, { metric, threshold: t });
        expect(keys(r)).toEqual(expected ?? want);
        expect(r.candidates).toBeGreaterThanOrEqual(want.length + (expected ? below.length : 0));
      });
    }
  }

  it('from a source read in blocks (even, then uneven): the same pairs and scores as from the array', async () => {
    const t = 0.99;
    const want = await dedup(cpu, planted, emb.d, { metric: 'cosine', threshold: t });
    expect(keys(want)).toEqual(['3,400', '100,101', '500,777']);
    const even = await dedup(cpu, arraySource(planted, emb.d, 50), emb.d, { metric: 'cosine', threshold: t });
    // Blocks of 1, 2, 3, ... rows: the rows' blocks are found by search, not by division.
    const uneven: VectorSource = {
      rows: emb.n,
      dim: emb.d,
      async *blocks() {
        for (let r0 = 0, size = 1; r0 < emb.n; r0 += size, size++) {
          const rows = Math.min(size, emb.n - r0);
          yield { data: planted.slice(r0 * emb.d, (r0 + rows) * emb.d), rows };
        }
      },
    };
    const bumpy = await dedup(cpu, uneven, emb.d, { metric: 'l2', threshold: 0.05 });
    const bumpyWant = await dedup(cpu, planted, emb.d, { metric: 'l2', threshold: 0.05 });
    for (const [got, exp] of [[even, want], [bumpy, bumpyWant]]) {
      expect(keys(got)).toEqual(keys(exp));
      expect(Array.from(got.score)).toEqual(Array.from(exp.score));
    }
    expect(bumpyWant.pairs).toBeGreaterThan(0);
  });

  it('finds 14 pairs above cosine 0.95 in the real embeddings (as their package documents)', async () => {
    const r = await dedup(cpu, emb.x, emb.d, { metric: 'cosine', threshold: 0.95 });
    expect(r.i.length).toBe(14);
  });

  // Planted: small-integer vectors; copies, and neighbours at squared distance exactly 2 and 3.
  const d = 12;
  const n = 700;
  const x = randomSmallInts(n * d, 5, 40);
  const r = rng(6);
  for (let p = 0; p < 60; p++) {
    const a = Math.floor(r() * n);
    const b = Math.floor(r() * n);
    if (a === b) continue;
    x.set(x.subarray(a * d, (a + 1) * d), b * d);
    const kind = p % 3; // 0: copy, 1: +1 on two coordinates (distance 2), 2: +1 on three (distance 3)
    for (let k = 0; k < kind + (kind > 0 ? 1 : 0); k++) x[b * d + k] += 1;
  }
  // A block of 100 identical rows: 4950 pairs, far past the tiny backend's 16-pair buffer.
  for (let b = 300; b < 400; b++) x.set(x.subarray(299 * d, 300 * d), b * d);
  const want = bruteForce(x, n, d, 'l2', 2);
  for (const [name, backend] of backends) {
    it.skipIf(!backend)(`planted duplicates, squared L2 <= 2 (pairs exactly at the threshold count), ${name}`, async () => {
      const progress: number[] = [];
      const res = await dedup(backend!, x, d, { metric: 'l2', threshold: 2, onProgress: (p) => progress.push(p.rowsDone) });
      expect(Array.from(res.i, (a, p) => `${a},${res.j[p]}`)).toEqual(want);
      expect(res.score.every((s) => s <= 2)).toBe(true);
      expect(res.score.some((s) => s === 2)).toBe(true);
      expect(progress[progress.length - 1]).toBe(n);
      const big = res.clusters.find((c) => c.includes(300))!;
      expect(big[0]).toBeLessThanOrEqual(299);
      expect(res.drop.includes(big[0])).toBe(false);
    });
  }

  // Tile edges of the CPU self-join (64 rows by 4096 columns): pairs in the last column of a
  // column tile (4095, 8191), in the last row of a row tile (4095) and across a column boundary.
  {
    const n = 8200;
    const d = 12;
    const x = randomSmallInts(n * d, 11, 40);
    const copy = (from: number, to: number, bump: number[]): void => {
      x.set(x.subarray(from * d, (from + 1) * d), to * d);
      for (const k of bump) x[to * d + k] += 1;
    };
    copy(0, 4095, []); // (0, 4095): distance 0
    copy(4095, 4096, [3]); // (4095, 4096) and (0, 4096): distance 1
    copy(10, 8191, [0, 5]); // (10, 8191): distance 2
    // (30, 31): distance 2, in column tile 0 but after rows 0 and 10's pairs in column tile 1 are
    // appended, so the row tile's pairs must be sorted by (i, j) before they are handed on.
    copy(30, 31, [1, 2]);
    const want = ['0,4095', '0,4096', '10,8191', '30,31', '4095,4096'];
    for (const [name, backend] of [['cpu', cpu], ['webgpu', gpu]] as const) {
      it.skipIf(!backend)(`pairs on tile edges over ${n} rows, squared L2 <= 2, ${name}`, async () => {
        const res = await dedup(backend!, x, d, { metric: 'l2', threshold: 2 });
        expect(keys(res)).toEqual(want);
        expect(Array.from(res.score)).toEqual([0, 1, 2, 2, 1]);
        expect(res.clusters).toEqual([[0, 4095, 4096], [10, 8191], [30, 31]]);
      });
    }
  }

  // The exact check: hand-built sets whose float32 candidates include pairs just past the threshold
  // (within the margin), which the float64 check must reject, and pairs exactly on the threshold,
  // which it must keep (cosine >=, l2 <=). Every value below is exact in float64.
  const exactCases: { what: string; metric: DedupMetric; d: number; rows: number[][]; t: number; pairs: string[]; scores: number[]; candidates: number }[] = [
    {
      // 9 and 10, with norms near 1e6 and 4e6 (margin about 3 and 11): both are candidates.
      what: 'l2 on the threshold kept (<=), one unit past it rejected',
      metric: 'l2', d: 2, rows: [[1000, 0], [1000, 3], [0, 2000], [1, 2003]], t: 9,
      pairs: ['0,1'], scores: [9], candidates: 2,
    },
    {
      // In float32 the threshold rounds to 10, which a float32 check would accept.
      what: 'l2 threshold 10 - 1e-9: the pair at 10 rejected',
      metric: 'l2', d: 2, rows: [[1000, 0], [1000, 3], [0, 2000], [1, 2003]], t: 10 - 1e-9,
      pairs: ['0,1'], scores: [9], candidates: 2,
    },
    {
      // 4096^2 + 1 = 16777217 rounds to 16777216 in float32: only float64 sees it is past 2^24.
      what: 'l2 threshold 2^24: 2^24 + 1 rejected, 2^24 kept',
      metric: 'l2', d: 2, rows: [[0, 0], [4096, 1], [-4096, 0]], t: 2 ** 24,
      pairs: ['0,2'], scores: [2 ** 24], candidates: 2,
    },
    {
      // 3-4-5 triangles in two orthogonal planes: cosines 15/25 = 0.6, 20/25 = 0.8, and 0 across.
      what: 'cosine on the threshold 0.6 kept (>=)',
      metric: 'cosine', d: 4, rows: [[5, 0, 0, 0], [3, 4, 0, 0], [0, 0, 5, 0], [0, 0, 4, 3]], t: 0.6,
      pairs: ['0,1', '2,3'], scores: [0.6, 0.8], candidates: 2,
    },
    {
      // 0.6 is within the margin of 0.6 + 1e-12 (so a candidate), and rounds up in float32.
      what: 'cosine threshold 0.6 + 1e-12: the pair at 0.6 rejected',
      metric: 'cosine', d: 4, rows: [[5, 0, 0, 0], [3, 4, 0, 0], [0, 0, 5, 0], [0, 0, 4, 3]], t: 0.6 + 1e-12,
      pairs: ['2,3'], scores: [0.8], candidates: 2,
    },
    {
      what: 'cosine on the threshold 0.8 kept (>=), 0.6 far below it',
      metric: 'cosine', d: 4, rows: [[5, 0, 0, 0], [3, 4, 0, 0], [0, 0, 5, 0], [0, 0, 4, 3]], t: 0.8,
      pairs: ['2,3'], scores: [0.8], candidates: 1,
    },
    {
      what: 'cosine threshold 0: orthogonal pairs (cosine exactly 0) kept',
      metric: 'cosine', d: 4, rows: [[5, 0, 0, 0], [3, 4, 0, 0], [0, 0, 5, 0], [0, 0, 4, 3]], t: 0,
      pairs: ['0,1', '0,2', '0,3', '1,2', '1,3', '2,3'], scores: [0.6, 0, 0, 0, 0, 0.8], candidates: 6,
    },
  ];
  for (const c of exactCases) {
    for (const [name, backend] of backends) {
      it.skipIf(!backend)(`exact check: ${c.what}, ${name}`, async () => {
        const res = await dedup(backend!, new Float32Array(c.rows.flat()), c.d, { metric: c.metric, threshold: c.t });
        expect(keys(res)).toEqual(c.pairs);
        expect(Array.from(res.score)).toEqual(c.scores);
        expect(res.candidates).toBe(c.candidates);
      });
    }
  }

  // 300 identical rows: 44850 pairs, every one a candidate and a confirmed pair.
  {
    const d = 4;
    const n = 300;
    const x = new Float32Array(n * d).fill(1);
    const all = (n * (n - 1)) / 2;
    for (const [name, backend] of backends) {
      it.skipIf(!backend)(`maxCandidates and maxPairs: exactly the bound passes, one less is a clear error, ${name}`, async () => {
        const ok = await dedup(backend!, x, d, { metric: 'l2', threshold: 0, maxCandidates: all, maxPairs: all });
        expect([ok.i.length, ok.candidates, ok.clusters.length, ok.drop.length]).toEqual([all, all, 1, n - 1]);
        await expect(dedup(backend!, x, d, { metric: 'l2', threshold: 0, maxCandidates: all - 1 })).rejects.toThrow(
          new RegExp(`^the threshold lets through more than ${all - 1} candidate pairs \\(at row \\d+ of 300\\); use a stricter threshold or raise maxCandidates \\(the CLI's --max-candidates\\)$`),
        );
        await expect(dedup(backend!, x, d, { metric: 'l2', threshold: 0, maxPairs: all - 1 })).rejects.toThrow(
          new RegExp(`^the threshold matches more than ${all - 1} pairs \\(at row \\d+ of 300\\); use a stricter threshold, raise maxPairs, or take the pairs as they come with onPairs$`),
        );
        // The backend is still usable after a join stopped midway.
        expect((await dedup(backend!, x.subarray(0, 3 * d), d, { metric: 'l2', threshold: 0 })).i.length).toBe(3);
      });
    }
  }

  it('rejects bad maxCandidates and maxPairs', async () => {
    const v = new Float32Array(4);
    await expect(dedup(cpu, v, 2, { metric: 'l2', threshold: 0, maxCandidates: -1 })).rejects.toThrow(/maxCandidates must be a non-negative integer or Infinity; got -1/);
    await expect(dedup(cpu, v, 2, { metric: 'l2', threshold: 0, maxCandidates: 1.5 })).rejects.toThrow(/maxCandidates must be a non-negative integer or Infinity; got 1.5/);
    await expect(dedup(cpu, v, 2, { metric: 'l2', threshold: 0, maxPairs: NaN })).rejects.toThrow(/maxPairs must be a non-negative integer or Infinity; got NaN/);
    expect((await dedup(cpu, v, 2, { metric: 'l2', threshold: 0, maxCandidates: Infinity, maxPairs: Infinity })).i.length).toBe(1);
  });

  it('cosine threshold 1: every exact duplicate and no near copy, even at d = 384', async () => {
    // q.x / (|q| |x|) in float64 puts identical 384-d rows below 1 (pairs lost) and near copies at
    // or above it (pairs added) about a third of the time; the exact check must not.
    const d = 384;
    const m = 60; // 60 rows, each followed by an exact copy (even t) or a copy moved by 2e-7 (odd t)
    const x = new Float32Array(2 * m * d);
    for (let t = 0; t < m; t++) {
      const r = rng(900 + t);
      for (let c = 0; c < d; c++) x[2 * t * d + c] = r() - 0.5;
      x.set(x.subarray(2 * t * d, (2 * t + 1) * d), (2 * t + 1) * d);
      if (t % 2 === 1) x[(2 * t + 1) * d + (t % d)] = Math.fround(x[(2 * t + 1) * d + (t % d)] * (1 + 2e-7));
    }
    const r = await dedup(cpu, x, d, { metric: 'cosine', threshold: 1 });
    const want = Array.from({ length: m / 2 }, (_, h) => `${4 * h},${4 * h + 1}`);
    expect(Array.from(r.i, (i, p) => `${i},${r.j[p]}`)).toEqual(want);
    expect(Array.from(r.score)).toEqual(new Array(m / 2).fill(1));
  });

  it('onPairs streams the confirmed pairs block by block, in order, and keeps none', async () => {
    // 300 rows in groups of 4, moved by 0, 0.5, 1, 1.5 in column 0: 5 of each group's 6 pairs are
    // within l2 2 (the pair 1.5 apart is at 2.25), over several row tiles (64 rows).
    const d = 5;
    const x = new Float32Array(300 * d);
    for (let r = 0; r < 300; r++) for (let t = 0; t < d; t++) x[r * d + t] = 10 * Math.floor(r / 4) + (t === 0 ? r % 4 : 0) * 0.5;
    const tiled = cpuBackend({ tileCols: 64, scoreTileBytes: 64 * 4 * 64 });
    const collected = await dedup(tiled, x, d, { metric: 'l2', threshold: 2 });
    const blocks: number[] = [];
    const is: number[] = [];
    const js: number[] = [];
    const scores: number[] = [];
    const streamed = await dedup(tiled, x, d, {
      metric: 'l2',
      threshold: 2,
      maxPairs: 0, // does not apply when nothing is kept
      onPairs: (i, j, score) => {
        blocks.push(i.length);
        is.push(...i);
        js.push(...j);
        scores.push(...score);
      },
    });
    expect(collected.pairs).toBe(collected.i.length);
    expect(collected.pairs).toBe(75 * 5);
    expect(blocks.length).toBeGreaterThan(1);
    expect(streamed.pairs).toBe(collected.pairs);
    expect([streamed.i.length, streamed.j.length, streamed.score.length]).toEqual([0, 0, 0]);
    expect(is).toEqual(Array.from(collected.i));
    expect(js).toEqual(Array.from(collected.j));
    expect(scores).toEqual(Array.from(collected.score));
    expect(streamed.clusters).toEqual(collected.clusters);
    expect(Array.from(streamed.drop)).toEqual(Array.from(collected.drop));
    expect(streamed.clusters.length).toBe(75);
  });

  it('groups pairs into clusters with the lowest id kept', () => {
    const g = groupPairs(10, [5, 1, 2, 7], [9, 2, 8, 8]);
    expect(g.clusters).toEqual([[1, 2, 7, 8], [5, 9]]);
    expect(Array.from(g.drop)).toEqual([2, 7, 8, 9]);
  });

  it('rejects bad thresholds and metrics', async () => {
    const v = new Float32Array(4);
    await expect(dedup(cpu, v, 2, { metric: 'cosine', threshold: 1.5 })).rejects.toThrow(/cosine threshold must be in \[-1, 1\]; got 1.5/);
    await expect(dedup(cpu, v, 2, { metric: 'l2', threshold: -1 })).rejects.toThrow(/squared-L2 threshold must be >= 0; got -1/);
    await expect(dedup(cpu, v, 2, { metric: 'dot' as DedupMetric, threshold: 0 })).rejects.toThrow(/metric must be cosine or l2; got dot/);
    await expect(dedup(cpu, v, 3, { metric: 'l2', threshold: 1 })).rejects.toThrow(/vectors has length 4, which is not a multiple of dim 3/);
  });
});
