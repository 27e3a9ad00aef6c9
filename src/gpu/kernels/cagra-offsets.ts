/** Dispatch of shaders/cagra-offsets.wgsl (CPU twin: src/cpu/cagra-offsets.ts). */
import type { CagraOffsetsArgs } from '../../device.js';
import type { Kernels } from './kernels.js';

const WG = 256;

export function encodeCagraOffsets(kernels: Kernels, a: CagraOffsetsArgs<GPUBuffer>): void {
  kernels.recorder.dispatch('cagra-offsets', kernels.pipelines.get('cagra-offsets', { WG }), [a.n], [a.counts, a.offsets], [1, 1]);
}
