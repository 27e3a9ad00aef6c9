/**
 * Dispatch of shaders/gemm-scores.wgsl, or of gemm-scores-portable.wgsl on devices without
 * subgroups of at least 8 lanes (CPU twin of both: src/cpu/gemm-scores.ts).
 */
import type { GemmScoresArgs } from '../../device.js';
import type { Kernels } from './kernels.js';

const WG = 64;
/** Queries per workgroup (the shader's QB). */
const QB = 8;

export type GemmVariant = 'subgroup' | 'portable';

/** The variants this device can run, best first. */
export function gemmVariants(kernels: Kernels): GemmVariant[] {
  return kernels.ctx.hasSubgroups8 ? ['subgroup', 'portable'] : ['portable'];
}

export function encodeGemmScores(kernels: Kernels, a: GemmScoresArgs<GPUBuffer>, variant: GemmVariant = gemmVariants(kernels)[0]): void {
  const gx = Math.ceil(a.cols / (4 * WG));
  const gy = Math.ceil(a.rows / QB);
  const max = kernels.maxGroups;
  if (gx > max || gy > max) {
    throw new Error(`gemm-scores: tile ${a.rows} x ${a.cols} needs ${gx} x ${gy} workgroups; the device allows ${max} per dimension`);
  }
  kernels.recorder.dispatch(
    'gemm-scores',
    kernels.pipelines.get(variant === 'subgroup' ? 'gemm-scores' : 'gemm-scores-portable', { WG, METRIC: a.metric === 'l2' ? 0 : 1 }),
    [a.rows, a.cols, a.dpad / 4, a.q0, a.col0, a.ldc],
    [a.xq, a.xb, a.xnorm, a.scores],
    [gx, gy],
  );
}
