import { afterAll, describe, expect, it } from 'vitest';
import { cpuBackend } from '../helpers/cpu.js';
import { KMeans } from '../../src/codecs/kmeans.js';
import { randomSmallInts, rng } from '../../src/common/random.js';
import { normalizeRows } from '../../src/types.js';
import { clusteredData } from '../helpers/clustered.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { InvalidArgumentError } from '../../src/errors.js';

const gpu = await gpuBackend();
const cpu = cpuBackend();
afterAll(disposeGpuBackends);

async function run(backend: KMeans['backend'], x: Float32Array, d: number, k: number, niter: number, init: 'random' | 'kmeans++' = 'random') {
  const km = new KMeans(backend, { dim: d });
  const objectives: number[] = [];
  const result = await km.train(x, { k, niter, seed: 7, init, onProgress: (p) => objectives.push(p.objective) });
  return { ...result, progress: objectives };
}

/**
 * `n` rows of inner-product data: `k` random directions, each row one of them plus a little noise,
 * scaled by a norm between 0.5 and 4 (so that a centroid's norm, not only its direction, would
 * sway an inner-product assignment).
 */
function directions(n: number, d: number, k: number, seed: number): Float32Array {
  const r = rng(seed);
  const axes = normalizeRows(Float32Array.from({ length: k * d }, () => r() - 0.5), d);
  const x = new Float32Array(n * d);
  for (let i = 0; i < n; i++) {
    const a = Math.floor(r() * k);
    const scale = 0.5 + 3.5 * r();
    for (let j = 0; j < d; j++) x[i * d + j] = scale * (axes[a * d + j] + 0.05 * (r() - 0.5));
  }
  return x;
}

/** Every objective no larger than the one before, up to float32 rounding of the sum. */
function expectNonIncreasing(objective: number[], what: string): void {
  for (let i = 1; i < objective.length; i++) {
    expect(objective[i], `${what}: iteration ${i + 1}`).toBeLessThanOrEqual(objective[i - 1] * (1 + 1e-6));
  }
}

