/**
 * Dispatch of shaders/kmeans-partial.wgsl and shaders/kmeans-reduce.wgsl
 * (CPU twins: kmeansPartial and kmeansReduce in src/cpu/kmeans-update.ts).
 */
import type { Kernels } from './kernels.js';

const WG = 64;

export interface KmeansPartialArgs {
  x: GPUBuffer;
  xnorm: GPUBuffer;
  score: GPUBuffer;
  label: GPUBuffer;
  /** Zeroed here before the dispatch. */
  sums: GPUBuffer;
  counts: GPUBuffer;
  obj: GPUBuffer;
  n: number;
  dpad: number;
  nc: number;
  block: number;
  nblocks: number;
}

export function encodeKmeansPartial(kernels: Kernels, a: KmeansPartialArgs): void {
  kernels.recorder.clear(a.sums);
  kernels.recorder.clear(a.counts);
  kernels.recorder.dispatch(
    'kmeans-partial',
    kernels.pipelines.get('kmeans-partial', { WG }),
    [a.n, a.dpad, a.nc, a.block, a.nblocks],
    [a.x, a.xnorm, a.score, a.label, a.sums, a.counts, a.obj],
    kernels.fold(a.nblocks * a.dpad, WG),
  );
}

export interface KmeansReduceArgs {
  sums: GPUBuffer;
  counts: GPUBuffer;
  centroids: GPUBuffer;
  outCounts: GPUBuffer;
  nc: number;
  dpad: number;
  nblocks: number;
}

export function encodeKmeansReduce(kernels: Kernels, a: KmeansReduceArgs): void {
  kernels.recorder.dispatch(
    'kmeans-reduce',
    kernels.pipelines.get('kmeans-reduce', { WG }),
    [a.nc, a.dpad, a.nblocks],
    [a.sums, a.counts, a.centroids, a.outCounts],
    kernels.fold(a.nc * a.dpad, WG),
  );
}
