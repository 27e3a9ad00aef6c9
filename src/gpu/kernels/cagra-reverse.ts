/** Dispatch of shaders/cagra-reverse.wgsl (CPU twin: src/cpu/cagra-reverse.ts). */
import type { CagraReverseArgs } from '../../device.js';
import type { Kernels } from './kernels.js';

const WG = 64;

export function encodeCagraReverse(kernels: Kernels, a: CagraReverseArgs<GPUBuffer>): void {
  kernels.recorder.dispatch(
    'cagra-reverse',
    kernels.pipelines.get('cagra-reverse', { WG, SCATTER: a.scatter ? 1 : 0 }),
    [a.n, a.degree, a.node0, a.nodes],
    [a.graph, a.counts, a.offsets, a.edges],
    kernels.fold(a.nodes * a.degree, WG),
  );
}
