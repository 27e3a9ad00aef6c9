/**
 * k-means with bounds (tuning.kmeansBounds, src/plans/kmeans-step.ts) assigns every point as the
 * score GEMM alone would: the same centroids, bit for bit, on both devices, over data with exact
 * ties, near ties, empty-cluster repairs and several chunks of points, far from the origin (where
 * float32 scores lose digits) and of tiny magnitude (where lavapipe flushes products to zero),
 * while scoring fewer points; and a point the bounds keep is one whose centroid is provably still
 * the nearest.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Backend } from '../../src/backend.js';
import { CpuDevice } from '../../src/cpu/cpu-device.js';
import type { DeviceOptions, KernelCall } from '../../src/device.js';
import { KMeans } from '../../src/kmeans.js';
import { AssignmentBounds } from '../../src/plans/kmeans-step.js';
import { clusteredFloats, rng } from '../../src/random.js';
import { cpuBackend } from '../helpers/cpu.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

// Several chunks of points: the labels and scores of each are uploaded apart.
const split: DeviceOptions = { chunkRows: 700 };
const gpuOn = await gpuBackend({ ...split, kmeansBounds: true });
const gpuOff = await gpuBackend({ ...split, kmeansBounds: false });
afterAll(disposeGpuBackends);

/** A CPU device that counts the (query, base) scores its gemm-scores calls compute. */
class CountingDevice extends CpuDevice {
  scored = 0;
  override dispatch(call: KernelCall): void {
    if (call.kernel === 'gemm-scores') this.scored += call.rows * call.cols;
    super.dispatch(call);
  }
}

/**
 * Points with every kind of trouble for the bounds: 8 blobs shared by 24 centroids (split blobs:
 * many near ties), a third of the rows copies of 10 others (exact ties; the random start then
 * draws equal centroids, and empty clusters are repaired) and points on the midpoint of two others.
 */
function troubleData(n: number, d: number): Float32Array {
  const x = clusteredFloats(n, d, 8, 11, 0.2);
  const sources = [1, 2, 4, 5, 7, 8, 10, 11, 13, 14];
  for (let i = 0; i < n; i += 3) x.copyWithin(i * d, sources[(i / 3) % 10] * d, sources[(i / 3) % 10] * d + d);
  for (let i = 20; i < n; i += 11) {
    if (i % 3 === 0) continue;
    const a = (i + 1) % n;
    const b = (i + 2) % n;
    for (let j = 0; j < d; j++) x[i * d + j] = (x[a * d + j] + x[b * d + j]) / 2;
  }
  return x;
}

async function train(backend: Backend, x: Float32Array, d: number) {
  const repaired: number[] = [];
  const r = await new KMeans(backend, { dim: d }).train(x, { k: 24, niter: 12, seed: 3, onProgress: (p) => repaired.push(p.repaired) });
  return { ...r, repaired };
}

