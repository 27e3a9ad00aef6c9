/** Summary statistics for repeated timings, tables, and recall against exact results. */
import type { Metric, SearchResult } from 'webgpu-knn';
export interface Summary {
  median: number;
  min: number;
  max: number;
  /** (max - min) / median: the run-to-run spread. */
  spread: number;
}

export function summarize(values: number[]): Summary {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  const median = s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
  return { median, min: s[0], max: s[s.length - 1], spread: median > 0 ? (s[s.length - 1] - s[0]) / median : 0 };
}

/** Left-aligned text table. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/**
 * Tie-aware recall@r of `got` against exact results `exact` (both `nq * k`, r <= k): a returned id
 * counts when its distance is no worse than the exact r-th distance (within float32 rounding).
 * Padding in the exact results (fewer than r vectors) is not counted.
 */
export function recallAt(r: number, got: SearchResult, exact: SearchResult, nq: number, k: number, metric: Metric): number {
  const sign = metric === 'l2' ? 1 : -1;
  let hits = 0;
  let total = 0;
  for (let q = 0; q < nq; q++) {
    const rth = sign * exact.distances[q * k + r - 1];
    const tol = 1e-5 * Math.max(1, Math.abs(rth));
    for (let j = 0; j < r; j++) {
      if (exact.labels[q * k + j] === -1) continue;
      total++;
      if (got.labels[q * k + j] !== -1 && sign * got.distances[q * k + j] <= rth + tol) hits++;
    }
  }
  return total ? hits / total : 1;
}
