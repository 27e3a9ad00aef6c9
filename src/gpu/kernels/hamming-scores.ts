/**
 * Dispatch of shaders/hamming-scores.wgsl (CPU twin: src/cpu/hamming-scores.ts). Geometry: 4 query
 * rows x 4 * WG columns a workgroup; wider tiles take several dispatches, so a tile's width is never
 * the device's workgroups-per-dimension limit.
 */
import { type HammingScoresArgs, checkHammingScoresArgs } from '../../device.js';
import type { Kernels } from './kernels.js';

const WG = 64;
/** Query rows and columns an invocation scores (the shader's QB and CB). */
const QB = 4;
const CB = 4;
const WORKGROUP_COLS = WG * CB;

export function encodeHammingScores(kernels: Kernels, a: HammingScoresArgs<GPUBuffer>): void {
  checkHammingScoresArgs(a);
  const max = kernels.maxGroups;
  const gy = Math.ceil(a.rows / QB);
  if (gy > max) throw new Error(`hamming-scores: tile ${a.rows} x ${a.cols} needs ${gy} workgroups of ${QB} rows; the device allows ${max} per dimension`);
  const pipeline = kernels.pipelines.get('hamming-scores', { WG });
  const groups = Math.ceil(a.cols / WORKGROUP_COLS);
  for (let g0 = 0; g0 < groups; g0 += max) {
    kernels.recorder.dispatch(
      'hamming-scores',
      pipeline,
      [a.rows, a.cols, a.ldc, a.q0, a.col0, a.codeWords, g0 * WORKGROUP_COLS, 0],
      [a.xq, a.codes, a.scores],
      [Math.min(max, groups - g0), gy],
    );
  }
}
