/**
 * The kNN self-join (src/plans/self-knn.ts), each pair of rows scored once and selected along the
 * tile's rows and columns: on small-integer rows (every score exact in float32) it returns, for
 * every row, the k best of all rows by (full squared distance or minus inner product, id), its
 * own id included, the same on the CPU twin and on WebGPU; with rows spread over several chunks
 * (a small binding) and tiles that do not divide the rows; padded where k > n.
 */
import { describe, expect, it } from 'vitest';
import { randomSmallInts } from '../../src/common/random.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import type { KernelMetric } from '../../src/kernel-facts.js';
import { selfKnn } from '../../src/plans/self-knn.js';
import { suiteBackends } from '../helpers/suite.js';

// 32 KiB bindings: the rows over 2 to 4 chunks, the score tiles 90 rows or fewer, the lists within one binding.
const { backends } = await suiteBackends(32 * 1024);

/** Every row's k best (score, id) by brute force in float64 (exact here), ties on the smaller id. */
function bruteForce(x: Float32Array, n: number, d: number, k: number, metric: KernelMetric): { labels: number[]; distances: number[] } {
  const labels: number[] = [];
  const distances: number[] = [];
  for (let i = 0; i < n; i++) {
    const scored = Array.from({ length: n }, (_, j) => {
      let s = 0;
      for (let c = 0; c < d; c++) s += metric === 'l2' ? (x[i * d + c] - x[j * d + c]) ** 2 : -x[i * d + c] * x[j * d + c];
      return [s, j];
    }).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    for (let r = 0; r < k; r++) {
      labels.push(r < n ? scored[r][1] : -1);
      distances.push(r < n ? scored[r][0] : Infinity);
    }
  }
  return { labels, distances };
}

describe('selfKnn', () => {
  for (const [name, backend] of backends) {
    for (const metric of ['l2', 'ip'] as const) {
      for (const [n, d, k] of [
        [300, 40, 9],
        [700, 24, 9],
        [400, 64, 17],
        [5, 3, 8],
      ]) {
        it.skipIf(!backend)(`${name}, ${metric}: n=${n} d=${d} k=${k}, rows over chunks: every row's k best by brute force`, async () => {
          const x = randomSmallInts(n * d, n + d + k, 5);
          const index = new FlatIndex(backend!, { dim: d, metric });
          await index.add(x);
          const store = (index as unknown as { store: Parameters<typeof selfKnn>[1] }).store;
          if (n > 100) expect(store.chunks.length).toBeGreaterThan(1);
          const rowsDone: number[] = [];
          const r = await selfKnn(backend!.device, store, k, metric, (done) => rowsDone.push(done));
          const want = bruteForce(x, n, d, k, metric);
          expect(Array.from(r.labels)).toEqual(want.labels);
          expect(Array.from(r.distances)).toEqual(want.distances);
          expect(rowsDone[rowsDone.length - 1]).toBe(n);
          expect(rowsDone.every((v, i) => i === 0 || v > rowsDone[i - 1])).toBe(true);
          await index.dispose();
        });
      }
    }
  }
});
