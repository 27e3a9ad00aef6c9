/**
 * Dispatch of shaders/pq-scores.wgsl (CPU twin: src/cpu/pq-scores.ts). Each workgroup takes one
 * tile row's table into workgroup memory where M * 2^nbits floats fit the device's workgroup
 * storage (`shared`), else reads it from storage (`storage`); both give the same bits. Geometry:
 * one tile row x WG * CPT columns a workgroup; wider tiles take several dispatches.
 */
import { type PqScoresArgs, checkPqScoresArgs } from '../../device.js';
import type { Kernels } from './kernels.js';

const WG = 64;
/** Columns an invocation scores (the shader's CPT). */
const CPT = 16;
const WORKGROUP_COLS = WG * CPT;

export type PqVariant = 'shared' | 'storage';

/** The variant this device runs for tables of `M` x 2^nbits floats. */
export function pqVariant(kernels: Kernels, M: number, nbits: number): PqVariant {
  return M * (1 << nbits) * 4 <= kernels.ctx.limits.maxComputeWorkgroupStorageSize ? 'shared' : 'storage';
}

export function encodePqScores(kernels: Kernels, a: PqScoresArgs<GPUBuffer>, variant: PqVariant = pqVariant(kernels, a.M, a.nbits)): void {
  checkPqScoresArgs(a);
  const max = kernels.maxGroups;
  if (a.rows > max) throw new Error(`pq-scores: tile of ${a.rows} rows needs a workgroup per row; the device allows ${max} per dimension`);
  const shared = variant === 'shared';
  const pipeline = kernels.pipelines.get('pq-scores', { WG, NBITS: a.nbits, SHARED: shared ? 1 : 0, LUT_N: shared ? a.M << a.nbits : 1, CPT });
  const groups = Math.ceil(a.cols / WORKGROUP_COLS);
  for (let g0 = 0; g0 < groups; g0 += max) {
    kernels.recorder.dispatch(
      'pq-scores',
      pipeline,
      [a.rows, a.cols, a.ldc, a.q0, a.col0, a.M, a.codeWords, g0 * WORKGROUP_COLS],
      [a.luts, a.qbias, a.codes, a.scores],
      [Math.min(max, groups - g0), a.rows],
    );
  }
}