describe('k-means with bounds', () => {
  const d = 10;
  const n = 2500;
  const x = troubleData(n, d);

  it('cpu: the same centroids and objectives as without bounds, from fewer scores', async () => {
    const [on, off] = [new CountingDevice({ ...split, kmeansBounds: true }), new CountingDevice({ ...split, kmeansBounds: false })];
    const [a, b] = [await train(new Backend(on), x, d), await train(new Backend(off), x, d)];
    expect(b.repaired.some((r) => r > 0)).toBe(true);
    expect(Array.from(a.centroids)).toEqual(Array.from(b.centroids));
    expect(a.repaired).toEqual(b.repaired);
    for (let i = 0; i < b.objective.length; i++) expect(Math.abs(a.objective[i] - b.objective[i])).toBeLessThanOrEqual(1e-5 * b.objective[i]);
    expect(on.scored).toBeLessThan(0.8 * off.scored);
  });

  it('cpu: the default is on', () => {
    expect(cpuBackend().device.tuning.kmeansBounds).toBe(true);
  });

  // Far from the origin, ||c||^2 - 2 x.c cancels most of its float32 digits: without the margin,
  // the bounds kept points the GEMM assigned elsewhere (found at +100 on lavapipe). Of tiny
  // magnitude, products fall below float32's normal range (lavapipe flushes them to zero).
  for (const [what, scale, offset] of [['far from the origin', 1, 100], ['of tiny magnitude', 1e-21, 0]] as const) {
    const d3 = 3;
    const y = troubleData(2000, d3).map((v) => v * scale + offset);
    it(`cpu: the same centroids with and without bounds, data ${what}`, async () => {
      const [a, b] = [await train(cpuBackend({ kmeansBounds: true }), y, d3), await train(cpuBackend({ kmeansBounds: false }), y, d3)];
      expect(Array.from(a.centroids)).toEqual(Array.from(b.centroids));
    });
    it.skipIf(!gpuOn || !gpuOff)(`webgpu: the same centroids with and without bounds, data ${what}`, async () => {
      const [a, b] = [await train(gpuOn!, y, d3), await train(gpuOff!, y, d3)];
      expect(Array.from(a.centroids)).toEqual(Array.from(b.centroids));
    });
  }

  it.skipIf(!gpuOn || !gpuOff)('webgpu: the same centroids as without bounds, and as the CPU with them', async () => {
    const [a, b] = [await train(gpuOn!, x, d), await train(gpuOff!, x, d)];
    expect(Array.from(a.centroids)).toEqual(Array.from(b.centroids));
    const c = await train(cpuBackend({ ...split, kmeansBounds: true }), x, d);
    expect(Array.from(a.centroids)).toEqual(Array.from(c.centroids));
  });
});

