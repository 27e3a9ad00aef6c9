/** Dispatch of shaders/topk.wgsl (CPU twin: src/cpu/topk.ts). */
import type { TopkArgs } from '../../device.js';
import { TOPK_MAX_K } from '../../kernel-facts.js';
import type { Kernels } from './kernels.js';

const WG = 64;

/** The capacity K_CAP of the k best kept (a heap, or a sorted list up to LIST_MAX_CAP) for k <= TOPK_MAX_K: the next power of two, at least 2. */
export function kBucket(k: number): number {
  if (k > TOPK_MAX_K) throw new Error(`a private heap holds k in [1, ${TOPK_MAX_K}]; got ${k} (larger k take select-radix)`);
  let cap = 2;
  while (cap < k) cap *= 2;
  return cap;
}

export function encodeTopk(kernels: Kernels, a: TopkArgs<GPUBuffer>): void {
  kernels.recorder.dispatch(
    'topk',
    kernels.pipelines.get('topk', { WG, K_CAP: kBucket(a.k), TRANSPOSED: a.transposed ? 1 : 0, BIAS: a.bias ? 1 : 0 }),
    [a.rows, a.cols, a.ldc, a.k, a.nseg, a.segLen, a.id0, a.bound ? 1 : 0, a.bound?.row0 ?? 0, a.bias?.bias0 ?? 0],
    // Without a bound (a bias) the shader reads nothing from bound_* (bias); any buffer satisfies the layout.
    [a.scores, a.bound?.s ?? a.scores, a.bound?.i ?? a.scores, a.outS, a.outI, a.bias?.buf ?? a.scores],
    kernels.fold(a.rows * a.nseg, WG),
  );
}
