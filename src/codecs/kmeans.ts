/**
 * k-means (Lloyd's algorithm), written once against `Backend`: the iterations run on the backend
 * (on the GPU, without copying assignments back); initialisation, sampling and empty-cluster repair
 * run here, seeded, so both backends start from the same centroids and stay deterministic.
 */
import type { Compute } from '../contracts.js';
import { rng } from '../common/random.js';
import { checkDim, checkVectors, normalizeRows } from '../types.js';
import { type VectorSource, checkSource, checkedBlocks, copyRows, gatherRows } from '../common/vector-source.js';
import { InvalidArgumentError } from '../errors.js';

export type KMeansInit = 'random' | 'kmeans++';

export interface KMeansProgress {
  /** 1-based. */
  iteration: number;
  niter: number;
  /** Sum of squared distances of the training points to their assigned centroid (unit centroids with `spherical`). */
  objective: number;
  /** Empty clusters repaired after this iteration. */
  repaired: number;
  seconds: number;
}

export interface KMeansTrainOptions {
  /** Number of centroids, >= 1 and <= the number of training points. */
  k: number;
  /** Iterations (default 25, as Faiss). */
  niter?: number;
  /** Seed for sampling, initialisation and repair (default 1234). */
  seed?: number;
  /** `random` (default): k distinct training points, as Faiss; `kmeans++`: D^2 sampling. */
  init?: KMeansInit;
  /** Train on a seeded sample of at most this many points per centroid (default 256, as Faiss). */
  maxPointsPerCentroid?: number;
  /** And at most this many points in all (default: no further bound); at least k. */
  maxPoints?: number;
  /**
   * Spherical k-means (Faiss's ClusteringParameters.spherical, which its IVF sets for inner
   * product): the centroids are normalised to unit norm after the initialisation and after every
   * update (and repair). Against unit centroids ||x - c||^2 = ||x||^2 + 1 - 2 x.c, so the L2
   * assignment the iterations make is the one by largest inner product (up to the float32
   * rounding of the centroids' norms, the size of the inner products' own); the objective is the
   * sum of squared distances to the unit centroids. Default false.
   */
  spherical?: boolean;
  onProgress?: (progress: KMeansProgress) => void;
}

export interface KMeansResult {
  /** `k * dim`, row-major. */
  centroids: Float32Array;
  /** The objective of each iteration's assignment. */
  objective: number[];
  /** Training points used (after sampling). */
  n: number;
}

/** Faiss's relative perturbation when an empty cluster takes half of a large one. */
const SPLIT_EPS = 1 / 1024;

export class KMeans {
  readonly dim: number;
  centroids: Float32Array | null = null;

  constructor(
    readonly backend: Compute,
    options: { dim: number },
  ) {
    this.dim = checkDim(options?.dim);
  }

  /**
   * Trains on `xt`: an array (`n * dim`), or a source read block by block (a file of any size),
   * of which only the sample is ever held (one pass picks it; the same sample as from an array).
   */
  async train(xt: Float32Array | VectorSource, options: KMeansTrainOptions): Promise<KMeansResult> {
    const d = this.dim;
    const k = options?.k;
    if (typeof k !== 'number' || !Number.isInteger(k) || k < 1) {
      throw new InvalidArgumentError(`k (number of centroids) must be an integer >= 1; got ${String(k)}`);
    }
    const niter = options.niter ?? 25;
    if (!Number.isInteger(niter) || niter < 1) throw new InvalidArgumentError(`niter must be an integer >= 1; got ${niter}`);
    const init = options.init ?? 'random';
    if (init !== 'random' && init !== 'kmeans++') throw new InvalidArgumentError(`init must be random or kmeans++; got ${String(init)}`);
    const seed = options.seed ?? 1234;
    const maxPer = options.maxPointsPerCentroid ?? 256;
    if (!Number.isInteger(maxPer) || maxPer < 1) throw new InvalidArgumentError(`maxPointsPerCentroid must be an integer >= 1; got ${maxPer}`);
    const maxPoints = options.maxPoints ?? Infinity;
    if (maxPoints !== Infinity && (!Number.isInteger(maxPoints) || maxPoints < k)) {
      throw new InvalidArgumentError(`maxPoints must be an integer >= k = ${k}; got ${maxPoints}`);
    }
    const nAll = xt instanceof Float32Array ? checkVectors(xt, d, 'xt', true) : (checkSource(xt, d, 'xt'), xt.rows);
    if (nAll < k) {
      throw new InvalidArgumentError(`k-means needs at least k = ${k} training points; got ${nAll}`);
    }
    const random = rng(seed);
    const sample = await sampleRows(xt, d, Math.min(maxPer * k, maxPoints), random);
    // Where nothing is sampled away the sample is the caller's own array: copied, since the
    // workspace reads it every iteration (its bounds) and the caller may change it meanwhile.
    const x = sample === xt ? sample.slice() : sample;
    const n = x.length / d;
    const spherical = options.spherical ?? false;
    const first = init === 'random' ? initRandom(x, n, d, k, random) : initPlusPlus(x, n, d, k, random);
    const ws = await this.backend.createKMeansWorkspace(x, n, d, k);
    const objective: number[] = [];
    try {
      // Normalised on the host, in float64, rounded once (normalizeRows): the same bits from
      // either backend's centroids, at the cost of one read and upload of the centroids an iteration.
      await ws.setCentroids(spherical ? normalizeRows(first, d) : first);
      const t0 = performance.now();
      for (let it = 1; it <= niter; it++) {
        const step = await ws.iterate();
        objective.push(step.objective);
        let repaired = 0;
        const empty = step.counts.some((c) => c === 0);
        if (empty || spherical) {
          const c = await ws.centroids();
          if (empty) repaired = splitClusters(c, step.counts, n, d, k, random);
          await ws.setCentroids(spherical ? normalizeRows(c, d) : c);
        }
        options.onProgress?.({ iteration: it, niter, objective: step.objective, repaired, seconds: (performance.now() - t0) / 1000 });
      }
      this.centroids = await ws.centroids();
    } finally {
      ws.dispose();
    }
    return { centroids: this.centroids, objective, n };
  }
}

