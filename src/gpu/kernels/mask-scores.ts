/** Dispatch of shaders/mask-scores.wgsl (CPU twin: src/cpu/mask-scores.ts). */
import type { MaskScoresArgs } from '../../device.js';
import type { Kernels } from './kernels.js';

const WG = 64;
/** Rows per invocation: one mask read serves a block of rows. */
const RB = 16;

export function encodeMaskScores(kernels: Kernels, a: MaskScoresArgs<GPUBuffer>): void {
  kernels.recorder.dispatch(
    'mask-scores',
    kernels.pipelines.get('mask-scores', { WG, RB }),
    [a.rows, a.cols, a.ldc, a.bit0],
    [a.scores, a.mask],
    kernels.fold(a.cols * Math.ceil(a.rows / RB), WG),
  );
}
