/** Dispatch of shaders/cagra-prune.wgsl (CPU twin: src/cpu/cagra-prune.ts). */
import type { CagraPruneArgs } from '../../device.js';
import { CAGRA_MAX_KIN } from '../../kernel-facts.js';
import type { Kernels } from './kernels.js';

const WG = 64;

/** The shader's KIN_CAP for rows of kin ids: the next power of two >= kin, at least 16. */
export function kinBucket(kin: number): number {
  if (!(kin >= 1 && kin <= CAGRA_MAX_KIN)) throw new Error(`cagra-prune: kin must be in [1, ${CAGRA_MAX_KIN}]; got ${kin}`);
  let cap = 16;
  while (cap < kin) cap *= 2;
  return cap;
}

export function encodeCagraPrune(kernels: Kernels, a: CagraPruneArgs<GPUBuffer>): void {
  if (!(a.degree >= 1 && a.degree <= a.kin)) throw new Error(`cagra-prune: degree must be in [1, kin = ${a.kin}]; got ${a.degree}`);
  kernels.recorder.dispatch(
    'cagra-prune',
    kernels.pipelines.get('cagra-prune', { WG, KIN_CAP: kinBucket(a.kin) }),
    [a.n, a.kin, a.degree, a.node0, a.nodes, a.a0, a.d0, a.drows, a.out0, a.first ? 1 : 0, a.last ? 1 : 0],
    [a.a, a.d, a.detours, a.out],
    kernels.fold(a.nodes * WG, WG),
  );
}
