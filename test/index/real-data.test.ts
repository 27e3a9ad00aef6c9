import { afterAll, describe, expect, it } from 'vitest';
import { cpuBackend } from '../helpers/cpu.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { L2_ATOL_SCALE, expectTieAwareEqual, l2Exact, tieAwareRecall } from '../helpers/compare.js';
import { norms } from '../../src/cpu/norms.js';
import { loadRealSet } from '../helpers/data.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

const gpu = await gpuBackend();
const cpu = cpuBackend();
afterAll(disposeGpuBackends);

const sets = [
  loadRealSet('siftsmall', 'siftsmall'),
  loadRealSet('fashion-mnist-small', 'fmnistsmall'),
];

describe('flat search on real data reaches tie-aware recall@100 = 1 against published ground truth', () => {
  for (const set of sets) {
    const k = 100;
    const cpuResult = (async () => {
      const index = new FlatIndex(cpu, { dim: set.d });
      await index.add(set.xb);
      return index.search(set.xq, k);
    })();
    const recall = (labels: ArrayLike<number>): number =>
      tieAwareRecall(labels, k, set.gt, set.gtK, set.nq, (q, id) => l2Exact(set.xq, q, set.xb, id, set.d));

    it(`${set.name} (${set.n} x ${set.d}, ${set.nq} queries) on cpu`, async () => {
      expect(recall((await cpuResult).labels)).toBe(1);
    });

    it.skipIf(!gpu)(`${set.name} (${set.n} x ${set.d}, ${set.nq} queries) on webgpu, equal to cpu`, async () => {
      const index = new FlatIndex(gpu!, { dim: set.d });
      await index.add(set.xb);
      const got = await index.search(set.xq, k);
      expect(recall(got.labels)).toBe(1);
      // Integer-valued, but fashion-mnist's norms (up to 784 * 255^2) pass 2^24, so float32 rounds:
      // compare tie-aware, with the tolerance scaled by the expansion's terms.
      const xn = norms(set.xb, set.n, set.d);
      const qn = norms(set.xq, set.nq, set.d);
      const maxXn = xn.reduce((a, b) => Math.max(a, b), 0);
      expectTieAwareEqual(got, await cpuResult, set.nq, k, (r) => L2_ATOL_SCALE * (qn[r] + maxXn), set.name);
    });
  }
});