describe('KMeans', () => {
  for (const [name, backend] of [['cpu', cpu], ['webgpu', gpu]] as const) {
    it.skipIf(!backend)(`${name}: objective never increases and progress reports every iteration`, async () => {
      const x = clusteredData(3000, 12, 20, 1, 0.3);
      const r = await run(backend!, x, 12, 16, 8, 'kmeans++');
      expect(r.progress).toEqual(r.objective);
      expect(r.objective).toHaveLength(8);
      expectNonIncreasing(r.objective, name);
      expect(r.objective[7]).toBeLessThan(r.objective[0]);
    });

    it.skipIf(!backend)(`${name}: is deterministic for a seed`, async () => {
      const x = clusteredData(1000, 6, 8, 2);
      const a = await run(backend!, x, 6, 8, 4);
      const b = await run(backend!, x, 6, 8, 4);
      expect(Array.from(a.centroids)).toEqual(Array.from(b.centroids));
    });

    it.skipIf(!backend)(`${name}: repairs empty clusters by splitting large ones`, async () => {
      // 40 points on 4 distinct values and 10 centroids drawn from them: at most 4 distinct
      // centroids to start with, so most clusters are empty after the first assignment.
      // (Not at the origin: the split is a relative perturbation, as in Faiss, and cannot move 0.)
      const x = new Float32Array(40 * 2);
      for (let i = 0; i < 40; i++) x.set([(i % 4) + 1, (i % 4) * 2 + 1], i * 2);
      const km = new KMeans(backend!, { dim: 2 });
      const repaired: number[] = [];
      const r = await km.train(x, { k: 10, niter: 3, seed: 7, onProgress: (p) => repaired.push(p.repaired) });
      expect(repaired[0]).toBeGreaterThanOrEqual(6);
      const distinct = new Set<string>();
      for (let c = 0; c < 10; c++) distinct.add(`${r.centroids[2 * c]},${r.centroids[2 * c + 1]}`);
      // Split copies sit a relative 1/1024 apart; two splitting paths can meet (v(1+e)(1-e) twice).
      expect(distinct.size).toBeGreaterThan(4);
    });

    it.skipIf(!backend)(`${name}: rejects bad input`, async () => {
      const km = new KMeans(backend!, { dim: 2 });
      const x = new Float32Array([0, 0, 1, 1, 2, 2]);
      await expect(km.train(x, { k: 4 })).rejects.toThrow(/needs at least k = 4 training points; got 3/);
      await expect(km.train(x, { k: 0 })).rejects.toThrow(/k \(number of centroids\) must be an integer >= 1; got 0/);
      await expect(km.train(new Float32Array([0, NaN, 1, 1]), { k: 1 })).rejects.toThrow(/xt row 0 has a non-finite value \(NaN\)/);
      await expect(km.train(x, { k: 2, init: 'best' as 'random' })).rejects.toBeInstanceOf(InvalidArgumentError);
    });
  }

  for (const [name, backend] of [['cpu', cpu], ['webgpu', gpu]] as const) {
    it.skipIf(!backend)(`${name}: spherical (Faiss's, for inner-product IVF): unit-norm centroids, each the normalised mean of the points whose largest inner product is with it`, async () => {
      const d = 8;
      const k = 6;
      const x = directions(1200, d, k, 21);
      const km = new KMeans(backend!, { dim: d });
      const r = await km.train(x, { k, niter: 12, seed: 7, spherical: true });
      const c = r.centroids;
      for (let ci = 0; ci < k; ci++) {
        let s = 0;
        for (let j = 0; j < d; j++) s += c[ci * d + j] ** 2;
        expect(Math.abs(Math.sqrt(s) - 1), `centroid ${ci}`).toBeLessThan(1e-6);
      }
      // Converged on these separated directions: one more step (largest inner product, then the
      // normalised mean) leaves every centroid where it is.
      const sums = new Float64Array(k * d);
      for (let i = 0; i < x.length / d; i++) {
        let best = 0;
        let bestIp = -Infinity;
        for (let ci = 0; ci < k; ci++) {
          let ip = 0;
          for (let j = 0; j < d; j++) ip += x[i * d + j] * c[ci * d + j];
          if (ip > bestIp) [best, bestIp] = [ci, ip];
        }
        for (let j = 0; j < d; j++) sums[best * d + j] += x[i * d + j];
      }
      for (let ci = 0; ci < k; ci++) {
        const norm = Math.hypot(...sums.subarray(ci * d, (ci + 1) * d));
        for (let j = 0; j < d; j++) expect(Math.abs(sums[ci * d + j] / norm - c[ci * d + j]), `centroid ${ci} column ${j}`).toBeLessThan(1e-5);
      }
    });
  }

  it.skipIf(!gpu)('GPU and CPU agree from the same init, spherical: float data over several iterations', async () => {
    const x = directions(4000, 16, 12, 4);
    const train = (backend: KMeans['backend']) => new KMeans(backend, { dim: 16 }).train(x, { k: 12, niter: 6, seed: 7, spherical: true });
    const [g, c] = [await train(gpu!), await train(cpu)];
    for (let i = 0; i < c.objective.length; i++) expect(Math.abs(g.objective[i] - c.objective[i])).toBeLessThanOrEqual(1e-4 * c.objective[i]);
    for (let i = 0; i < c.centroids.length; i++) expect(Math.abs(g.centroids[i] - c.centroids[i])).toBeLessThanOrEqual(1e-5);
  });

  it.skipIf(!gpu)('GPU and CPU agree from the same init: small integers after one iteration', async () => {
    const x = randomSmallInts(2000 * 9, 3);
    const [g, c] = [await run(gpu!, x, 9, 30, 1), await run(cpu, x, 9, 30, 1)];
    // Integer data and integer initial centroids: the assignment and sums are exact on both.
    expect(g.objective).toEqual(c.objective);
    for (let i = 0; i < c.centroids.length; i++) {
      expect(Math.abs(g.centroids[i] - c.centroids[i])).toBeLessThanOrEqual(2 ** -22 * Math.abs(c.centroids[i]));
    }
  });

  it.skipIf(!gpu)('GPU and CPU agree from the same init: float data over several iterations', async () => {
    const x = clusteredData(4000, 16, 12, 4);
    const [g, c] = [await run(gpu!, x, 16, 12, 6), await run(cpu, x, 16, 12, 6)];
    for (let i = 0; i < c.objective.length; i++) {
      expect(Math.abs(g.objective[i] - c.objective[i])).toBeLessThanOrEqual(1e-4 * c.objective[i]);
    }
    for (let i = 0; i < c.centroids.length; i++) expect(Math.abs(g.centroids[i] - c.centroids[i])).toBeLessThanOrEqual(1e-5);
  });
});
