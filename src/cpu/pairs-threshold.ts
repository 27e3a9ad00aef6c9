import type { KernelMetric } from '../kernel-facts.js';
import type { PairList } from '../common/pairs.js';

/**
 * CPU twin of shaders/pairs-threshold.wgsl: appends to `out` the pairs (i, j), i = q0 + r, j = id0 + c,
 * with i < j unless `allPairs` (range search: every pair), whose score passes `limit` with the
 * relative margin `rel` (see the shader), in row-major order.
 * `xnormQ[r]` is query row r's squared norm (row 0 of the tile at index 0), `xnormB[c]` column c's.
 */
export function pairsThreshold(
  metric: KernelMetric,
  allPairs: boolean,
  scores: Float32Array,
  ldc: number,
  rows: number,
  cols: number,
  q0: number,
  id0: number,
  xnormQ: Float32Array,
  xnormB: Float32Array,
  limit: number,
  rel: number,
  out: PairList,
): void {
  const lim = Math.fround(limit);
  const margin = Math.fround(rel);
  for (let r = 0; r < rows; r++) {
    const i = q0 + r;
    const qn = xnormQ[r];
    for (let c = allPairs ? 0 : Math.max(0, i + 1 - id0); c < cols; c++) {
      const s = metric === 'l2' ? Math.fround(scores[r * ldc + c] + qn) : scores[r * ldc + c];
      if (s <= Math.fround(lim + Math.fround(margin * Math.fround(qn + xnormB[c])))) out.push(i, id0 + c);
    }
  }
}
