/**
 * Dispatch of gemm-scores, in one of three variants computing the same tile (CPU twin of all:
 * src/cpu/gemm-scores.ts): `subgroup` (shaders/gemm-scores.wgsl, register-blocked, needs subgroups
 * of at least 8 lanes), `portable` (gemm-scores-portable.wgsl, register-blocked, plain loads) and
 * `tiled` (gemm-scores-tiled.wgsl, workgroup-memory tiles). Which one a device runs is measured per
 * adapter (src/gpu/kernel-choice.ts) and kept in `Kernels.gemmVariant`.
 */
import type { GemmScoresArgs } from '../../device.js';
import type { KernelMetric } from '../../kernel-facts.js';
import type { GpuContext } from '../context.js';
import type { GemmVariant } from './gemm-variant.js';
import type { Kernels } from './kernels.js';

/** Every variant's shader (in shaders/), in the order `gemmVariants` offers them. */
export const GEMM_SHADERS: Readonly<Record<GemmVariant, string>> = {
  subgroup: 'gemm-scores',
  portable: 'gemm-scores-portable',
  tiled: 'gemm-scores-tiled',
};

/** Workgroup size of the register-blocked variants. */
const WG = 64;

/** The variants this device can run: all three where subgroups have at least 8 lanes, else two. */
export function gemmVariants(ctx: GpuContext): GemmVariant[] {
  return ctx.hasSubgroups8 ? ['subgroup', 'portable', 'tiled'] : ['portable', 'tiled'];
}

/**
 * Side of the tiled variant's square workgroup: 16 (a 64 x 64 tile of scores) where the device
 * allows 256 invocations per workgroup (WebGPU's default), else 8 (compatibility mode allows 128).
 */
function tiledSide(kernels: Kernels): number {
  return kernels.ctx.limits.maxComputeInvocationsPerWorkgroup >= 256 ? 16 : 8;
}

/**
 * The score block one workgroup of `variant` computes: query rows by base vectors (the shaders' QB
 * by CB * WG for the register-blocked variants, a square for the tiled one). DeviceLimits.maxTileCols
 * is its columns times the workgroups a dispatch may have.
 */
export function workgroupTile(kernels: Kernels, variant: GemmVariant): { rows: number; cols: number } {
  if (variant === 'subgroup') return { rows: 16, cols: 2 * WG };
  if (variant === 'portable') return { rows: 8, cols: 4 * WG };
  const side = 4 * tiledSide(kernels);
  return { rows: side, cols: side };
}

/** The compute pipeline of `variant` for `metric`, compiled on first use. */
export function gemmPipeline(kernels: Kernels, variant: GemmVariant, metric: KernelMetric): GPUComputePipeline {
  const size: Record<string, number> = variant === 'tiled' ? { TW: tiledSide(kernels) } : { WG };
  return kernels.pipelines.get(GEMM_SHADERS[variant], { ...size, METRIC: metric === 'l2' ? 0 : 1 });
}

/**
 * Records the score tile of `a` (a.rows x a.cols scores, row stride a.ldc) with `variant` (default:
 * the device's choice). Throws if the tile needs more workgroups per dimension than the device allows.
 */
export function encodeGemmScores(kernels: Kernels, a: GemmScoresArgs<GPUBuffer>, variant: GemmVariant = kernels.gemmVariant): void {
  const tile = workgroupTile(kernels, variant);
  const gx = Math.ceil(a.cols / tile.cols);
  const gy = Math.ceil(a.rows / tile.rows);
  const max = kernels.maxGroups;
  if (gx > max || gy > max) {
    throw new Error(`gemm-scores (${variant}): tile ${a.rows} x ${a.cols} needs ${gx} x ${gy} workgroups; the device allows ${max} per dimension`);
  }
  kernels.recorder.dispatch(
    'gemm-scores',
    gemmPipeline(kernels, variant, a.metric),
    [a.rows, a.cols, a.dpad / 4, a.q0, a.col0, a.ldc],
    [a.xq, a.xb, a.xnorm, a.scores],
    [gx, gy],
  );
}
