import { type KernelMetric, PAD_ID } from '../kernel-facts.js';
import type { SlotResult } from '../types.js';

/**
 * Turns the kernels' minimised running lists into user-facing results, the same way for every
 * backend: l2 adds the query's own norm (Faiss adds ||q||^2 to the final k only) and clamps at 0,
 * since the expansion ||q||^2 + ||x||^2 - 2q.x can come out slightly negative; ip negates back.
 * Padding (id PAD_ID) becomes label -1 and distance +Infinity (l2) or -Infinity (ip), and so does
 * an entry scored +Infinity: a column masked out (mask-scores), never a stored vector, whose
 * minimised scores are finite (see checkVectors), kept by selection only when a row has fewer
 * allowed vectors than k.
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
): SlotResult {
  const distances = new Float32Array(nq * k);
  // PAD_ID (0xffffffff) reads as -1 through an Int32Array view.
  const labels = new Int32Array(ids.buffer.slice(ids.byteOffset, ids.byteOffset + nq * k * 4));
  for (let r = 0; r < nq; r++) {
    const qn = metric === 'l2' ? qnorms![r] : 0;
    for (let j = r * k; j < (r + 1) * k; j++) {
      if (labels[j] === -1 || scores[j] === Infinity) {
        labels[j] = -1;
        distances[j] = metric === 'l2' ? Infinity : -Infinity;
      } else if (metric === 'l2') distances[j] = Math.max(0, scores[j] + qn);
      else distances[j] = -scores[j];
    }
  }
  return { distances, labels };
}

/**
 * Sorts each of `rows` lists of k (score, id) in place by (score, id), best first (row r at
 * `r * k`): the entries before the row's first PAD_ID, which select-radix leaves in no particular
 * order (padding follows them). Each entry becomes one 64-bit word, the score's bits made
 * order-preserving above the id, and a native sort orders the words. Those bits put -0 below +0,
 * which the kernels take as equal scores: a row holding both has its zeros put in id order.
 */
export function sortLists(scores: Float32Array, ids: Uint32Array, rows: number, k: number): void {
  const bits = new Uint32Array(scores.buffer, scores.byteOffset, scores.length);
  const words = new BigUint64Array(k);
  // Each word's halves, little-endian (as on every WebGPU host): [2j] the id, [2j + 1] the key.
  const half = new Uint32Array(words.buffer);
  for (let r = 0; r < rows; r++) {
    const o = r * k;
    let m = 0;
    for (; m < k && ids[o + m] !== PAD_ID; m++) {
      const b = bits[o + m];
      half[2 * m] = ids[o + m];
      half[2 * m + 1] = b & 0x80000000 ? ~b : b | 0x80000000;
    }
    words.subarray(0, m).sort();
    for (let j = 0; j < m; j++) {
      const key = half[2 * j + 1];
      bits[o + j] = key & 0x80000000 ? key & 0x7fffffff : ~key;
      ids[o + j] = half[2 * j];
    }
    orderZerosById(bits, ids, o, o + m);
  }
}

/** In sorted entries [from, to) (score bits, id), puts the run of -0 and +0 scores in id order. */
function orderZerosById(bits: Uint32Array, ids: Uint32Array, from: number, to: number): void {
  let a = from;
  while (a < to && bits[a] !== 0x80000000) a++; // -0 sorts first among the zeros
  let e = a;
  while (e < to && (bits[e] << 1) === 0) e++;
  if (a === e || bits[e - 1] !== 0) return; // no -0, or no +0 after it
  const zeros = Array.from({ length: e - a }, (_, j) => [ids[a + j], bits[a + j]]).sort((x, y) => x[0] - y[0]);
  zeros.forEach(([id, b], j) => {
    ids[a + j] = id;
    bits[a + j] = b;
  });
}

/**
 * Rows [start, start + rows) searched for k + 1 neighbours of the index's own vectors (row i has id
 * start + i): each row's k neighbours without its own id, or, where ties pushed it out of the
 * k + 1, without the last. The kNN graph job (src/jobs/knn-graph.ts), the sharded kNN graph
 * (src/cli/cluster/shard-search.ts) and a CAGRA index's intermediate graph drop them with this.
 */
export function dropSelf(labelsIn: ArrayLike<number>, distancesIn: Float32Array, rows: number, k: number, start: number): { labels: Float64Array; distances: Float32Array } {
  const kk = k + 1;
  const labels = new Float64Array(rows * k);
  const distances = new Float32Array(rows * k);
  for (let i = 0; i < rows; i++) {
    let o = 0;
    for (let j = 0; j < kk && o < k; j++) {
      if (labelsIn[i * kk + j] === start + i) continue;
      labels[i * k + o] = labelsIn[i * kk + j];
      distances[i * k + o] = distancesIn[i * kk + j];
      o++;
    }
  }
  return { labels, distances };
}

/** Lists of `k` (score, label) a row widened to `width` a row, the new slots empty (+Infinity, -1). */
export function padSlots(r: { distances: Float32Array; labels: Int32Array }, rows: number, k: number, width: number): { distances: Float32Array; labels: Int32Array } {
  const distances = new Float32Array(rows * width).fill(Infinity);
  const labels = new Int32Array(rows * width).fill(-1);
  for (let q = 0; q < rows; q++) {
    distances.set(r.distances.subarray(q * k, (q + 1) * k), q * width);
    labels.set(r.labels.subarray(q * k, (q + 1) * k), q * width);
  }
  return { distances, labels };
}
