/**
 * pq-tables and pq-scores on the GPU against their CPU twins: pq-scores to the bit (the same
 * float32 sums in the same order) in both variants (table in workgroup memory, or read from
 * storage), at tile offsets, over every code width; pq-tables to float32 rounding.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { pqScores } from '../../src/cpu/pq-scores.js';
import { pqTables } from '../../src/cpu/pq-tables.js';
import { type PqVariant, encodePqScores, pqVariant } from '../../src/gpu/kernels/pq-scores.js';
import { encodePqTables } from '../../src/gpu/kernels/pq-tables.js';
import { randomFloats } from '../../src/common/random.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { firstMismatch, packCodes, randomCodes } from '../helpers/pq.js';
import { KernelHarness, POISON, withWorkgroupLimit } from './harness.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);

describe.skipIf(!gpu)('gpu pq-scores and pq-tables vs cpu twins', () => {
  for (const nbits of [4, 5, 7, 8]) {
    for (const variant of ['shared', 'storage'] as PqVariant[]) {
      it(`pq-scores, nbits ${nbits}, table in ${variant} memory: the twin's bits, at offsets, nothing written outside the tile`, async () => {
        const M = 9;
        const ksub = 1 << nbits;
        const rowWords = Math.ceil((M * nbits) / 32);
        const n = 1500; // more than one workgroup's 1024 columns
        const codes = packCodes(randomCodes(n, M, nbits, nbits), nbits, rowWords);
        const rows = 5;
        const ldc = 1400;
        const luts = randomFloats(rows * M * ksub, 11).map((v) => 50 * v);
        const qbias = randomFloats(12, 12);
        const h = new KernelHarness(gpu!);
        try {
          const scores = h.output(rows * ldc, POISON);
          const a = { luts: h.upload(luts), qbias: h.upload(qbias), codes: h.upload(codes), scores, q0: 6, rows, col0: 90, cols: 1390, ldc, M, nbits, codeWords: rowWords };
          encodePqScores(h.kernels, a, variant);
          await h.run();
          const got = await h.readF32(scores, rows * ldc);
          const want = new Float32Array(rows * ldc).fill(NaN);
          pqScores(luts, qbias, 6, rows, codes, 90, 1390, M, nbits, rowWords, want, ldc);
          expect(firstMismatch(got, want, 0)).toBeNull();
          const poison = new Uint32Array(got.buffer);
          for (let r = 0; r < rows; r++) for (let c = 1390; c < ldc; c++) expect(poison[r * ldc + c]).toBe(POISON);
        } finally {
          h.dispose();
        }
      });
    }
  }

  it('holds the table in workgroup memory only where M x 2^nbits floats fit the device', () => {
    const h = new KernelHarness(gpu!);
    const limit = gpu!.device.ctx.limits.maxComputeWorkgroupStorageSize;
    console.log(`[gpu] maxComputeWorkgroupStorageSize ${limit}: PQ16 ${pqVariant(h.kernels, 16, 8)}, PQ56 ${pqVariant(h.kernels, 56, 8)}`);
    expect(pqVariant(h.kernels, Math.floor(limit / 1024), 8)).toBe('shared');
    expect(pqVariant(h.kernels, Math.floor(limit / 1024) + 1, 8)).toBe('storage');
    h.dispose();
  });

  it('splits columns beyond one dispatch into several dispatches', () =>
    withWorkgroupLimit(gpu!, 2, async (h, dispatch) => {
      const M = 4;
      const nbits = 8;
      const n = 5000;
      const codes = packCodes(randomCodes(n, M, nbits, 3), nbits, 1);
      const luts = randomFloats(2 * M * 256, 4);
      const qbias = new Float32Array(2);
      const scores = h.output(2 * n, POISON);
      encodePqScores(h.kernels, { luts: h.upload(luts), qbias: h.upload(qbias), codes: h.upload(codes), scores, q0: 0, rows: 2, col0: 0, cols: n, ldc: n, M, nbits, codeWords: 1 });
      await h.run();
      // 5000 columns are 5 workgroups of 1024: dispatches of 2, 2 and 1.
      expect(dispatch.mock.calls.map(([, , params, , groups]) => [params[7], ...groups])).toEqual([[0, 2, 2], [2048, 2, 2], [4096, 1, 2]]);
      const want = new Float32Array(2 * n);
      pqScores(luts, qbias, 0, 2, codes, 0, n, M, nbits, 1, want, n);
      expect(firstMismatch(await h.readF32(scores, 2 * n), want, 0)).toBeNull();
    }));

  for (const metric of ['l2', 'ip'] as const) {
    it(`pq-tables (${metric}) equals its twin to float32 rounding, and exactly on small integers`, async () => {
      const M = 8;
      const ksub = 32;
      const dsub = 5;
      const dpad = 40;
      for (const [label, xq, codebook, tol] of [
        ['random', randomFloats(12 * dpad, 21), randomFloats(M * ksub * dsub, 22), 1e-5],
        ['integers', randomFloats(12 * dpad, 23).map((v) => Math.round(8 * v)), randomFloats(M * ksub * dsub, 24).map((v) => Math.round(8 * v)), 0],
      ] as const) {
        const h = new KernelHarness(gpu!);
        try {
          const rows = 7;
          const luts = h.output(rows * M * ksub, POISON);
          encodePqTables(h.kernels, { metric, xq: h.upload(xq), codebook: h.upload(codebook), luts, q0: 3, rows, M, ksub, dsub, dpad });
          await h.run();
          const want = new Float32Array(rows * M * ksub);
          pqTables(metric, xq, codebook, want, 3, rows, M, ksub, dsub, dpad);
          expect(firstMismatch(await h.readF32(luts, rows * M * ksub), want, tol), label).toBeNull();
        } finally {
          h.dispose();
        }
      }
    });
  }
});
