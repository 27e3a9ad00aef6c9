/** Dispatch of shaders/gather-rows.wgsl (CPU twin: src/cpu/gather-rows.ts). */
import type { GatherRowsArgs } from '../../device.js';
import type { Kernels } from './kernels.js';

const WG = 64;

export function encodeGatherRows(kernels: Kernels, a: GatherRowsArgs<GPUBuffer>): void {
  kernels.recorder.dispatch(
    'gather-rows',
    kernels.pipelines.get('gather-rows', { WG }),
    [a.n, a.words, a.rows0, a.out0],
    [a.x, a.rows, a.out],
    kernels.fold(a.n * a.words, WG),
  );
}
