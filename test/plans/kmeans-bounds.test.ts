/**
 * k-means with bounds (tuning.kmeansBounds, src/plans/kmeans-step.ts) assigns every point as the
 * score GEMM alone would: the same centroids, bit for bit, on both devices, over data with exact
 * ties, near ties, empty-cluster repairs and several chunks of points, far from the origin (where
 * float32 scores lose digits) and of tiny magnitude (where lavapipe flushes products to zero),
 * while scoring fewer points; and a point the bounds keep is one whose centroid is provably still
 * the nearest.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Backend } from '../../src/backend/backend.js';
import { CpuDevice } from '../../src/cpu/cpu-device.js';
import type { DeviceOptions, KernelCall } from '../../src/device.js';
import { KMeans } from '../../src/codecs/kmeans.js';
import { AssignmentBounds } from '../../src/plans/kmeans-step.js';
import { clusteredFloats, rng } from '../../src/common/random.js';
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

  // Every bound checked against the exact distances after every move, through small moves, equal
  // moves (ties in the move order), jumps, copies onto other centroids and onto points, and a
  // second move before the next assignment (a repair), with 0, 1, 3 and 128 far movers, so that
  // the path of the centroids outside them runs with few centroids too.
  it.each([0, 1, 3, 128])('%i far movers: every bound holds after every move', (farMovers) => {
    const [n, d] = [120, 2];
    let checked = 0;
    const wrong: string[] = [];
    for (const nc of [1, 2, 3, 5, 9, 12]) {
      for (let seed = 1; seed <= 4; seed++) {
        const random = rng(100 * seed + nc);
        // Points on a quarter grid: exact ties between centroids that land on points.
        const x = Float32Array.from({ length: n * d }, () => Math.round(32 * (random() - 0.5)) / 4);
        let c = Float32Array.from({ length: nc * d }, () => 8 * (random() - 0.5));
        const bounds = new AssignmentBounds(x, n, d, nc, farMovers);
        const state = bounds as unknown as { lower: Float64Array; near: Int32Array; labels: Uint32Array; upper: Float64Array; slots: number };
        const exact = (i: number, ci: number) => Math.sqrt(distances2(x, c, i, d, nc)[ci]);
        const check = () => {
          const { lower, near, labels, upper, slots } = state;
          for (let i = 0; i < n; i++) {
            const o = i * slots;
            if (lower[o] < 0) continue;
            const all = distances2(x, c, i, d, nc).map(Math.sqrt);
            const above = (bound: number, v: number) => bound > v * (1 + 1e-12) + 1e-12;
            if (above(all[labels[i]], upper[i])) wrong.push(`point ${i}: upper ${upper[i]} < ${all[labels[i]]}`);
            const named = new Set<number>();
            for (let t = 0; t < slots - 1; t++) {
              if (near[o + t] < 0) continue;
              named.add(near[o + t]);
              if (above(lower[o + t], all[near[o + t]])) wrong.push(`point ${i}: slot ${t} ${lower[o + t]} > ${all[near[o + t]]}`);
            }
            const others = Math.min(Infinity, ...all.filter((_, ci) => ci !== labels[i] && !named.has(ci)));
            if (above(lower[o + slots - 1], others)) wrong.push(`point ${i}: last bound ${lower[o + slots - 1]} > ${others}`);
            checked++;
          }
        };
        const move = () => {
          const next = Float32Array.from(c);
          const kind = Math.floor(random() * 6);
          const j = Math.floor(random() * nc);
          if (kind === 0) next.forEach((v, t) => (next[t] = v + 0.05 * (random() - 0.5)));
          else if (kind === 1) next.forEach((v, t) => (next[t] = v + (t % d === 0 ? 0.3 : -0.2)));
          else if (kind === 2) for (let t = 0; t < d; t++) next[j * d + t] = 8 * (random() - 0.5);
          else if (kind === 3) next.copyWithin(j * d, ((j + 1) % nc) * d, ((j + 1) % nc) * d + d);
          else if (kind === 4) {
            const p = Math.floor(random() * n);
            next.set(x.subarray(p * d, p * d + d), j * d);
          }
          c = next;
          bounds.moveCentroids(c);
          check();
        };
        bounds.moveCentroids(c);
        for (let round = 0; round < 12; round++) {
          const rows = bounds.unsettled();
          const unsettled = new Set(rows);
          const { labels } = bounds.assignment();
          for (let i = 0; i < n; i++) {
            if (unsettled.has(i)) continue;
            for (let ci = 0; ci < nc; ci++) if (ci !== labels[i] && !(exact(i, ci) > exact(i, labels[i]))) wrong.push(`kept point ${i}: centroid ${ci} is as near`);
          }
          const t = nearest(x, c, Array.from(rows), d, nc, bounds.k);
          bounds.reassign(rows, t.labels, t.dist);
          check();
          move();
          if (random() < 0.5) move();
        }
      }
    }
    expect(wrong.slice(0, 5)).toEqual([]);
    expect(checked).toBeGreaterThan(10000);
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
