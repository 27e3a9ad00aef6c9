import { afterAll, describe, expect, it } from 'vitest';
import type { KernelMetric } from '../../src/kernel-facts.js';
import { gemmScores } from '../../src/cpu/gemm-scores.js';
import { norms } from '../../src/cpu/norms.js';
import { pairsThreshold } from '../../src/cpu/pairs-threshold.js';
import { encodePairsThreshold } from '../../src/gpu/kernels/pairs-threshold.js';
import { PairList, sortTilePairs } from '../../src/common/pairs.js';
import { randomSmallInts } from '../../src/common/random.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { KernelHarness } from './harness.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);

describe.skipIf(!gpu)('gpu pairs-threshold vs cpu twin', () => {
  // [n, d, q0, rows, id0, cols, limit, capacity]: a tile on the diagonal, one right of it and one
  // left of it (no pair i < j there: the self-join finds none, all pairs finds them all); a
  // capacity too small, where the count must still be exact.
  const shapes: number[][] = [
    [90, 5, 0, 40, 0, 90, 12, 10_000],
    [90, 5, 20, 30, 50, 40, 20, 10_000],
    [90, 5, 60, 30, 0, 45, 20, 10_000],
    [90, 5, 0, 90, 0, 90, 30, 7],
  ];
  for (const [n, d, q0, rows, id0, cols, limit, capacity] of shapes) {
    for (const metric of ['l2', 'ip'] as KernelMetric[]) {
      for (const allPairs of [false, true]) {
        it(`n=${n} rows ${q0}+${rows} cols ${id0}+${cols} ${metric} limit ${limit} capacity ${capacity}${allPairs ? ' all pairs' : ''}`, async () => {
          const h = new KernelHarness(gpu!);
          const x = randomSmallInts(n * d, n + q0, 3);
          const xn = norms(x, n, d);
          const lim = metric === 'l2' ? limit : -limit / 2;
          const scores = new Float32Array(rows * cols);
          gemmScores(metric, x, q0, rows, x, xn, id0, cols, d, scores, cols);
          const rel = 1e-6;
          const count = h.upload(new Uint32Array(1));
          const pairs = h.upload(new Uint32Array(2 * capacity));
          encodePairsThreshold(h.kernels, {
            metric, allPairs, scores: h.upload(scores), xnormQ: h.upload(xn), xnormB: h.upload(xn), count, pairs, rows, cols, ldc: cols,
            q0, id0, limit: lim, rel, capacity, qn0: q0, cn0: id0,
          });
          await h.run();
          const list = new PairList(4);
          pairsThreshold(metric, allPairs, scores, cols, rows, cols, q0, id0, xn.subarray(q0), xn.subarray(id0), lim, rel, list);
          const want = Array.from(list.view());
          const got = (await h.readU32(count, 1))[0];
          expect(got).toBe(want.length / 2);
          if (got <= capacity) {
            expect(Array.from(sortTilePairs(await h.readU32(pairs, 2 * got), q0, rows, false))).toEqual(want);
          }
          // Left of the diagonal only all pairs finds any.
          if (allPairs || q0 < id0 + cols - 1) expect(want.length).toBeGreaterThan(0);
          else expect(want.length).toBe(0);
          h.dispose();
        });
      }
    }
  }
});
