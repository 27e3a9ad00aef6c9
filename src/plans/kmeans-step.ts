/**
 * k-means iterations on a device, written once (see KMeansWorkspace in src/backend/backend.ts). The points
 * stay on the device in chunks (a code store); an iteration is one submit and one small readback:
 *
 *   clear sums, counts, objective
 *   for each chunk of points (in point order):
 *     flatLists at k = 1 against the centroids   -> each point's nearest centroid and its score
 *     kmeans-partial                             -> added to the global blocks' partial sums
 *   kmeans-reduce -> the new centroids, written into the centroid store; norms -> their norms
 *   read the counts and the per-block objective
 *
 * With bounds (tuning.kmeansBounds; see AssignmentBounds) the assignment skips the score GEMM
 * for every point whose nearest centroid provably did not change: the host keeps each point's
 * centroid and lower bounds on its distance to the others, the device scores only the other points
 * (a flat search at k = BOUND_LIST, in batches of RESCORE_BATCH points), and kmeans-partial then
 * takes the uploaded labels and scores. The assignment is the one the GEMM would have made (the
 * bound keeps a margin for its float32 rounding), so the centroids are the same, bit for bit. The
 * objective is then the host's float64 sum of the exact squared distances, where without bounds
 * it is the sum of the GEMM's float32 scores (which lose digits when the points are far from the
 * origin): the two agree to float32 rounding on data near the origin, not in general.
 *
 * Blocks are global and a block split between chunks is summed in point order (see
 * shaders/kmeans-partial.wgsl), so the centroids do not depend on how the points are chunked. The
 * number of blocks does depend on the partial sums fitting one binding (nblocks * nc * dpad floats,
 * at most 64 MiB): a limit lowered below that means fewer blocks, and float sums rounded
 * differently. The centroids and one block's sums (nc rows each) must fit one binding.
 */

import type { Device, DeviceBuffer } from '../device.js';
import { unpadRows } from '../device.js';
import { kmeansBlocks } from '../cpu/kmeans-update.js';
import { CodeStore } from '../stores/code-store.js';
import { type SlotResult } from '../types.js';
import { copyRows } from '../common/vector-source.js';
import { Scratch } from './kit/scratch.js';
import type { KMeansWorkspace } from '../contracts.js';
import { floatQueries } from './kit/queries.js';
import { flatLists } from './kit/score.js';
import { readLists, searchInBatches } from './kit/batches.js';
import { queryBatch } from './kit/tiling.js';
import { InvalidArgumentError } from '../errors.js';

export class DeviceKMeans implements KMeansWorkspace {
  private readonly centroidStore: CodeStore;
  private readonly block: number;
  private readonly nblocks: number;
  private readonly sums: DeviceBuffer;
  private readonly partCounts: DeviceBuffer;
  private readonly obj: DeviceBuffer;
  private readonly counts: DeviceBuffer;
  /** The assignment's bounds, where the device's tuning asks for them (null: every point is scored). */
  private readonly bounds: AssignmentBounds | null;

  private constructor(
    private readonly device: Device,
    private readonly points: CodeStore,
    private readonly nc: number,
    x: Float32Array,
  ) {
    const { d, dpad } = points;
    const n = points.ntotal;
    this.centroidStore = new CodeStore(device, d, { hostCopy: false });
    if (this.centroidStore.chunkRows < nc) {
      const bytes = nc * dpad * 4;
      throw new InvalidArgumentError(
        bytes > device.limits.maxBindingBytes
          ? `k-means keeps its ${nc} centroids in one binding (${bytes} bytes); this device binds at most ${device.limits.maxBindingBytes}`
          : `k-means keeps its ${nc} centroids in one chunk; tuning.chunkRows = ${device.tuning.chunkRows} is smaller`,
      );
    }
    ({ block: this.block, nblocks: this.nblocks } = kmeansBlocks(n, nc, dpad, Math.min(64 << 20, device.limits.maxBindingBytes)));
    this.sums = device.buffer('kmeans_sums', this.nblocks * nc * dpad * 4);
    this.partCounts = device.buffer('kmeans_part_counts', this.nblocks * nc * 4);
    this.obj = device.buffer('kmeans_obj', this.nblocks * 4);
    this.counts = device.buffer('kmeans_counts', nc * 4);
    this.bounds = device.tuning.kmeansBounds ? new AssignmentBounds(x, n, d, nc) : null;
  }

