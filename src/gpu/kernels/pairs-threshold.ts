/** Dispatch of shaders/pairs-threshold.wgsl (CPU twin: src/cpu/pairs-threshold.ts). */
import type { PairsThresholdArgs } from '../../device.js';
import type { Kernels } from './kernels.js';

const WG = 64;
const f32bits = (v: number): number => new Uint32Array(new Float32Array([v]).buffer)[0];

export function encodePairsThreshold(kernels: Kernels, a: PairsThresholdArgs<GPUBuffer>): void {
  kernels.recorder.dispatch(
    'pairs-threshold',
    kernels.pipelines.get('pairs-threshold', { WG, METRIC: a.metric === 'l2' ? 0 : 1, ALL_PAIRS: a.allPairs ? 1 : 0 }),
    [a.rows, a.cols, a.ldc, a.q0, a.id0, f32bits(a.limit), f32bits(a.rel), a.capacity, a.qn0, a.cn0],
    [a.scores, a.xnormQ, a.xnormB, a.count, a.pairs],
    [Math.ceil(a.cols / WG), a.rows],
  );
}
