/** Dispatch of shaders/cagra-merge.wgsl (CPU twin: src/cpu/cagra-merge.ts). */
import type { CagraMergeArgs } from '../../device.js';
import { CAGRA_MAX_DEGREE } from '../../kernel-facts.js';
import type { Kernels } from './kernels.js';

const WG = 64;

export function encodeCagraMerge(kernels: Kernels, a: CagraMergeArgs<GPUBuffer>): void {
  if (!(a.degree >= 1 && a.degree <= CAGRA_MAX_DEGREE)) throw new Error(`cagra-merge: degree must be in [1, ${CAGRA_MAX_DEGREE}]; got ${a.degree}`);
  kernels.recorder.dispatch(
    'cagra-merge',
    kernels.pipelines.get('cagra-merge', { WG }),
    [a.n, a.degree, a.node0, a.nodes, a.out0],
    [a.graph, a.offsets, a.edges, a.out],
    kernels.fold(a.nodes * WG, WG),
  );
}
