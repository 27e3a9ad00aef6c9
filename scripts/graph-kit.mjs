// What the graph scripts (graph-recall, graph-growth, graph-filters, graph-profile,
// hnswlib-export-recall) share: their data, batched timed searches, recall against exact labels.
import { loadBenchData } from '../dist/bench/data.js';

/** Seconds since `t0` (a performance.now()). */
export const seconds = (t0) => (performance.now() - t0) / 1000;

/** The bench data set `v.data` (with `v.n`, `v.d` for generated sets and `v.nq` queries), as bench compare loads it. */
export function loadData(v) {
  return loadBenchData(v.data, Number(v.n ?? 100000), Number(v.d ?? 128), v.nq === undefined ? undefined : Number(v.nq), 1);
}

/**
 * The k nearest of every query of `data` by `index.search`, in batches of `batch`: labels (nq * k),
 * queries/s and milliseconds of the timed batches (after one untimed batch unless `warm` is false).
 * `params.timings`, when given, sums over the batches.
 */
export async function timedSearch(index, data, k, batch, params = {}, warm = true) {
  const labels = new Float64Array(data.nq * k);
  if (warm) await index.search(data.xq.subarray(0, Math.min(batch, data.nq) * data.d), k, params);
  const t0 = performance.now();
  for (let q0 = 0; q0 < data.nq; q0 += batch) {
    const rows = Math.min(batch, data.nq - q0);
    labels.set((await index.search(data.xq.subarray(q0 * data.d, (q0 + rows) * data.d), k, params)).labels, q0 * k);
  }
  const ms = performance.now() - t0;
  return { labels, qps: data.nq / (ms / 1000), ms };
}

/** Recall@k of `labels` against `exact` (nq * k each; -1 in `exact` is no neighbour and not counted). */
export function recallAt(labels, exact, nq, k) {
  let hit = 0;
  let want = 0;
  for (let q = 0; q < nq; q++) {
    const truth = new Set(Array.from(exact.subarray(q * k, (q + 1) * k)).filter((id) => id >= 0));
    want += truth.size;
    for (let j = 0; j < k; j++) if (truth.has(labels[q * k + j])) hit++;
  }
  return want ? hit / want : 1;
}
