import { afterAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../src/cpu/cpu-backend.js';
import { type DedupMetric, dedup, groupPairs } from '../../src/jobs/dedup.js';
import { randomSmallInts, rng } from '../../src/random.js';
import { fioriEmbeddings } from '../helpers/embeddings.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

const gpu = await gpuBackend();
// Tiny tiles, chunks and pair buffer: the self-join crosses chunks and tiles and overflows.
const gpuTiled = await gpuBackend({ tileCols: 64, scoreTileBytes: 64 * 4 * 40, chunkRows: 250, pairCapacity: 16 });
const cpu = new CpuBackend();
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

describe('dedup', () => {
  const emb = fioriEmbeddings();
  for (const [metric, t] of [['cosine', 0.9], ['cosine', 0.95], ['cosine', 0.99], ['l2', 0.05]] as [DedupMetric, number][]) {
    const want = bruteForce(emb.x, emb.n, emb.d, metric, t);
    for (const [name, backend] of backends) {
      it.skipIf(!backend)(`real embeddings, ${metric} ${t}, ${name}: exactly the float64 brute-force pairs (${want.length})`, async () => {
        const r = await dedup(backend!, emb.x, emb.d, { metric, threshold: t });
        expect(Array.from(r.i, (a, p) => `${a},${r.j[p]}`)).toEqual(want);
        expect(r.candidates).toBeGreaterThanOrEqual(want.length);
      });
    }
  }

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
