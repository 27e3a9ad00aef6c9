/** Dispatch of shaders/norms.wgsl (CPU twin: src/cpu/norms.ts). */
import type { Kernels } from './kernels.js';

const WG = 64;

export interface NormsArgs {
  /** Rows of `dpad` floats (dpad a multiple of 4). */
  x: GPUBuffer;
  out: GPUBuffer;
  n: number;
  dpad: number;
  row0: number;
  out0: number;
}

export function encodeNorms(kernels: Kernels, a: NormsArgs): void {
  kernels.recorder.dispatch(
    'norms',
    kernels.pipelines.get('norms', { WG }),
    [a.n, a.dpad / 4, a.row0, a.out0],
    [a.x, a.out],
    kernels.fold(a.n, WG),
  );
}
