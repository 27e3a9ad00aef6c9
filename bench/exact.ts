/**
 * Exact reference distances in float64 and tie-aware recall by ids, the same for every engine:
 * an engine's returned distances are never used (each computes them its own way), only its ids,
 * whose true distances are recomputed here.
 *
 * Scores follow the library: l2 = squared Euclidean (smaller is better), ip = inner product and
 * cosine = cosine similarity (larger is better).
 */
import type { Metric } from 'webgpu-knn';
import type { BenchData } from './data.js';

/** True score of base row `id` for query row `q` (float64). */
export function trueScore(xb: Float32Array, xq: Float32Array, d: number, q: number, id: number, metric: Metric): number {
  let s = 0;
  let nb = 0;
  let nq = 0;
  const b = id * d;
  const a = q * d;
  if (metric === 'l2') {
    for (let j = 0; j < d; j++) {
      const t = xq[a + j] - xb[b + j];
      s += t * t;
    }
    return s;
  }
  for (let j = 0; j < d; j++) {
    s += xq[a + j] * xb[b + j];
    nb += xb[b + j] * xb[b + j];
    nq += xq[a + j] * xq[a + j];
  }
  return metric === 'ip' ? s : s / Math.sqrt(Math.max(nb, 1e-300) * Math.max(nq, 1e-300));
}

/** Sign that turns a score into a cost (smaller is better). */
function sign(metric: Metric): number {
  return metric === 'l2' ? 1 : -1;
}

/**
 * The k best true scores of every query, best first: `nq * k` float64, by a brute force over every
 * (query, base) pair. Padded with +-Infinity when n < k. `exclude` (self-queries): per query, a
 * base row left out (its own), so the reference is the k nearest OTHER rows.
 */
export function exactScores(
  xb: Float32Array,
  xq: Float32Array,
  n: number,
  nq: number,
  d: number,
  k: number,
  metric: Metric,
  onProgress?: (queriesDone: number) => void,
  exclude?: Int32Array,
): Float64Array {
  const sg = sign(metric);
  const out = new Float64Array(nq * k).fill(sg * Infinity);
  const costs = new Float64Array(n);
  for (let q = 0; q < nq; q++) {
    for (let i = 0; i < n; i++) costs[i] = sg * trueScore(xb, xq, d, q, i, metric);
    // Self-queries: the query's own base row is not one of its neighbours (it sorts last).
    if (exclude) costs[exclude[q]] = Infinity;
    // Partial selection is not worth its code here: a sort of n float64s per query is cheap next to
    // the n * d scores above.
    const best = costs.slice().sort().subarray(0, Math.min(k, n));
    for (let j = 0; j < best.length; j++) out[q * k + j] = sg * best[j];
    if (onProgress && (q + 1) % 200 === 0 && q + 1 < nq) onProgress(q + 1);
  }
  return out;
}

/**
 * The true scores of given neighbour ids (published ground truth, or an exact search's labels),
 * best first: `nq * k` float64; id -1 (padding) scores +-Infinity. Ground truth orders ties its own
 * way; sorting the recomputed scores makes it a reference.
 */
export function scoresOfIds(xb: Float32Array, xq: Float32Array, nq: number, d: number, ids: Int32Array | Float64Array, k: number, metric: Metric): Float64Array {
  const sg = sign(metric);
  const out = new Float64Array(nq * k);
  for (let q = 0; q < nq; q++) {
    const row = Array.from(ids.subarray(q * k, q * k + k), (id) => (id < 0 ? Infinity : sg * trueScore(xb, xq, d, q, id, metric))).sort((a, b) => a - b);
    for (let j = 0; j < k; j++) out[q * k + j] = sg * row[j];
  }
  return out;
}

/**
 * Tie-aware recall@r of `labels` (`nq * k`, -1 = missing) against `reference` (`nq * kRef` true
 * scores, best first; r <= min(k, kRef)): a returned id among the first r counts when its true score
 * is no worse than the reference r-th score, within 1e-5 relative (float32 engines may order
 * near-ties either way). Duplicated ids count once. Reference rows shorter than r (n < r) count
 * only their real entries. `exclude` (self-queries): per query, its own row, never a hit.
 */
