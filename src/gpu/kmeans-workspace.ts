/**
 * k-means on the GPU (see KMeansWorkspace in src/backend.ts).
 */
import type { KMeansWorkspace } from '../backend.js';
import { kmeansBlocks } from '../cpu/kmeans-update.js';
import { WebGpuUnavailableError } from '../types.js';
import { type GpuBackend, GpuBaseStore, padRows, paddedDim } from './gpu-backend.js';
import { Kernels } from './kernels/kernels.js';
import { encodeKmeansPartial, encodeKmeansReduce } from './kernels/kmeans-update.js';
import { encodeNorms } from './kernels/norms.js';
import { STORAGE, createBuffer, readBuffer } from './recorder.js';

/**
 * k-means on the GPU. The points stay on the device; an iteration is one submit: the flat search
 * at k = 1 against the centroids (the assignment), kmeans-partial and kmeans-reduce (the update,
 * written straight into the centroid store) and norms (the centroids' new norms). Only the counts
 * and the per-block objective come back.
 */
export class GpuKMeansWorkspace implements KMeansWorkspace {
  private readonly store: GpuBaseStore;
  private readonly buffers: GPUBuffer[];
  private constructor(
    private readonly backend: GpuBackend,
    private readonly n: number,
    private readonly d: number,
    private readonly nc: number,
    private readonly x: GPUBuffer,
    private readonly xnorm: GPUBuffer,
    private readonly labelBuf: GPUBuffer,
    private readonly sums: GPUBuffer,
    private readonly partCounts: GPUBuffer,
    private readonly obj: GPUBuffer,
    private readonly counts: GPUBuffer,
    private readonly block: number,
    private readonly nblocks: number,
  ) {
    this.store = new GpuBaseStore(backend, d);
    this.buffers = [x, xnorm, labelBuf, sums, partCounts, obj, counts];
  }

  static async create(backend: GpuBackend, x: Float32Array, n: number, d: number, nc: number): Promise<GpuKMeansWorkspace> {
    const { device } = backend.ctx;
    const { maxBinding } = backend;
    const dpad = paddedDim(d);
    if (n * dpad * 4 > maxBinding) {
      throw new WebGpuUnavailableError(
        `k-means on the GPU needs the ${n} training points in one binding (${n * dpad * 4} bytes; this device allows ${maxBinding}); train on a sample`,
      );
    }
    const { block, nblocks } = kmeansBlocks(n, nc, d);
    const xBuf = createBuffer(device, 'kmeans_x', n * dpad * 4, STORAGE(), padRows(x, n, d, dpad));
    const xnorm = createBuffer(device, 'kmeans_xnorm', n * 4, STORAGE());
    const kernels = new Kernels(backend.ctx, backend.pipelines);
    encodeNorms(kernels, { x: xBuf, out: xnorm, n, dpad, row0: 0, out0: 0 });
    await kernels.recorder.submit();
    return new GpuKMeansWorkspace(
      backend, n, d, nc, xBuf, xnorm,
      createBuffer(device, 'kmeans_labels', n * 4, STORAGE()),
      createBuffer(device, 'kmeans_sums', nblocks * nc * dpad * 4, STORAGE()),
      createBuffer(device, 'kmeans_part_counts', nblocks * nc * 4, STORAGE()),
      createBuffer(device, 'kmeans_obj', nblocks * 4, STORAGE()),
      createBuffer(device, 'kmeans_counts', nc * 4, STORAGE()),
      block, nblocks,
    );
  }

  async setCentroids(centroids: Float32Array): Promise<void> {
    this.store.reset();
    await this.store.add(centroids, this.nc);
  }

  async iterate(): Promise<{ objective: number; counts: Uint32Array }> {
    const { n, nc, nblocks } = this;
    const dpad = this.store.dpad;
    const chunk = this.store.chunks[0];
    const kernels = new Kernels(this.backend.ctx, this.backend.pipelines);
    const temps: GPUBuffer[] = [];
    try {
      const run = this.backend.encodeFlatSearch(kernels, this.store, this.x, n, 1, 'l2', temps);
      encodeKmeansPartial(kernels, {
        x: this.x, xnorm: this.xnorm, score: run.s, label: run.i, sums: this.sums, counts: this.partCounts, obj: this.obj,
        n, dpad, nc, block: this.block, nblocks,
      });
      encodeKmeansReduce(kernels, { sums: this.sums, counts: this.partCounts, centroids: chunk.xb, outCounts: this.counts, nc, dpad, nblocks });
      encodeNorms(kernels, { x: chunk.xb, out: chunk.xnorm, n: nc, dpad, row0: 0, out0: 0 });
      kernels.recorder.copy(run.i, 0, this.labelBuf, 0, n * 4);
      // Counts and objective come back through readLists' two-part staging copy.
      const out = await this.backend.readLists(kernels, { s: this.obj, i: this.counts }, Math.max(nblocks, nc), undefined, [nblocks, nc]);
      let objective = 0;
      for (let b = 0; b < nblocks; b++) objective += out.scores[b];
      return { objective, counts: out.ids.slice(0, nc) };
    } finally {
      for (const b of temps) b.destroy();
    }
  }

  async centroids(): Promise<Float32Array> {
    const padded = new Float32Array(await readBuffer(this.backend.ctx, this.store.chunks[0].xb, 0, this.nc * this.store.dpad * 4));
    const out = new Float32Array(this.nc * this.d);
    for (let c = 0; c < this.nc; c++) out.set(padded.subarray(c * this.store.dpad, c * this.store.dpad + this.d), c * this.d);
    return out;
  }

  async labels(): Promise<Int32Array> {
    return new Int32Array(await readBuffer(this.backend.ctx, this.labelBuf, 0, this.n * 4));
  }

  dispose(): void {
    this.store.dispose();
    for (const b of this.buffers) b.destroy();
  }
}
