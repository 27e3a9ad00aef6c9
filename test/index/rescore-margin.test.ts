/**
 * The re-score's margin (RESCORE_MARGIN, src/indexes/rescore.ts) changes results: it is what lets the exact
 * re-score recover neighbours that the kernels' float32 expansion cannot tell from worse ones.
 *
 * Rows (1000, b, 0, 0) against the query (1000, 0, 0, 0): their squared distances b^2 are exact in
 * float64, but the kernels score ||x||^2 - 2 q.x = -1e6 + b^2 in float32, whose step near 1e6 is
 * 1/16, so rows come in groups of equal kernel scores, and within a group the kernels prefer the
 * smaller id. Ids run against b (slot s has b = (199 - s) / 100): in the group that holds the 32nd
 * neighbour the kernels' first choices are the group's worst rows. With k = 32 the kernels return
 * 64 candidates (k + 16 rounded up to a power of two) and the re-score finds the true 32; with no
 * margin they would return 32 and the answer would be wrong (checked by setting the margin to 0).
 */
import { describe, expect, it } from 'vitest';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { suiteBackends } from '../helpers/suite.js';

const { backends } = await suiteBackends();
const d = 4;
const n = 200;
const x = new Float32Array(n * d);
for (let s = 0; s < n; s++) {
  x[s * d] = 1000;
  x[s * d + 1] = (n - 1 - s) / 100;
}
const q = Float32Array.of(1000, 0, 0, 0);
const k = 32;
// The exact order: the smallest b first, the largest slots.
const want = Array.from({ length: k }, (_, i) => n - 1 - i);

describe('the re-score margin', () => {
  for (const [name, backend] of backends) {
    it.skipIf(!backend)(`${name}: Flat and IVF (nprobe = nlist) find the exact 32 nearest where the kernels' float32 scores tie in groups`, async () => {
      const flat = new FlatIndex(backend!, { dim: d });
      await flat.add(x);
      const r = await flat.search(q, k);
      expect(Array.from(r.labels)).toEqual(want);
      expect(Array.from(r.distances)).toEqual(want.map((s) => Math.fround(x[s * d + 1] ** 2)));
      const ivf = new IvfFlatIndex(backend!, { dim: d, nlist: 2, nprobe: 2, niter: 2, seed: 1 });
      await ivf.train(x);
      await ivf.add(x);
      expect(Array.from((await ivf.search(q, k)).labels)).toEqual(want);
      await flat.dispose();
      await ivf.dispose();
    });
  }
});
