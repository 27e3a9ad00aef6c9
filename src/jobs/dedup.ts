/**
 * Near-duplicate detection: every pair i < j with cosine >= threshold (or squared L2 <= threshold)
 * in a corpus, grouped into clusters with a keeper each.
 *
 * Search with a safety margin, then confirm: the backend's self-join (tiled, so the corpus may
 * exceed one GPU buffer) returns every pair whose float32 score passes the threshold plus a margin
 * larger than the expansion's rounding error; each candidate is then re-scored exactly (direct
 * formula, float64, on the original vectors) and the exact threshold applied. Rounding can neither
 * add a pair nor lose one.
 */
import type { Backend } from '../backend.js';
import { InvalidArgumentError, checkDim, checkVectors, normalizeRows } from '../types.js';

export type DedupMetric = 'cosine' | 'l2';

export interface DedupProgress {
  rowsDone: number;
  n: number;
  /** Candidate pairs so far (before the exact check). */
  candidates: number;
}

export interface DedupOptions {
  metric: DedupMetric;
  /** cosine: pairs with cosine >= threshold; l2: pairs with squared distance <= threshold. */
  threshold: number;
  onProgress?: (p: DedupProgress) => void;
}

export interface DedupResult {
  /** Pairs (i[p], j[p]) with i < j, sorted by i then j, and their exact scores (cosine or squared L2). */
  i: Uint32Array;
  j: Uint32Array;
  score: Float64Array;
  /** Connected groups of duplicates, each sorted ascending; the first member is the keeper. */
  clusters: number[][];
  /** Every member but the keeper of each cluster, ascending. */
  drop: Uint32Array;
  /** Candidates the margin let through, before the exact check. */
  candidates: number;
}

/** Relative margin on ||a||^2 + ||b||^2: twice the float32 error bound of the expansion, (2d + 4) * 2^-24. */
export function dedupMargin(d: number): number {
  return (4 * d + 16) * 2 ** -24;
}

export async function dedup(backend: Backend, x: Float32Array, d: number, options: DedupOptions): Promise<DedupResult> {
  checkDim(d);
  const n = checkVectors(x, d, 'vectors', true);
  const { metric, threshold } = options;
  if (metric !== 'cosine' && metric !== 'l2') throw new InvalidArgumentError(`metric must be cosine or l2; got ${String(metric)}`);
  if (typeof threshold !== 'number' || !Number.isFinite(threshold)) {
    throw new InvalidArgumentError(`threshold must be a finite number; got ${String(threshold)}`);
  }
  if (metric === 'cosine' && (threshold < -1 || threshold > 1)) {
    throw new InvalidArgumentError(`a cosine threshold must be in [-1, 1]; got ${threshold}`);
  }
  if (metric === 'l2' && threshold < 0) throw new InvalidArgumentError(`a squared-L2 threshold must be >= 0; got ${threshold}`);

  const store = backend.createBaseStore(d);
  let candidates: Uint32Array;
  try {
    await store.add(metric === 'cosine' ? normalizeRows(x, d) : x, n);
    candidates = await backend.selfJoinCandidates(
      store,
      metric === 'cosine' ? 'ip' : 'l2',
      metric === 'cosine' ? -threshold : threshold,
      dedupMargin(d),
      (rowsDone, c) => options.onProgress?.({ rowsDone, n, candidates: c }),
    );
  } finally {
    store.dispose();
  }

  // Confirm each candidate exactly.
  const norms = new Float64Array(n);
  if (metric === 'cosine') {
    for (let r = 0; r < n; r++) {
      let s = 0;
      for (let t = 0; t < d; t++) s += x[r * d + t] * x[r * d + t];
      norms[r] = Math.sqrt(s);
    }
  }
  const keepI: number[] = [];
  const keepJ: number[] = [];
  const scores: number[] = [];
  for (let p = 0; p < candidates.length; p += 2) {
    const a = candidates[p];
    const b = candidates[p + 1];
    let s = 0;
    if (metric === 'cosine') {
      for (let t = 0; t < d; t++) s += x[a * d + t] * x[b * d + t];
      const den = norms[a] * norms[b];
      s = den > 0 ? s / den : 0;
      if (s < threshold) continue;
    } else {
      for (let t = 0; t < d; t++) {
        const diff = x[a * d + t] - x[b * d + t];
        s += diff * diff;
      }
      if (s > threshold) continue;
    }
    keepI.push(a);
    keepJ.push(b);
    scores.push(s);
  }
  const { clusters, drop } = groupPairs(n, keepI, keepJ);
  return {
    i: Uint32Array.from(keepI),
    j: Uint32Array.from(keepJ),
    score: Float64Array.from(scores),
    clusters,
    drop,
    candidates: candidates.length / 2,
  };
}

/** Union-find over the pairs: the groups of two or more, each ascending (keeper = lowest id). */
export function groupPairs(n: number, is: ArrayLike<number>, js: ArrayLike<number>): { clusters: number[][]; drop: Uint32Array } {
  const parent = new Int32Array(n).map((_, k) => k);
  const find = (v: number): number => {
    while (parent[v] !== v) {
      parent[v] = parent[parent[v]];
      v = parent[v];
    }
    return v;
  };
  for (let p = 0; p < is.length; p++) {
    const a = find(is[p]);
    const b = find(js[p]);
    // The smaller root wins, so each root is its cluster's lowest id.
    if (a !== b) parent[Math.max(a, b)] = Math.min(a, b);
  }
  const groups = new Map<number, number[]>();
  const members = new Set<number>();
  for (let p = 0; p < is.length; p++) members.add(is[p]).add(js[p]);
  for (const v of [...members].sort((a, b) => a - b)) {
    const root = find(v);
    const g = groups.get(root);
    if (g) g.push(v);
    else groups.set(root, [v]);
  }
  const clusters = [...groups.values()].sort((a, b) => a[0] - b[0]);
  const drop = Uint32Array.from(clusters.flatMap((c) => c.slice(1))).sort();
  return { clusters, drop };
}