  /** Uploads `n` points (`x`, `n * d`) in chunks and computes their norms on the device. */
  static async create(device: Device, x: Float32Array, n: number, d: number, nc: number): Promise<DeviceKMeans> {
    const points = new CodeStore(device, d, { hostCopy: false });
    try {
      await points.add(x, n);
      return new DeviceKMeans(device, points, nc, x);
    } catch (err) {
      points.dispose();
      throw err;
    }
  }

  async setCentroids(centroids: Float32Array): Promise<void> {
    this.centroidStore.reset();
    await this.centroidStore.add(centroids, this.nc);
    this.bounds?.moveCentroids(centroids);
  }

  async iterate(): Promise<{ objective: number; counts: Uint32Array }> {
    try {
      return await this.record();
    } catch (err) {
      this.device.discard();
      throw err;
    }
  }

  /** Records one iteration and reads its counts and objective back. */
  private async record(): Promise<{ objective: number; counts: Uint32Array }> {
    const { device, nc, nblocks, points, bounds } = this;
    const { dpad } = points;
    const centroids = this.centroidStore.chunks[0];
    // With bounds, the labels and scores of every point, assigned on the host and the device.
    const assigned = bounds ? await this.assign(bounds) : null;
    device.clear(this.sums);
    device.clear(this.partCounts);
    device.clear(this.obj);
    let p0 = 0;
    for (const c of points.chunks) {
      // Calls run in order, so each chunk's scratch can go back to the pool once its calls are made.
      const scratch = new Scratch(device);
      try {
        let run: { s: DeviceBuffer; i: DeviceBuffer };
        if (assigned) {
          run = { s: scratch.buffer('kmeans_score', c.rows * 4), i: scratch.buffer('kmeans_label', c.rows * 4) };
          device.upload(run.s, 0, assigned.scores.subarray(p0, p0 + c.rows));
          device.upload(run.i, 0, assigned.labels.subarray(p0, p0 + c.rows));
        } else run = flatLists(scratch, this.centroidStore, floatQueries(c.xb), 0, c.rows, 1, 'l2');
        device.dispatch({
          kernel: 'kmeans-partial', x: c.xb, xnorm: c.xnorm, score: run.s, label: run.i, sums: this.sums, counts: this.partCounts,
          obj: this.obj, n: c.rows, p0, dpad, nc, block: this.block,
        });
      } finally {
        scratch.release();
      }
      p0 += c.rows;
    }
    device.dispatch({ kernel: 'kmeans-reduce', sums: this.sums, counts: this.partCounts, centroids: centroids.xb, outCounts: this.counts, nc, dpad, nblocks });
    device.dispatch({ kernel: 'norms', x: centroids.xb, out: centroids.xnorm, n: nc, dpad, row0: 0, out0: 0 });
    const [counts, last] = await device.read([
      { buffer: this.counts, offset: 0, bytes: nc * 4 },
      // With bounds, the new centroids (how far each moved loosens the bounds; the objective is
      // the host's); without, the per-block objective.
      bounds ? { buffer: centroids.xb, offset: 0, bytes: nc * dpad * 4 } : { buffer: this.obj, offset: 0, bytes: nblocks * 4 },
    ]);
    let objective = 0;
    if (bounds && assigned) {
      bounds.moveCentroids(unpadRows(new Float32Array(last), nc, points.d, dpad));
      objective = assigned.objective;
    } else for (const v of new Float32Array(last)) objective += v;
    return { objective, counts: new Uint32Array(counts) };
  }

  /**
   * The assignment with bounds: the points the bounds cannot keep are scored against the centroids
   * on the device (at k = bounds.k: the nearest, and the next nearest for the new bounds), in
   * batches of RESCORE_BATCH points, so that the host holds one batch's copy and results at a
   * time; returns every point's label and score (||c||^2 - 2 x.c of its centroid, as the flat
   * search's) and the objective (the float64 sum of the exact squared distances).
   */
  private async assign(bounds: AssignmentBounds): Promise<{ labels: Uint32Array; scores: Float32Array; objective: number }> {
    const rescore = bounds.unsettled();
    const { d } = this.points;
    for (let b0 = 0; b0 < rescore.length; b0 += RESCORE_BATCH) {
      const rows = rescore.subarray(b0, b0 + RESCORE_BATCH);
      const nearest = await this.nearestCentroids(copyRows(bounds.x, d, rows), rows.length, bounds.k);
      bounds.reassign(rows, nearest.labels, nearest.distances);
    }
    return bounds.assignment();
  }

