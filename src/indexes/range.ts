/**
 * The exact cut of a range search, on the host, for every backend: the plans
 * (src/plans/range-search.ts) return each query's candidates, a superset of the rows within the
 * radius (their float32 margin lets every true result through); this decides each candidate
 * exactly (src/common/threshold.ts), keeps those within the radius and orders them by the k-NN
 * re-score's float64 key (src/indexes/rescore.ts). Equal candidates therefore give bit-identical results on every backend.
 */
import type { RangeCandidates } from '../plans/range-search.js';
import { EXACT_BLOCK, exactScorer } from './rescore.js';
import { COSINE_RANGE_BAND, ThresholdTest } from '../common/threshold.js';

import type { Metric } from '../types.js';
import type { RowAt } from '../contracts.js';

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
 * those within the radius, decided exactly (src/common/threshold.ts: l2 squared distance <= radius; ip,
 * cosine score >= radius; the radius taken as the decimal it prints as; cosine with
 * COSINE_RANGE_BAND, as the rows are stored normalised). Each query's results come best first (l2
 * ascending, ip and cosine descending, by the re-score's key: see exactScorer), ties on the
 * smaller id; distances are the scores the exact test reports.
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
  const key = exactScorer(metric, xq, nq, d);
  const test = new ThresholdTest(metric, radius, d, metric === 'cosine' ? COSINE_RANGE_BAND : 0);
  const lims = new Float64Array(nq + 1);
  const distances = new Float32Array(cand.ids.length);
  const labels = new Uint32Array(cand.ids.length);
  const keys: number[] = [];
  const scores: number[] = [];
  const ids: number[] = [];
  const order: number[] = [];
  // A query's kept rows waiting for their keys, EXACT_BLOCK at a time (never more: rows may be decoded copies).
  const block: Float32Array[] = new Array<Float32Array>(EXACT_BLOCK);
  const blockKeys = new Float64Array(EXACT_BLOCK);
  let waiting = 0;
  /** Appends the waiting rows' keys to `keys`. */
  const flush = (q: number): void => {
    if (waiting === 0) return;
    key(q, block, waiting, blockKeys);
    for (let b = 0; b < waiting; b++) keys.push(blockKeys[b]);
    waiting = 0;
  };
  let o = 0;
  for (let q = 0; q < nq; q++) {
    keys.length = 0;
    scores.length = 0;
    ids.length = 0;
    for (let c = cand.lims[q]; c < cand.lims[q + 1]; c++) {
      const id = cand.ids[c];
      const row = rowAt(id);
      const s = test.score(xq, q * d, row, 0);
      if (Number.isNaN(s)) continue;
      block[waiting++] = row;
      scores.push(s);
      ids.push(id);
      if (waiting === EXACT_BLOCK) flush(q);
    }
    flush(q);
    order.length = keys.length;
    for (let i = 0; i < keys.length; i++) order[i] = i;
    order.sort((a, b) => keys[a] - keys[b] || tieKey(ids[a]) - tieKey(ids[b]));
    for (const i of order) {
      distances[o] = scores[i];
      labels[o++] = ids[i];
    }
    lims[q + 1] = o;
  }
  return { lims, distances: distances.slice(0, o), labels: labels.slice(0, o) };
}
