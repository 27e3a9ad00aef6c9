/**
 * Score tiles never ask gemm-scores for more columns than one call may score: the tiling caps them
 * at `limits.maxTileCols`, and on the GPU that limit is exactly where the chosen variant's dispatch
 * runs out of workgroups (65535 per dimension by default: 8,388,480 columns for the 16 x 2
 * subgroup kernel, fewer than a raised tuning.tileCols could ask for with small d).
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Device } from '../../src/device.js';
import { encodeGemmScores, workgroupTile } from '../../src/gpu/kernels/gemm-scores.js';
import { STORAGE, createBuffer } from '../../src/gpu/recorder.js';
import { scoreTiles } from '../../src/plans/kit/tiling.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);

/** A device as scoreTiles sees one: its limits and tuning only. */
function stubDevice(maxTileCols: number): Device {
  return {
    limits: { maxBindingBytes: 2 ** 30, maxK: 1024, maxTileCols },
    tuning: { tileCols: 2 ** 24, scoreTileBytes: 2 ** 30 },
  } as unknown as Device;
}

describe('scoreTiles', () => {
  it('caps the tile width at limits.maxTileCols', () => {
    expect(scoreTiles(stubDevice(1000), 1, 2 ** 24, 2 ** 24).tileCols).toBe(1000);
    expect(scoreTiles(stubDevice(Infinity), 1, 2 ** 24, 2 ** 24).tileCols).toBe(2 ** 24);
  });
});

describe.skipIf(!gpu)('gemm-scores: maxTileCols on the GPU', () => {
  it("is the widest tile the device's variant can dispatch", () => {
    const device = gpu!.device;
    const { kernels } = device;
    expect(device.limits.maxTileCols).toBe(workgroupTile(kernels, kernels.gemmVariant).cols * kernels.maxGroups);
    // Recorded only (never submitted), so small buffers do.
    const b = createBuffer(device.ctx.device, 'tile-test', 256, STORAGE());
    const args = (cols: number) => ({ metric: 'l2' as const, xq: b, xb: b, xnorm: b, scores: b, q0: 0, rows: 1, col0: 0, cols, dpad: 4, ldc: cols });
    try {
      expect(() => encodeGemmScores(kernels, args(device.limits.maxTileCols))).not.toThrow();
      expect(() => encodeGemmScores(kernels, args(device.limits.maxTileCols + 1))).toThrow(/workgroups/);
    } finally {
      kernels.recorder.discard();
      b.destroy();
    }
  });
});