  /** The `k` nearest centroids of `n` points (`x`, `n * d`): a flat search of the centroids. */
  private nearestCentroids(x: Float32Array, n: number, k: number): Promise<SlotResult> {
    const { d, dpad } = this.points;
    const store = this.centroidStore;
    return searchInBatches(this.device, x, n, d, dpad, k, queryBatch(this.device, n, dpad, k), 'l2', undefined, (scratch, xqBuf, rows) =>
      readLists(this.device, flatLists(scratch, store, floatQueries(xqBuf), 0, rows, k, 'l2'), rows, k),
    );
  }

  async centroids(): Promise<Float32Array> {
    const c = this.centroidStore.chunks[0];
    const [padded] = await this.device.read([{ buffer: c.xb, offset: 0, bytes: this.nc * this.points.dpad * 4 }]);
    return unpadRows(new Float32Array(padded), this.nc, this.points.d, this.points.dpad);
  }

  dispose(): void {
    this.points.dispose();
    this.centroidStore.dispose();
    for (const b of [this.sums, this.partCounts, this.obj, this.counts]) this.device.release(b);
  }
}

/** Centroids a point's bounds name (its own and the next nearest), scored at once when it is re-scored. */
export const BOUND_LIST = 8;

/** Points re-scored per flat search (bounds the host's copies of their rows and results). */
export const RESCORE_BATCH = 1 << 16;

/**
 * Centroids whose moves do not loosen every point's last bound: the farthest movers of each move
 * (see AssignmentBounds.moveCentroids). On generated clustered data (`bench kmeans`, 262,144 x
 * 128, 1024 centroids, 10 iterations) one repaired cluster had made the next iteration re-score
 * every point; now 123,542 of them (69 repaired: 161,592), and 1.28M re-scores in all where there
 * were 1.58M. 32 movers missed most of the 69. A move costs nc x FAR_MOVERS centroid distances
 * and up to n x FAR_MOVERS bound terms (40 - 150 ms a move there), small beside an iteration's
 * n x nc x d GEMM.
 */
export const FAR_MOVERS = 128;

/**
 * Bounds for a k-means assignment, on the host, after Hamerly ("Making k-means even faster", 2010)
 * and Drake and Hamerly's adaptive bounds (2012): per point its centroid, the next nearest
 * centroids (up to BOUND_LIST - 2 of them) each with a lower bound on the point's distance to it,
 * and one more lower bound for every other centroid. When the centroids move, a named centroid's
 * bound drops by that centroid's move, the last bound by the farthest move of any centroid but the
 * point's own (the triangle inequality). A point whose exact distance to its own centroid stays
 * below all its bounds keeps that centroid; only the other points are scored against all centroids
 * again (at k = BOUND_LIST). Naming the next nearest centroids keeps a few far moves (a repaired
 * cluster, a split blob still settling) from loosening every point's bound: on generated clustered
 * data, late iterations re-score 10 - 20% of the points where one bound (Hamerly's) re-scores 50%.
 * The farthest movers (FAR_MOVERS of them: a repaired cluster jumps across the space) are kept out
 * of the last bound's drop: for those, d(x, f) >= d(a, f) - d(x, a) (Elkan 2003), with a the
 * point's centroid and an upper bound on d(x, a) kept per point, bounds every point that is not
 * near f; without it one repair made the next iteration re-score every point.
 *
 * The assignment must be the one the score GEMM would make, so the test keeps a margin for the
 * GEMM's float32 rounding: a squared distance as the device computes it (||c||^2 - 2 x.c + ||x||^2,
 * d + 2 terms in float32) is within (d + 2) 2^-24 (||x|| + ||c||)^2 of the exact one (the standard
 * bound on a float dot product), plus (d + 2) 2^-126 for terms flushed to zero where they fall
 * below float32's normal range (lavapipe flushes; data of magnitude 1e-21 broke the relative bound
 * alone). `error(i)` is twice that sum (a margin on the margin): bounds start from the GEMM's
 * squared distances minus error(i), and a point keeps its centroid a only when
 * d(x, a)^2 + 2 error(i) < (lowest bound)^2, where the GEMM cannot order another centroid first.
 */
