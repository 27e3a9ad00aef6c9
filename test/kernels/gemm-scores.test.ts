import { afterAll, describe, expect, it } from 'vitest';
import type { KernelMetric } from '../../src/kernel-facts.js';
import { gemmScores } from '../../src/cpu/gemm-scores.js';
import { norms } from '../../src/cpu/norms.js';
import { padRows, paddedDim } from '../../src/gpu/gpu-backend.js';
import { encodeGemmScores, gemmVariants } from '../../src/gpu/kernels/gemm-scores.js';
import { Kernels } from '../../src/gpu/kernels/kernels.js';
import { randomFloats, randomSmallInts } from '../../src/random.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { KernelHarness, POISON } from './harness.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);

// [nq, nb, d, q0, rows, col0, cols, ldc]: odd sizes, offsets, tiles that are not multiples of the
// 8 x 4 register block, and a stride wider than the tile.
const shapes: number[][] = [
  [1, 1, 1, 0, 1, 0, 1, 1],
  [3, 7, 3, 1, 2, 2, 5, 6],
  [16, 300, 128, 0, 16, 0, 300, 300],
  [21, 130, 17, 4, 13, 9, 121, 125],
  [9, 1030, 5, 0, 9, 3, 1027, 1027],
];

const variants = gpu ? gemmVariants(new Kernels(gpu.ctx)) : [];

describe.skipIf(!gpu)('gpu gemm-scores vs cpu twin', () => {
  it('has the subgroup variant where the adapter reports subgroups of >= 8 lanes', () => {
    console.log(`[gpu] gemm-scores variants: ${variants.join(', ')}`);
    expect(variants).toContain('portable');
  });
  for (const variant of variants) {
  for (const [nq, nb, d, q0, rows, col0, cols, ldc] of shapes) {
    for (const metric of ['l2', 'ip'] as KernelMetric[]) {
      for (const kind of ['int', 'float'] as const) {
        it(`${variant}: nq=${nq} nb=${nb} d=${d} tile ${rows}x${cols} ${metric} ${kind}`, async () => {
          const h = new KernelHarness(gpu!);
          const gen = kind === 'int' ? randomSmallInts : randomFloats;
          const xq = gen(nq * d, 11 + nq);
          const xb = gen(nb * d, 13 + nb);
          const xn = norms(xb, nb, d);
          const dpad = paddedDim(d);
          const scores = h.output(rows * ldc, POISON);
          encodeGemmScores(h.kernels, {
            metric, xq: h.upload(padRows(xq, nq, d, dpad)), xb: h.upload(padRows(xb, nb, d, dpad)),
            xnorm: h.upload(xn), scores, q0, rows, col0, cols, dpad, ldc,
          }, variant);
          await h.run();
          const got = await h.readF32(scores, rows * ldc);
          const want = new Float32Array(rows * ldc).fill(NaN);
          gemmScores(metric, xq, q0, rows, xb, xn, col0, cols, d, want, ldc);
          for (let r = 0; r < rows; r++) {
            for (let c = 0; c < ldc; c++) {
              const g = got[r * ldc + c];
              const w = want[r * ldc + c];
              if (c >= cols) {
                expect(Number.isNaN(g), `(${r}, ${c}) is outside the tile and must not be written`).toBe(true);
              } else if (kind === 'int') {
                expect(g, `(${r}, ${c})`).toBe(w);
              } else {
                // The expansion's terms are about ||x||^2 and 2|q.x|: tolerance scales with them.
                const scale = (metric === 'l2' ? xn[col0 + c] : 0) + 2 * d;
                expect(Math.abs(g - w), `(${r}, ${c})`).toBeLessThanOrEqual(1e-6 * scale);
              }
            }
          }
          h.dispose();
        });
      }
    }
  }
  }
});
