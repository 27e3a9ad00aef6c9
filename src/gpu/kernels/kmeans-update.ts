/**
 * Dispatch of shaders/kmeans-partial.wgsl and shaders/kmeans-reduce.wgsl
 * (CPU twins: kmeansPartial and kmeansReduce in src/cpu/kmeans-update.ts).
 */
import type { KmeansPartialArgs, KmeansReduceArgs } from '../../device.js';
import { kmeansChunkBlocks } from '../../cpu/kmeans-update.js';
import type { Kernels } from './kernels.js';

const WG = 64;

export function encodeKmeansPartial(kernels: Kernels, a: KmeansPartialArgs<GPUBuffer>): void {
  if (a.n === 0) return;
  const { b0, nb } = kmeansChunkBlocks(a.p0, a.n, a.block);
  kernels.recorder.dispatch(
    'kmeans-partial',
    kernels.pipelines.get('kmeans-partial', { WG }),
    [a.n, a.p0, a.dpad, a.nc, a.block, b0, nb],
    [a.x, a.xnorm, a.score, a.label, a.sums, a.counts, a.obj],
    kernels.fold(nb * a.dpad, WG),
  );
}

export function encodeKmeansReduce(kernels: Kernels, a: KmeansReduceArgs<GPUBuffer>): void {
  kernels.recorder.dispatch(
    'kmeans-reduce',
    kernels.pipelines.get('kmeans-reduce', { WG }),
    [a.nc, a.dpad, a.nblocks],
    [a.sums, a.counts, a.centroids, a.outCounts],
    kernels.fold(a.nc * a.dpad, WG),
  );
}