export class AssignmentBounds {
  private readonly labels: Uint32Array;
  /** Bounds a point: `slots` a point; slot t < slots - 1 names near[t], the last every other centroid. */
  private readonly slots: number;
  private readonly near: Int32Array;
  /** Below the point's distance to the centroid(s) of each slot; -1: unknown (score the point). */
  private readonly lower: Float64Array;
  /** Squared distance of each point to its centroid (exact, float64), from the last assignment. */
  private readonly dist2: Float64Array;
  /** Above each point's distance to its centroid: sqrt(dist2) at the last assignment plus the centroid's moves since. */
  private readonly upper: Float64Array;
  private readonly xnorm: Float64Array;
  private centroids: Float32Array | null = null;
  private cnorm = 0;

  constructor(
    /** The points (`n * d`), held by the caller for as long as this lives. */
    readonly x: Float32Array,
    private readonly n: number,
    private readonly d: number,
    private readonly nc: number,
    /** How many of the farthest movers are bounded apart (FAR_MOVERS; tests lower it to reach the others' path with few centroids). */
    private readonly farMovers = FAR_MOVERS,
  ) {
    this.slots = Math.max(1, Math.min(BOUND_LIST, nc) - 1);
    this.labels = new Uint32Array(n);
    this.near = new Int32Array(n * this.slots).fill(-1);
    this.lower = new Float64Array(n * this.slots).fill(-1);
    this.dist2 = new Float64Array(n);
    this.upper = new Float64Array(n);
    this.xnorm = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      let s = 0;
      for (let j = i * d; j < (i + 1) * d; j++) s += x[j] * x[j];
      this.xnorm[i] = Math.sqrt(s);
    }
  }

  /** How many nearest centroids a re-scored point needs (its own and those its bounds name). */
  get k(): number {
    return Math.min(BOUND_LIST, this.nc);
  }

  /** How far the GEMM's squared distances of point i may be from the exact ones, doubled (see the class comment). */
  private error(i: number): number {
    const r = this.xnorm[i] + this.cnorm;
    return 2 * (this.d + 2) * (2 ** -24 * r * r + 2 ** -126);
  }

  private distance2(i: number, c: number): number {
    return rowDistance2(this.x, i, this.centroids!, c, this.d);
  }

  /**
   * The new centroids (`nc * d`): each bound drops by its centroid's move, except that a bound on a
   * centroid f among the FAR_MOVERS farthest movers F is at least d(a, f) - d(x, a) (a the point's
   * centroid, d(x, a) at most the point's upper bound). The last bound covers every centroid the
   * others do not name: it becomes the least of its old value less the farthest move outside F
   * and, for each f in F but a, the larger of its old value less f's move and d(a, f) - d(x, a)
   * (so never below one drop by the farthest move of any centroid but a).
   */
  moveCentroids(next: Float32Array): void {
    const { d, nc } = this;
    const prev = this.centroids;
    this.centroids = Float32Array.from(next);
    this.cnorm = 0;
    for (let c = 0; c < nc; c++) {
      let s = 0;
      for (let j = c * d; j < (c + 1) * d; j++) s += next[j] * next[j];
      this.cnorm = Math.max(this.cnorm, Math.sqrt(s));
    }
    if (!prev) return;
    const moved = Float64Array.from({ length: nc }, (_, c) => Math.sqrt(rowDistance2(next, c, prev, c, d)));
    // Centroids by move, farthest first; F is the first nf, `rest` the farthest move outside it.
    const order = Uint32Array.from({ length: nc }, (_, c) => c).sort((a, b) => moved[b] - moved[a]);
    const nf = Math.min(this.farMovers, nc);
    const rest = nf < nc ? moved[order[nf]] : 0;
    // Distances from every centroid to each of F, at their new places.
    const inF = new Int32Array(nc).fill(-1);
    for (let f = 0; f < nf; f++) inF[order[f]] = f;
    // nearestFar[a]: the nearest f in F but a, for the quick form of the last bound (each f in F but
    // a at least max(its old value less the farthest move of any centroid but a, d(a, nearest f
    // but a) - d(x, a))).
    const apart = new Float64Array(nc * nf);
    const nearestFar = new Float64Array(nc).fill(Infinity);
    for (let a = 0; a < nc; a++) {
      for (let f = 0; f < nf; f++) {
        const dist = (apart[a * nf + f] = Math.sqrt(rowDistance2(next, a, next, order[f], d)));
        if (order[f] !== a) nearestFar[a] = Math.min(nearestFar[a], dist);
      }
    }
    const [far, second] = [moved[order[0]], nc > 1 ? moved[order[1]] : 0];
    const { lower, near, labels, slots, upper } = this;
    for (let i = 0; i < this.n; i++) {
      const o = i * slots;
      if (lower[o] < 0) continue;
      const a = labels[i];
      upper[i] += moved[a];
      for (let t = 0; t < slots - 1; t++) {
        const c = near[o + t];
        if (c < 0) continue;
        const f = inF[c];
        lower[o + t] = Math.max(0, lower[o + t] - moved[c], f < 0 ? 0 : apart[a * nf + f] - upper[i]);
      }
      const last = o + slots - 1;
      const old = lower[last];
      let bound = Math.min(old - rest, Math.max(old - (a === order[0] ? second : far), nearestFar[a] - upper[i]));
      // Where the quick form could stop the point keeping its centroid, the full one (nf terms).
      if (!(bound > 0 && bound * bound > upper[i] * upper[i] + 2 * this.error(i))) {
        bound = old - rest;
        for (let f = 0; f < nf; f++) {
          if (order[f] !== a) bound = Math.min(bound, Math.max(old - moved[order[f]], apart[a * nf + f] - upper[i]));
        }
      }
      lower[last] = Math.max(0, bound);
    }
  }

  /**
   * The points whose centroid the bounds cannot keep, ascending; the others get their exact
   * distance to it (for the objective).
   */
  unsettled(): Uint32Array {
    const out: number[] = [];
    const { lower, labels, dist2, slots } = this;
    for (let i = 0; i < this.n; i++) {
      // No bounds yet (reassign sets every slot of a point): score it.
      if (lower[i * slots] < 0) {
        out.push(i);
        continue;
      }
      let bound = Infinity;
      for (let t = i * slots; t < (i + 1) * slots; t++) bound = Math.min(bound, lower[t]);
      const u2 = this.distance2(i, labels[i]);
      if (u2 + 2 * this.error(i) < bound * bound) {
        dist2[i] = u2;
        this.upper[i] = Math.sqrt(u2);
      } else out.push(i);
    }
    return Uint32Array.from(out);
  }

  /**
   * Points `rows` scored against every centroid at k = this.k (labels and squared distances, k a
   * point, nearest first, as searchFlat gives them; -1 labels pad where there are fewer centroids).
   */
  reassign(rows: ArrayLike<number> & Iterable<number>, labels: Int32Array, distances: Float32Array): void {
    const { slots, near, lower } = this;
    const k = this.k;
    let r = 0;
    for (const i of rows) {
      const c = labels[k * r];
      this.labels[i] = c;
      this.dist2[i] = this.distance2(i, c);
      this.upper[i] = Math.sqrt(this.dist2[i]);
      const bound = (t: number): number => (labels[k * r + t] < 0 ? Infinity : Math.sqrt(Math.max(0, distances[k * r + t] - this.error(i))));
      // Slots 0 .. slots - 2 name the 2nd .. nearest; the last bounds the k-th nearest and beyond
      // (nothing beyond where k = nc: no other centroid at all with nc = 1).
      for (let t = 0; t < slots - 1; t++) {
        near[i * slots + t] = labels[k * r + t + 1];
        lower[i * slots + t] = bound(t + 1);
      }
      lower[i * slots + slots - 1] = k > 1 ? bound(k - 1) : Infinity;
      r++;
    }
  }

  /**
   * Every point's label, its score as the flat search gives it (squared distance - ||x||^2), and
   * the objective: the float64 sum of the exact squared distances.
   */
  assignment(): { labels: Uint32Array; scores: Float32Array; objective: number } {
    const scores = new Float32Array(this.n);
    let objective = 0;
    for (let i = 0; i < this.n; i++) {
      scores[i] = this.dist2[i] - this.xnorm[i] * this.xnorm[i];
      objective += this.dist2[i];
    }
    return { labels: this.labels, scores, objective };
  }
}

/** The squared distance (float64) between row i of `u` and row j of `v`, rows of `d` floats. */
function rowDistance2(u: Float32Array, i: number, v: Float32Array, j: number, d: number): number {
  let s = 0;
  for (let t = 0; t < d; t++) {
    const e = u[i * d + t] - v[j * d + t];
    s += e * e;
  }
  return s;
}
