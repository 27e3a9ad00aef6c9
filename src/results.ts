import type { KernelMetric } from './kernel-facts.js';
import type { SearchResult } from './types.js';

/**
 * Turns the kernels' minimised running lists into user-facing results, the same way for every
 * backend: l2 adds the query's own norm (Faiss adds ||q||^2 to the final k only) and clamps at 0,
 * since the expansion ||q||^2 + ||x||^2 - 2q.x can come out slightly negative; ip negates back.
 * Padding (id PAD_ID) becomes label -1 and distance +Infinity (l2) or -Infinity (ip).
 *
 * `scores/ids`: `nq * k`, row-major; `qnorms[i] = ||xq row i||^2` (l2 only).
 */
export function finalizeResults(
  metric: KernelMetric,
  scores: Float32Array,
  ids: Uint32Array,
  nq: number,
  k: number,
  qnorms: Float32Array | null,
): SearchResult {
  const distances = new Float32Array(nq * k);
  // PAD_ID (0xffffffff) reads as -1 through an Int32Array view.
  const labels = new Int32Array(ids.buffer.slice(ids.byteOffset, ids.byteOffset + nq * k * 4));
  for (let r = 0; r < nq; r++) {
    const qn = metric === 'l2' ? qnorms![r] : 0;
    for (let j = r * k; j < (r + 1) * k; j++) {
      if (labels[j] === -1) distances[j] = metric === 'l2' ? Infinity : -Infinity;
      else if (metric === 'l2') distances[j] = Math.max(0, scores[j] + qn);
      else distances[j] = -scores[j];
    }
  }
  return { distances, labels };
}