describe('AssignmentBounds', () => {
  /** Float64 squared distances of point i to every centroid. */
  function distances2(x: Float32Array, c: Float32Array, i: number, d: number, nc: number): number[] {
    return Array.from({ length: nc }, (_, ci) => {
      let s = 0;
      for (let j = 0; j < d; j++) s += (x[i * d + j] - c[ci * d + j]) ** 2;
      return s;
    });
  }

  /** The result searchFlat would give for `rows` at k (labels, squared distances; ties to the smaller id; -1 pads). */
  function nearest(x: Float32Array, c: Float32Array, rows: number[], d: number, nc: number, k: number) {
    const labels = new Int32Array(rows.length * k).fill(-1);
    const dist = new Float32Array(rows.length * k).fill(Infinity);
    rows.forEach((i, r) => {
      const order = distances2(x, c, i, d, nc)
        .map((v, ci) => [v, ci])
        .sort((p, q) => p[0] - q[0] || p[1] - q[1]);
      for (let t = 0; t < Math.min(k, nc); t++) [dist[k * r + t], labels[k * r + t]] = order[t];
    });
    return { labels, dist };
  }

  it.each([2, 3, 12, 40, 160])('%i centroids: keeps a point only while its centroid is strictly the nearest, through small moves and jumps', (nc) => {
    const [n, d] = [800, 6];
    const x = clusteredFloats(n, d, 5, 21, 0.3);
    const random = rng(5);
    let c = Float32Array.from({ length: nc * d }, () => 2 * random() - 1);
    const bounds = new AssignmentBounds(x, n, d, nc);
    bounds.moveCentroids(c);
    let settledTotal = 0;
    for (let round = 0; round < 8; round++) {
      const rows = bounds.unsettled();
      if (round === 0) expect(rows.length).toBe(n);
      const { labels } = bounds.assignment();
      const unsettled = new Set(rows);
      const kept = Array.from({ length: n }, (_, i) => i).filter((i) => !unsettled.has(i));
      for (const i of kept) {
        const dist = distances2(x, c, i, d, nc);
        const own = dist[labels[i]];
        dist.forEach((v, ci) => {
          if (ci !== labels[i]) expect(v, `point ${i}, round ${round}: centroid ${ci} vs its own ${labels[i]}`).toBeGreaterThan(own);
        });
      }
      settledTotal += kept.length;
      const t = nearest(x, c, Array.from(rows), d, nc, bounds.k);
      bounds.reassign(rows, t.labels, t.dist);
      // Small moves for all; in odd rounds one centroid jumps onto another's place (as a repair
      // does), in round 4 six more.
      c = c.map((v) => v + 0.02 * (random() - 0.5));
      if (round % 2 === 1) c.copyWithin((round % nc) * d, ((round + 1) % nc) * d, ((round + 1) % nc) * d + d);
      if (round === 4) for (let j = 0; j < Math.min(nc, 6); j++) c.copyWithin(((3 * j) % nc) * d, ((3 * j + 1) % nc) * d, ((3 * j + 1) % nc) * d + d);
      bounds.moveCentroids(c);
    }
    // The bounds did keep points (else this test would check nothing).
    expect(settledTotal).toBeGreaterThan(n / 4);
  });

  it('a centroid jumping across the space (a repair) leaves the points far from both its places settled', () => {
    // 40 blobs of 30 points, a centroid near each; then centroid 0 jumps onto blob 39. The one
    // bound for all centroids not named would drop by the jump for every point: all re-scored.
    const [n, d, nc] = [1200, 4, 40];
    const random = rng(9);
    const centres = Float32Array.from({ length: nc * d }, () => 40 * (random() - 0.5));
    const x = Float32Array.from({ length: n * d }, (_, t) => centres[(Math.floor(t / d) % nc) * d + (t % d)] + 0.5 * (random() - 0.5));
    const c = centres.map((v) => v + 0.05 * (random() - 0.5));
    const bounds = new AssignmentBounds(x, n, d, nc);
    bounds.moveCentroids(c);
    const rows = bounds.unsettled();
    const t = nearest(x, c, Array.from(rows), d, nc, bounds.k);
    bounds.reassign(rows, t.labels, t.dist);
    const moved = Float32Array.from(c);
    for (let j = 0; j < d; j++) moved[j] = centres[39 * d + j] + 0.05;
    bounds.moveCentroids(moved);
    const again = bounds.unsettled();
    // Only the points of the two blobs involved (60 points) may need scoring.
    expect(again.length).toBeGreaterThan(0);
    expect(again.length).toBeLessThanOrEqual(60);
    const { labels } = bounds.assignment();
    const unsettled = new Set(again);
    for (let i = 0; i < n; i++) {
      if (unsettled.has(i)) continue;
      const dist = distances2(x, moved, i, d, nc);
      dist.forEach((v, ci) => {
        if (ci !== labels[i]) expect(v, `point ${i}: centroid ${ci} vs its own ${labels[i]}`).toBeGreaterThan(dist[labels[i]]);
      });
    }
  });

  it('a centroid landing nearer a point than its own, though farther from that own than the point is, takes the point', () => {
    // One dimension, centroids at 0, 10, ..., 90: the point at 1 has centroid 0 and names the
    // next six; centroid 9 (at 90, under its last bound) jumps to 1.5, which is 1.5 from centroid 0
    // (more than the point's 1) but 0.5 from the point.
    const nc = 10;
    const x = new Float32Array([1, 52, 88]);
    const c = Float32Array.from({ length: nc }, (_, i) => 10 * i);
    const bounds = new AssignmentBounds(x, 3, 1, nc);
    bounds.moveCentroids(c);
    const rows = bounds.unsettled();
    const t = nearest(x, c, Array.from(rows), 1, nc, bounds.k);
    bounds.reassign(rows, t.labels, t.dist);
    expect(Array.from(bounds.assignment().labels)).toEqual([0, 5, 9]);
    c[9] = 1.5;
    bounds.moveCentroids(c);
    // Point 1 (at 52) is far from both places of centroid 9; point 2 had it as its own.
    expect(Array.from(bounds.unsettled())).toEqual([0, 2]);
  });

  it('with one centroid, every point stays after the first assignment', () => {
    const x = clusteredFloats(50, 3, 2, 4);
    const c = new Float32Array([0.1, 0.2, 0.3]);
    const bounds = new AssignmentBounds(x, 50, 3, 1);
    bounds.moveCentroids(c);
    const rows = bounds.unsettled();
    const t = nearest(x, c, Array.from(rows), 3, 1, bounds.k);
    bounds.reassign(rows, t.labels, t.dist);
    bounds.moveCentroids(new Float32Array([5, 5, 5]));
    expect(bounds.unsettled().length).toBe(0);
    expect(Array.from(bounds.assignment().labels)).toEqual(new Array(50).fill(0));
  });
});
