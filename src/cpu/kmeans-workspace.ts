/**
 * k-means on the CPU (see KMeansWorkspace in src/backend.ts): the flat search at k = 1 for the
 * assignment, then the update twins.
 */
import type { KMeansWorkspace } from '../backend.js';
import { type CpuBackend, CpuBaseStore } from './cpu-backend.js';
import { kmeansBlocks, kmeansPartial, kmeansReduce } from './kmeans-update.js';
import { norms } from './norms.js';

export class CpuKMeansWorkspace implements KMeansWorkspace {
  private readonly centroidStore: CpuBaseStore;
  private readonly xnorm: Float32Array;
  private last: Uint32Array;
  private readonly block: number;
  private readonly nblocks: number;

  constructor(
    private readonly backend: CpuBackend,
    private readonly x: Float32Array,
    private readonly n: number,
    private readonly d: number,
    private readonly nc: number,
  ) {
    this.centroidStore = new CpuBaseStore(d);
    this.xnorm = norms(x, n, d);
    this.last = new Uint32Array(n);
    ({ block: this.block, nblocks: this.nblocks } = kmeansBlocks(n, nc, d));
  }

  async setCentroids(centroids: Float32Array): Promise<void> {
    this.centroidStore.reset();
    await this.centroidStore.add(centroids, this.nc);
  }

  async iterate(): Promise<{ objective: number; counts: Uint32Array }> {
    const { n, d, nc, block, nblocks } = this;
    const run = this.backend.searchLists(this.centroidStore, this.x, n, 1, 'l2');
    this.last = run.i;
    const sums = new Float32Array(nblocks * nc * d);
    const partCounts = new Uint32Array(nblocks * nc);
    const obj = new Float32Array(nblocks);
    kmeansPartial(this.x, this.xnorm, run.s, run.i, n, d, nc, block, nblocks, sums, partCounts, obj);
    const counts = new Uint32Array(nc);
    const centroids = this.centroidStore.xb.subarray(0, nc * d);
    kmeansReduce(sums, partCounts, nc, d, nblocks, centroids, counts);
    norms(centroids, nc, d, this.centroidStore.xnorm);
    return { objective: obj.reduce((a, b) => a + b, 0), counts };
  }

  async centroids(): Promise<Float32Array> {
    return this.centroidStore.xb.slice(0, this.nc * this.d);
  }

  async labels(): Promise<Int32Array> {
    return new Int32Array(this.last.buffer.slice(0));
  }

  dispose(): void {
    this.centroidStore.dispose();
  }
}
