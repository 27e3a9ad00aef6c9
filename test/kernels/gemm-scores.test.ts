import { afterAll, describe, expect, it, vi } from 'vitest';
import type { KernelMetric } from '../../src/kernel-facts.js';
import { gemmScores } from '../../src/cpu/gemm-scores.js';
import { norms } from '../../src/cpu/norms.js';
import { padRows, paddedDim } from '../../src/device.js';
import { GEMM_SHADERS, encodeGemmScores, gemmVariants } from '../../src/gpu/kernels/gemm-scores.js';
import type { GemmVariant } from '../../src/gpu/kernels/gemm-variant.js';
import { randomFloats, randomSmallInts } from '../../src/common/random.js';
import { expectIdentical } from '../helpers/compare.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { SCORE_TILE_SHAPES } from '../helpers/score-tiles.js';
import { KernelHarness, POISON } from './harness.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);

const shapes = SCORE_TILE_SHAPES;

const variants = gpu ? gemmVariants(gpu.device.ctx) : [];

/**
 * Scores one tile of `shape` ([nq, nb, d, q0, rows, col0, cols, ldc]) of `xq` against `xb` with
 * gemm-scores (`variant`, or the default) and with its twin: `got` and `want`, each rows x ldc
 * (NaN outside the tile), and `xn`, the base norms.
 */
async function scoreTile(
  h: KernelHarness,
  variant: GemmVariant | undefined,
  shape: number[],
  metric: KernelMetric,
  xq: Float32Array,
  xb: Float32Array,
): Promise<{ got: Float32Array; want: Float32Array; xn: Float32Array }> {
  const [nq, nb, d, q0, rows, col0, cols, ldc] = shape;
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
  return { got, want, xn };
}

describe.skipIf(!gpu)('gpu gemm-scores vs cpu twin', () => {
  it('offers portable and tiled everywhere, and subgroup exactly where subgroups have >= 8 lanes', () => {
    const { ctx, gemm } = gpu!.device;
    console.log(`[gpu] gemm-scores variants: ${variants.join(', ')} (hasSubgroups8 = ${ctx.hasSubgroups8}); chosen: ${gemm.variant} (${gemm.source})`);
    expect(variants).toEqual(ctx.hasSubgroups8 ? ['subgroup', 'portable', 'tiled'] : ['portable', 'tiled']);
    expect(variants).toContain(gemm.variant);
    if (ctx.hasSubgroups8) expect(ctx.device.features.has('subgroups'), 'the device was created with the subgroups feature').toBe(true);
  });

  it("each variant runs its own shader, the default runs the device's choice, and each equals the cpu twin", async () => {
    const shape = [21, 130, 17, 4, 13, 9, 121, 125];
    const [nq, nb, d, , rows, , cols, ldc] = shape;
    for (const chosen of [undefined, ...variants]) {
      for (const metric of ['l2', 'ip'] as KernelMetric[]) {
        const h = new KernelHarness(gpu!);
        // Which shader each dispatch asked the pipeline cache for.
        const requested: string[] = [];
        const get = h.kernels.pipelines.get.bind(h.kernels.pipelines);
        const spy = vi.spyOn(h.kernels.pipelines, 'get').mockImplementation((name, constants) => {
          requested.push(name);
          return get(name, constants);
        });
        try {
          const { got, want } = await scoreTile(h, chosen, shape, metric, randomSmallInts(nq * d, 5), randomSmallInts(nb * d, 6));
          expect(requested, `variant ${chosen ?? '(default)'}`).toEqual([GEMM_SHADERS[chosen ?? gpu!.device.gemm.variant]]);
          // Small integers: every intermediate is exact, so the tile must equal the twin's
          // (labels: the element's place in the tile, so a difference says where it is).
          const tile = (a: Float32Array): Float32Array => Float32Array.from({ length: rows * cols }, (_, e) => a[Math.floor(e / cols) * ldc + (e % cols)]);
          const at = Int32Array.from({ length: rows * cols }, (_, e) => e);
          expectIdentical({ distances: tile(got), labels: at }, { distances: tile(want), labels: at }, `variant ${chosen ?? '(default)'} ${metric} (element r * ${cols} + c)`);
        } finally {
          spy.mockRestore();
          h.dispose();
        }
      }
    }
  });

  it('tiled with 8 x 8 workgroups, where a device allows fewer than 256 invocations (compatibility mode), equals the cpu twin', async () => {
    const { ctx } = gpu!.device;
    const real = ctx.limits;
    const limits = { maxComputeWorkgroupsPerDimension: real.maxComputeWorkgroupsPerDimension, maxComputeInvocationsPerWorkgroup: 128 };
    const spy = vi.spyOn(ctx, 'limits', 'get').mockReturnValue(limits as GPUSupportedLimits);
    const shape = [150, 200, 37, 5, 139, 11, 181, 190];
    const [nq, nb, d] = shape;
    try {
      for (const metric of ['l2', 'ip'] as KernelMetric[]) {
        const h = new KernelHarness(gpu!);
        const get = vi.spyOn(h.kernels.pipelines, 'get');
        try {
          const { got, want } = await scoreTile(h, 'tiled', shape, metric, randomSmallInts(nq * d, 7), randomSmallInts(nb * d, 8));
          expect(get.mock.calls.map(([name, constants]) => [name, constants?.TW])).toEqual([['gemm-scores-tiled', 8]]);
          // Small integers: exact. NaN outside the tile on both sides (unwritten), so every element compares.
          const bad = got.findIndex((g, e) => g !== want[e] && !(Number.isNaN(g) && Number.isNaN(want[e])));
          expect(bad, `${metric}: the first element that differs (r * ldc + c)`).toBe(-1);
        } finally {
          get.mockRestore();
          h.dispose();
        }
      }
    } finally {
      spy.mockRestore();
    }
  });

  for (const variant of variants) {
  for (const [nq, nb, d, q0, rows, col0, cols, ldc] of shapes) {
    for (const metric of ['l2', 'ip'] as KernelMetric[]) {
      for (const kind of ['int', 'float'] as const) {
        it(`${variant}: nq=${nq} nb=${nb} d=${d} tile ${rows}x${cols} ${metric} ${kind}`, async () => {
          const h = new KernelHarness(gpu!);
          const gen = kind === 'int' ? randomSmallInts : randomFloats;
          const shape = [nq, nb, d, q0, rows, col0, cols, ldc];
          const { got, want, xn } = await scoreTile(h, variant, shape, metric, gen(nq * d, 11 + nq), gen(nb * d, 13 + nb));
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
