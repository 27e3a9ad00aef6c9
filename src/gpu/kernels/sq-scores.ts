/**
 * Dispatch of sq-scores, in one of two variants computing the same tile (CPU twin of both:
 * src/cpu/sq-scores.ts): `subgroup` (shaders/sq-scores.wgsl, queries broadcast by subgroup
 * operations, needs subgroups of at least 8 lanes) and `portable` (sq-scores-portable.wgsl, plain
 * loads), which share their scan (sq-scores-core.wgsl) and differ only in how the queries reach
 * the lanes. A device runs `subgroup` wherever it can (on lavapipe about 3x the portable's speed).
 * Geometry: 8 queries x 256 base vectors a workgroup; a tile's columns never hit the device's
 * workgroups-per-dimension limit (wider tiles take several dispatches), so DeviceLimits.maxTileCols
 * (set by gemm-scores) need not know this kernel.
 */
import { type SqCodeKind, type SqScoresArgs, checkSqScoresArgs } from '../../device.js';
import type { GpuContext } from '../context.js';
import type { Kernels } from './kernels.js';

export type SqVariant = 'subgroup' | 'portable';

export const SQ_SHADERS: Readonly<Record<SqVariant, string>> = {
  subgroup: 'sq-scores',
  portable: 'sq-scores-portable',
};

/** The shaders' KIND constant. */
const KIND: Readonly<Record<SqCodeKind, number>> = { sq8: 0, sq4: 1, fp16: 2 };

const WG = 64;
/** Queries per workgroup and base vectors per invocation (the shaders' QB and CB). */
const QB = 8;
const CB = 4;
/** Tile columns one workgroup scores. */
export const SQ_WORKGROUP_COLS = CB * WG;

/** The variants this device can run, its default first. */
export function sqVariants(ctx: GpuContext): SqVariant[] {
  return ctx.hasSubgroups8 ? ['subgroup', 'portable'] : ['portable'];
}

/**
 * Records the score tile of `a` (a.rows x a.cols scores, row stride a.ldc) with `variant` (default:
 * the device's first). Columns beyond what one dispatch's workgroups per dimension cover go to
 * further dispatches, so the tile's width is never the limit; its rows are (a.rows / 8 workgroups),
 * which plans keep far below it.
 */
export function encodeSqScores(kernels: Kernels, a: SqScoresArgs<GPUBuffer>, variant: SqVariant = sqVariants(kernels.ctx)[0]): void {
  checkSqScoresArgs(a);
  const max = kernels.maxGroups;
  const gy = Math.ceil(a.rows / QB);
  if (gy > max) {
    throw new Error(`sq-scores: tile ${a.rows} x ${a.cols} needs ${gy} workgroups of ${QB} queries; the device allows ${max} per dimension`);
  }
  const pipeline = kernels.pipelines.get(SQ_SHADERS[variant], { WG, METRIC: a.metric === 'l2' ? 0 : 1, KIND: KIND[a.kind] });
  const groups = Math.ceil(a.cols / SQ_WORKGROUP_COLS);
  for (let g0 = 0; g0 < groups; g0 += max) {
    kernels.recorder.dispatch(
      'sq-scores',
      pipeline,
      [a.rows, a.cols, a.dpad / 4, a.q0, a.col0, a.ldc, a.codeWords, g0 * SQ_WORKGROUP_COLS],
      [a.xq, a.qbias, a.codes, a.xnorm, a.scores],
      [Math.min(max, groups - g0), gy],
    );
  }
}