export function tieAwareRecall(
  r: number,
  labels: Int32Array | Float64Array,
  k: number,
  reference: Float64Array,
  kRef: number,
  xb: Float32Array,
  xq: Float32Array,
  d: number,
  metric: Metric,
  exclude?: Int32Array,
): number {
  if (r > k || r > kRef) throw new RangeError(`recall@${r} needs at least ${r} results and reference entries; got k = ${k}, reference k = ${kRef}`);
  const sg = sign(metric);
  const nq = reference.length / kRef;
  let hits = 0;
  let total = 0;
  for (let q = 0; q < nq; q++) {
    let rth = Infinity;
    let real = 0;
    for (let j = 0; j < r; j++) {
      const c = sg * reference[q * kRef + j];
      if (c === Infinity) break;
      rth = c;
      real++;
    }
    total += real;
    const tol = 1e-5 * Math.max(1, Math.abs(rth));
    const seen = new Set<number>();
    let got = 0;
    for (let j = 0; j < r && got < real; j++) {
      const id = labels[q * k + j];
      if (id < 0 || seen.has(id) || id === exclude?.[q]) continue;
      seen.add(id);
      if (sg * trueScore(xb, xq, d, q, id, metric) <= rth + tol) got++;
    }
    hits += got;
  }
  return total ? hits / total : 1;
}

/** What recall is scored against: `k` true scores per query, best first, and where they come from. */
export interface Reference {
  scores: Float64Array;
  k: number;
  name: string;
}

/**
 * The reference of a bench run: the published ground truth where the set has one by this metric
 * with at least k columns, else an exact float64 brute force; for self-queries (data.selfRows)
 * always the brute force, each query's own row excluded.
 */
export function benchReference(data: BenchData, k: number, metric: Metric, log: (line: string) => void): Reference {
  const t0 = performance.now();
  let ref: Reference;
  if (data.groundTruth && metric === 'l2' && data.groundTruth.k >= k && !data.selfRows) {
    const kRef = data.groundTruth.k;
    ref = { scores: scoresOfIds(data.xb, data.xq, data.nq, data.d, data.groundTruth.ids, kRef, metric), k: kRef, name: `published ground truth (${data.groundTruth.source}, top ${kRef})` };
  } else {
    log(`exact reference: float64 brute force of ${data.nq} queries over ${data.n} vectors`);
    const scores = exactScores(data.xb, data.xq, data.n, data.nq, data.d, k, metric, (done) =>
      log(`exact reference: ${done}/${data.nq} queries, ${((performance.now() - t0) / 1000).toFixed(1)} s`), data.selfRows);
    ref = { scores, k, name: data.selfRows ? "exact search (float64 brute force; each query's own row excluded)" : 'exact search (float64 brute force)' };
  }
  log(`reference ready in ${((performance.now() - t0) / 1000).toFixed(1)} s: ${ref.name}`);
  return ref;
}

/**
 * Self-queries: each query's own row dropped from its `k + 1` results (`nq * (k + 1)` labels,
 * best first), or, where the row is absent (ties, or an approximate index missed it), the last
 * result dropped; returns `nq * k` labels. Another row at distance 0 (a duplicate) stays: it is a
 * real neighbour.
 */
export function dropSelf(labels: Int32Array, nq: number, k: number, selfRows: Int32Array): Int32Array {
  const out = new Int32Array(nq * k);
  for (let q = 0; q < nq; q++) {
    const row = labels.subarray(q * (k + 1), (q + 1) * (k + 1));
    const at = row.indexOf(selfRows[q]);
    const drop = at >= 0 ? at : k;
    out.set(row.subarray(0, drop), q * k);
    out.set(row.subarray(drop + 1), q * k + drop);
  }
  return out;
}
