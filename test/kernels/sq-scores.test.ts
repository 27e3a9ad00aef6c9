import { afterAll, describe, expect, it, vi } from 'vitest';
import { CpuDevice } from '../../src/cpu/cpu-device.js';
import { sqScores } from '../../src/cpu/sq-scores.js';
import type { Device, SqCodeKind } from '../../src/device.js';
import { SQ_SHADERS, SQ_WORKGROUP_COLS, type SqVariant, encodeSqScores, sqVariants } from '../../src/gpu/kernels/sq-scores.js';
import type { KernelMetric } from '../../src/kernel-facts.js';
import { SQ_KINDS, SQ_SHAPES, type SqCase, sqCase, sqMismatch, sqReference } from '../helpers/sq.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { KernelHarness, POISON } from './harness.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);

const variants = gpu ? sqVariants(gpu.device.ctx) : [];

/**
 * Scores the tile (q0, rows, col0, cols, ldc) of case `c` with sq-scores (`variant`, or the
 * default) and with its twin: `got` and `want`, each rows x ldc (NaN outside the tile).
 */
async function scoreTile(
  h: KernelHarness,
  variant: SqVariant | undefined,
  c: SqCase,
  metric: KernelMetric,
  [q0, rows, col0, cols, ldc]: number[],
): Promise<{ got: Float32Array; want: Float32Array }> {
  const scores = h.output(rows * ldc, POISON);
  encodeSqScores(h.kernels, {
    metric, kind: c.kind, xq: h.upload(c.xq), qbias: h.upload(c.qbias), codes: h.upload(c.codes), xnorm: h.upload(c.xnorm),
    scores, q0, rows, col0, cols, dpad: c.dpad, codeWords: c.codeWords, ldc,
  }, variant);
  await h.run();
  const got = await h.readF32(scores, rows * ldc);
  const want = new Float32Array(rows * ldc).fill(NaN);
  sqScores(metric, c.kind, c.xq, c.qbias, q0, rows, c.codes, c.xnorm, col0, cols, c.dpad, c.codeWords, want, ldc);
  return { got, want };
}

describe.skipIf(!gpu)('gpu sq-scores vs cpu twin', () => {
  it('offers portable everywhere and subgroup (the default) exactly where subgroups have >= 8 lanes', () => {
    const { ctx } = gpu!.device;
    console.log(`[gpu] sq-scores variants: ${variants.join(', ')} (hasSubgroups8 = ${ctx.hasSubgroups8})`);
    expect(variants).toEqual(ctx.hasSubgroups8 ? ['subgroup', 'portable'] : ['portable']);
  });

  it('each variant runs its own shader with the kind and metric as constants; the default runs the first', async () => {
    const c = sqCase('sq4', 21, 130, 17, 'int', 5);
    for (const chosen of [undefined, ...variants]) {
      const h = new KernelHarness(gpu!);
      const get = vi.spyOn(h.kernels.pipelines, 'get');
      try {
        await scoreTile(h, chosen, c, 'ip', [4, 13, 9, 121, 125]);
        expect(get.mock.calls.map(([name, k]) => [name, k?.KIND, k?.METRIC])).toEqual([[SQ_SHADERS[chosen ?? variants[0]], 1, 1]]);
      } finally {
        get.mockRestore();
        h.dispose();
      }
    }
  });

  it('splits a tile wider than one dispatch allows into several dispatches, and refuses too many rows', async () => {
    const { ctx } = gpu!.device;
    const real = ctx.limits;
    // Two workgroups per dimension: 1027 columns (5 workgroups of 256) take 3 dispatches.
    const limits = { maxComputeWorkgroupsPerDimension: 2, maxComputeInvocationsPerWorkgroup: real.maxComputeInvocationsPerWorkgroup };
    const spy = vi.spyOn(ctx, 'limits', 'get').mockReturnValue(limits as GPUSupportedLimits);
    try {
      for (const variant of variants) {
        const c = sqCase('sq8', 16, 1030, 9, 'int', 23);
        const h = new KernelHarness(gpu!);
        const dispatch = vi.spyOn(h.kernels.recorder, 'dispatch');
        try {
          const { got, want } = await scoreTile(h, variant, c, 'l2', [0, 16, 3, 1027, 1027]);
          expect(SQ_WORKGROUP_COLS).toBe(256);
          expect(dispatch.mock.calls.map(([, , params, , groups]) => [params[7], ...groups])).toEqual([[0, 2, 2], [512, 2, 2], [1024, 1, 2]]);
          expect(sqMismatch(got, want, want, 1027, 0), variant).toBeNull();
          await expect(scoreTile(h, variant, c, 'l2', [0, 17, 0, 4, 4])).rejects.toThrow(/needs 3 workgroups of 8 queries; the device allows 2 per dimension/);
        } finally {
          dispatch.mockRestore();
          h.dispose();
        }
      }
    } finally {
      spy.mockRestore();
    }
  });

  it('through the Device interface (GpuDevice and CpuDevice) gives the same scores', async () => {
    const c = sqCase('fp16', 30, 70, 13, 'int', 29, 1);
    const [q0, rows, col0, cols, ldc] = [2, 27, 5, 60, 64];
    const run = async (device: Device): Promise<Float32Array> => {
      const put = (label: string, data: Float32Array | Uint32Array) => {
        const b = device.buffer(label, data.byteLength);
        device.upload(b, 0, data);
        return b;
      };
      const scores = put('scores', new Float32Array(rows * ldc).fill(NaN));
      device.dispatch({
        kernel: 'sq-scores', metric: 'l2', kind: c.kind, xq: put('xq', c.xq), qbias: put('qbias', c.qbias), codes: put('codes', c.codes),
        xnorm: put('xnorm', c.xnorm), scores, q0, rows, col0, cols, dpad: c.dpad, codeWords: c.codeWords, ldc,
      });
      const [bytes] = await device.read([{ buffer: scores, offset: 0, bytes: rows * ldc * 4 }]);
      return new Float32Array(bytes);
    };
    const cpu = await run(new CpuDevice());
    const { want } = sqReference(c, 'l2', q0, rows, col0, cols, ldc);
    expect(sqMismatch(cpu, want, want, ldc, 0), 'cpu').toBeNull();
    expect(sqMismatch(await run(gpu!.device), cpu, cpu, ldc, 0), 'gpu').toBeNull();
  });

  for (const variant of variants) {
    for (const kind of SQ_KINDS as SqCodeKind[]) {
      for (const [nq, nb, d, q0, rows, col0, cols, ldc] of SQ_SHAPES) {
        for (const data of ['int', 'float'] as const) {
          it(`${variant} ${kind}: nq=${nq} nb=${nb} d=${d} tile ${rows}x${cols} ${data}`, async () => {
            // Rows of d % 3 words more than the kernel reads (a store's rows may be longer).
            const c = sqCase(kind, nq, nb, d, data, 31 + nq + d, d % 3);
            for (const metric of ['l2', 'ip'] as KernelMetric[]) {
              const h = new KernelHarness(gpu!);
              try {
                const { got, want } = await scoreTile(h, variant, c, metric, [q0, rows, col0, cols, ldc]);
                // Small integers: every intermediate is exact, so equal. Floats: the twin sums in
                // float64, the kernel in float32: within 1e-6 of the terms' size (gemm-scores' bound).
                const { scale } = sqReference(c, metric, q0, rows, col0, cols, ldc);
                expect(sqMismatch(got, want, scale, ldc, data === 'int' ? 0 : 1e-6), metric).toBeNull();
              } finally {
                h.dispose();
              }
            }
          });
        }
      }
    }
  }
});
