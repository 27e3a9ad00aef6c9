import { afterAll, describe, expect, it } from 'vitest';
import { kmeansBlocks, kmeansPartial, kmeansReduce } from '../../src/cpu/kmeans-update.js';
import { padRows, paddedDim } from '../../src/device.js';
import { encodeKmeansPartial, encodeKmeansReduce } from '../../src/gpu/kernels/kmeans-update.js';
import { randomFloats, rng } from '../../src/common/random.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { KernelHarness, POISON } from './harness.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);

// [n, d, nc]: one block, several blocks, odd d, empty centroids (nc > n / 2).
const shapes: number[][] = [[1, 1, 1], [50, 3, 4], [3000, 17, 9], [5000, 8, 4000]];

describe.skipIf(!gpu)('gpu kmeans-partial and kmeans-reduce vs cpu twins', () => {
  for (const [n, d, nc] of shapes) {
    it(`n=${n} d=${d} nc=${nc}`, async () => {
      const h = new KernelHarness(gpu!);
      const x = randomFloats(n * d, n + d);
      const r = rng(nc);
      const label = Uint32Array.from({ length: n }, () => Math.floor(r() * nc));
      const score = Float32Array.from({ length: n }, () => -r());
      const xnorm = Float32Array.from({ length: n }, () => 2 * r());
      const dpad = paddedDim(d);
      const { block, nblocks } = kmeansBlocks(n, nc, dpad);
      const sums = h.upload(new Float32Array(nblocks * nc * dpad));
      const counts = h.upload(new Uint32Array(nblocks * nc));
      const obj = h.upload(new Float32Array(nblocks));
      const start = randomFloats(nc * d, 5);
      const centroids = h.upload(padRows(start, nc, d, dpad));
      const outCounts = h.output(nc, POISON);
      // The points in two chunks, split inside a block: the kernel adds each chunk to the blocks
      // it touches, in point order, so the sums are those of one pass over all points.
      const split = Math.min(n - 1, Math.floor(block / 2) + 1);
      for (const [p0, m] of [[0, split], [split, n - split]]) {
        encodeKmeansPartial(h.kernels, {
          x: h.upload(padRows(x.subarray(p0 * d), m, d, dpad)), xnorm: h.upload(xnorm.subarray(p0, p0 + m)),
          score: h.upload(score.subarray(p0, p0 + m)), label: h.upload(label.subarray(p0, p0 + m)),
          sums, counts, obj, n: m, p0, dpad, nc, block,
        });
      }
      encodeKmeansReduce(h.kernels, { sums, counts, centroids, outCounts, nc, dpad, nblocks });
      await h.run();
      const wSums = new Float32Array(nblocks * nc * d);
      const wCounts = new Uint32Array(nblocks * nc);
      const wObj = new Float32Array(nblocks);
      kmeansPartial(x, xnorm, score, label, n, 0, d, nc, block, wSums, wCounts, wObj);
      const wCentroids = start.slice();
      const wOut = new Uint32Array(nc);
      kmeansReduce(wSums, wCounts, nc, d, nblocks, wCentroids, wOut);
      // Same additions in the same order: sums, counts and objective agree bit for bit.
      expect(Array.from(await h.readU32(counts, nblocks * nc))).toEqual(Array.from(wCounts));
      expect(Array.from(await h.readF32(obj, nblocks))).toEqual(Array.from(wObj));
      const gotSums = await h.readF32(sums, nblocks * nc * dpad);
      for (let i = 0; i < nblocks * nc; i++) {
        for (let j = 0; j < d; j++) expect(gotSums[i * dpad + j], `sum ${i} ${j}`).toBe(wSums[i * d + j]);
      }
      expect(Array.from(await h.readU32(outCounts, nc))).toEqual(Array.from(wOut));
      // Division may differ in the last bit on some GPUs.
      const got = await h.readF32(centroids, nc * dpad);
      for (let c = 0; c < nc; c++) {
        for (let j = 0; j < d; j++) {
          const w = wCentroids[c * d + j];
          expect(Math.abs(got[c * dpad + j] - w), `centroid ${c} ${j}`).toBeLessThanOrEqual(2 ** -22 * Math.abs(w));
        }
      }
      h.dispose();
    });
  }
});
