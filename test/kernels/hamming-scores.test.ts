/**
 * hamming-scores on the GPU against its CPU twin: the same integers, at tile offsets, over code
 * widths of 1 to 25 words, rows not a multiple of the workgroup's 4, and columns across several
 * workgroups and dispatches; nothing written outside the tile.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { hammingScores } from '../../src/cpu/hamming-scores.js';
import { encodeHammingScores } from '../../src/gpu/kernels/hamming-scores.js';
import { rng } from '../../src/common/random.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { KernelHarness, POISON, withWorkgroupLimit } from './harness.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);

function randomWords(len: number, seed: number): Uint32Array {
  const r = rng(seed);
  return Uint32Array.from({ length: len }, () => Math.floor(r() * 2 ** 32) >>> 0);
}

describe.skipIf(!gpu)('gpu hamming-scores vs cpu twin', () => {
  for (const [codeWords, rows, cols] of [[1, 1, 1], [2, 5, 300], [12, 7, 1100], [25, 9, 257]]) {
    it(`${codeWords} words a code, a ${rows} x ${cols} tile at offsets: the twin's scores, nothing written outside the tile`, async () => {
      const q0 = 3;
      const col0 = 40;
      const ldc = cols + 6;
      const xq = randomWords((q0 + rows + 2) * codeWords, codeWords);
      const codes = randomWords((col0 + cols + 5) * codeWords, codeWords + 100);
      const h = new KernelHarness(gpu!);
      try {
        const scores = h.output(rows * ldc, POISON);
        encodeHammingScores(h.kernels, { xq: h.upload(xq), codes: h.upload(codes), scores, q0, rows, col0, cols, ldc, codeWords });
        await h.run();
        const got = await h.readU32(scores, rows * ldc);
        const want = new Float32Array(rows * ldc);
        new Uint32Array(want.buffer).fill(POISON);
        hammingScores(xq, q0, rows, codes, col0, cols, codeWords, want, ldc);
        expect(Array.from(got)).toEqual(Array.from(new Uint32Array(want.buffer)));
      } finally {
        h.dispose();
      }
    });
  }

  it('splits columns beyond one dispatch into several dispatches', () =>
    withWorkgroupLimit(gpu!, 2, async (h, dispatch) => {
      const n = 1200;
      const xq = randomWords(2 * 2, 1);
      const codes = randomWords(n * 2, 2);
      const scores = h.output(2 * n, POISON);
      encodeHammingScores(h.kernels, { xq: h.upload(xq), codes: h.upload(codes), scores, q0: 0, rows: 2, col0: 0, cols: n, ldc: n, codeWords: 2 });
      await h.run();
      // 1200 columns are 5 workgroups of 256: dispatches of 2, 2 and 1.
      expect(dispatch.mock.calls.map(([, , params, , groups]) => [params[6], ...groups])).toEqual([[0, 2, 1], [512, 2, 1], [1024, 1, 1]]);
      const want = new Float32Array(2 * n);
      hammingScores(xq, 0, 2, codes, 0, n, 2, want, n);
      expect(Array.from(await h.readF32(scores, 2 * n))).toEqual(Array.from(want));
    }));
});
