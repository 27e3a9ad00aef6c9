/** Dispatch of shaders/norms.wgsl (CPU twin: src/cpu/norms.ts). */
import type { NormsArgs } from '../../device.js';
import type { Kernels } from './kernels.js';

const WG = 64;

export function encodeNorms(kernels: Kernels, a: NormsArgs<GPUBuffer>): void {
  kernels.recorder.dispatch(
    'norms',
    kernels.pipelines.get('norms', { WG }),
    [a.n, a.dpad / 4, a.row0, a.out0],
    [a.x, a.out],
    kernels.fold(a.n, WG),
  );
}