/**
 * A sample of at most `m` rows of `xt` (`nAll` rows: an array, or a source read in one pass),
 * drawn with `random` (all rows, as they are, where there are at most `m`); in row order.
 */
export async function sampleRows(xt: Float32Array | VectorSource, d: number, m: number, random: () => number): Promise<Float32Array> {
  const nAll = xt instanceof Float32Array ? xt.length / d : xt.rows;
  const pick = nAll > m ? Uint32Array.from(shuffledPrefix(nAll, m, random)).sort() : null;
  if (xt instanceof Float32Array) return pick ? copyRows(xt, d, pick) : xt;
  return gatherRows(checkedBlocks(xt, 'xt', true, (b) => b), d, nAll, pick);
}

/**
 * The first m entries of a seeded Fisher-Yates shuffle of 0 .. n-1, in O(m) memory: only the
 * entries a swap moved are held (in a Map), so sampling a billion rows costs the sample alone.
 */
function shuffledPrefix(n: number, m: number, random: () => number): number[] {
  const moved = new Map<number, number>();
  const out = new Array<number>(m);
  for (let i = 0; i < m; i++) {
    const j = i + Math.floor(random() * (n - i));
    const atJ = moved.get(j) ?? j;
    moved.set(j, moved.get(i) ?? i);
    out[i] = atJ;
  }
  return out;
}

function initRandom(x: Float32Array, n: number, d: number, k: number, random: () => number): Float32Array {
  return copyRows(x, d, shuffledPrefix(n, k, random));
}

/** k-means++: each next centroid is a point drawn with probability proportional to D(x)^2. */
function initPlusPlus(x: Float32Array, n: number, d: number, k: number, random: () => number): Float32Array {
  const out = new Float32Array(k * d);
  const dist = new Float64Array(n).fill(Infinity);
  let pick = Math.floor(random() * n);
  for (let c = 0; c < k; c++) {
    out.set(x.subarray(pick * d, (pick + 1) * d), c * d);
    let total = 0;
    for (let i = 0; i < n; i++) {
      let s = 0;
      for (let j = 0; j < d; j++) {
        const diff = x[i * d + j] - out[c * d + j];
        s += diff * diff;
      }
      if (s < dist[i]) dist[i] = s;
      total += dist[i];
    }
    if (c + 1 === k) break;
    // Draw; if every point coincides with a centroid (total 0), fall back to a uniform draw.
    let target = random() * total;
    pick = total > 0 ? -1 : Math.floor(random() * n);
    for (let i = 0; i < n && pick < 0; i++) {
      target -= dist[i];
      if (target < 0) pick = i;
    }
    if (pick < 0) pick = n - 1;
  }
  return out;
}

/**
 * Faiss's empty-cluster repair: each empty centroid takes a copy of a centroid chosen with
 * probability proportional to (size - 1), the two copies are pushed apart by a relative SPLIT_EPS,
 * and the points are split between them. Returns the number of clusters repaired.
 */
function splitClusters(c: Float32Array, counts: Uint32Array, n: number, d: number, k: number, random: () => number): number {
  let repaired = 0;
  for (let ci = 0; ci < k; ci++) {
    if (counts[ci] !== 0) continue;
    let cj = 0;
    for (;;) {
      const p = (counts[cj] - 1) / (n - k);
      if (random() < p) break;
      cj = (cj + 1) % k;
    }
    for (let j = 0; j < d; j++) {
      const v = c[cj * d + j];
      const up = j % 2 === 0;
      c[ci * d + j] = v * (up ? 1 + SPLIT_EPS : 1 - SPLIT_EPS);
      c[cj * d + j] = v * (up ? 1 - SPLIT_EPS : 1 + SPLIT_EPS);
    }
    counts[ci] = Math.floor(counts[cj] / 2);
    counts[cj] -= counts[ci];
    repaired++;
  }
  return repaired;
}
