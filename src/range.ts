/**
 * The exact cut of a range search, on the host, for every backend: the plans
 * (src/plans/range-search.ts) return each query's candidates, a superset of the rows within the
 * radius (their float32 margin lets every true result through); this re-scores each candidate
 * exactly in float64, as the k-NN re-score does (src/rescore.ts), keeps those within the radius and
 * orders them. Equal candidates therefore give bit-identical results on every backend.
 */
import type { RangeCandidates } from './plans/range-search.js';
import { exactScorer, reportedScore } from './rescore.js';
import type { RowAt } from './stores/rows.js';
import type { Metric } from './types.js';

/** Faiss's range-search layout: query q's results are entries lims[q] .. lims[q + 1] - 1. */
export interface RangeResult {
  /** nq + 1 offsets (float64: exact beyond 2^32 results). */
  lims: Float64Array;
  /** l2: squared distance; ip: inner product; cosine: cosine. */
  distances: Float32Array;
  /** Internal ids (as the candidates give them). */
  labels: Uint32Array;
}

/**
 * Re-scores the candidates `cand` of `nq` queries (`xq`, `nq * d`, as the index holds them:
 * normalised for cosine), reading their rows by id with `rowAt` (see BaseStore.rowsAt), and keeps
 * l2: squared distance <= radius; ip, cosine: score >= radius. Cosine is compared as a distance
 * (cosine distance <= 1 - radius), as dedup compares it: near 1 the cosine itself rounds to 1 (see
 * cosineDistance). Each query's results come best first (l2 ascending, ip and cosine descending),
 * ties on the smaller id.
 */
export function rangeRescore(
  metric: Metric,
  xq: Float32Array,
  nq: number,
  d: number,
  cand: RangeCandidates,
  rowAt: RowAt,
  radius: number,
  /** Orders exact ties (default: the label itself); an index passes its slot -> id map. */
  tieKey: (label: number) => number = (label) => label,
): RangeResult {
  const score = exactScorer(metric, xq, nq, d);
  // The bound on the minimised score (see exactScorer).
  const bound = metric === 'l2' ? radius : metric === 'ip' ? -radius : 1 - radius;
  const lims = new Float64Array(nq + 1);
  const distances = new Float32Array(cand.ids.length);
  const labels = new Uint32Array(cand.ids.length);
  const keys: number[] = [];
  const ids: number[] = [];
  const order: number[] = [];
  let o = 0;
  for (let q = 0; q < nq; q++) {
    keys.length = 0;
    ids.length = 0;
    for (let c = cand.lims[q]; c < cand.lims[q + 1]; c++) {
      const id = cand.ids[c];
      const key = score(q, rowAt(id));
      if (!(key <= bound)) continue;
      keys.push(key);
      ids.push(id);
    }
    order.length = keys.length;
    for (let i = 0; i < keys.length; i++) order[i] = i;
    order.sort((a, b) => keys[a] - keys[b] || tieKey(ids[a]) - tieKey(ids[b]));
    for (const i of order) {
      distances[o] = reportedScore(metric, keys[i]);
      labels[o++] = ids[i];
    }
    lims[q + 1] = o;
  }
  return { lims, distances: distances.slice(0, o), labels: labels.slice(0, o) };
}
