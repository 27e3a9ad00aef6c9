/**
 * k-means iterations on a device, written once (see KMeansWorkspace in src/backend.ts). The points
 * stay on the device in chunks (a code store); an iteration is one submit and one small readback:
 *
 *   clear sums, counts, objective
 *   for each chunk of points (in point order):
 *     flatLists at k = 1 against the centroids   -> each point's nearest centroid and its score
 *     kmeans-partial                             -> added to the global blocks' partial sums
 *   kmeans-reduce -> the new centroids, written into the centroid store; norms -> their norms
 *   read the counts and the per-block objective
 *
 * Blocks are global and a block split between chunks is summed in point order (see
 * shaders/kmeans-partial.wgsl), so the centroids do not depend on how the points are chunked. The
 * number of blocks does depend on the partial sums fitting one binding (nblocks * nc * dpad floats,
 * at most 64 MiB): a limit lowered below that means fewer blocks, and float sums rounded
 * differently. The centroids and one block's sums (nc rows each) must fit one binding.
 */
import type { KMeansWorkspace } from '../backend.js';
import type { Device, DeviceBuffer } from '../device.js';
import { unpadRows } from '../device.js';
import { kmeansBlocks } from '../cpu/kmeans-update.js';
import { CodeStore } from '../stores/code-store.js';
import { InvalidArgumentError } from '../types.js';
import { flatLists, floatQueries } from './flat-search.js';
import { Scratch } from './scratch.js';

export class DeviceKMeans implements KMeansWorkspace {
  private readonly centroidStore: CodeStore;
  private readonly block: number;
  private readonly nblocks: number;
  private readonly sums: DeviceBuffer;
  private readonly partCounts: DeviceBuffer;
  private readonly obj: DeviceBuffer;
  private readonly counts: DeviceBuffer;

  private constructor(
    private readonly device: Device,
    private readonly points: CodeStore,
    private readonly nc: number,
  ) {
    const { d, dpad } = points;
    const n = points.ntotal;
    this.centroidStore = new CodeStore(device, d, { hostCopy: false });
    if (this.centroidStore.chunkRows < nc) {
      const bytes = nc * dpad * 4;
      throw new InvalidArgumentError(
        bytes > device.limits.maxBindingBytes
          ? `k-means keeps its ${nc} centroids in one binding (${bytes} bytes); this device binds at most ${device.limits.maxBindingBytes}`
          : `k-means keeps its ${nc} centroids in one chunk; tuning.chunkRows = ${device.tuning.chunkRows} is smaller`,
      );
    }
    ({ block: this.block, nblocks: this.nblocks } = kmeansBlocks(n, nc, dpad, Math.min(64 << 20, device.limits.maxBindingBytes)));
    this.sums = device.buffer('kmeans_sums', this.nblocks * nc * dpad * 4);
    this.partCounts = device.buffer('kmeans_part_counts', this.nblocks * nc * 4);
    this.obj = device.buffer('kmeans_obj', this.nblocks * 4);
    this.counts = device.buffer('kmeans_counts', nc * 4);
  }

  /** Uploads `n` points (`x`, `n * d`) in chunks and computes their norms on the device. */
  static async create(device: Device, x: Float32Array, n: number, d: number, nc: number): Promise<DeviceKMeans> {
    const points = new CodeStore(device, d, { hostCopy: false });
    try {
      await points.add(x, n);
      return new DeviceKMeans(device, points, nc);
    } catch (err) {
      points.dispose();
      throw err;
    }
  }

  async setCentroids(centroids: Float32Array): Promise<void> {
    this.centroidStore.reset();
    await this.centroidStore.add(centroids, this.nc);
  }

  async iterate(): Promise<{ objective: number; counts: Uint32Array }> {
    try {
      return await this.record();
    } catch (err) {
      this.device.discard();
      throw err;
    }
  }

  /** Records one iteration and reads its counts and objective back. */
  private async record(): Promise<{ objective: number; counts: Uint32Array }> {
    const { device, nc, nblocks, points } = this;
    const { dpad } = points;
    const centroids = this.centroidStore.chunks[0];
    device.clear(this.sums);
    device.clear(this.partCounts);
    device.clear(this.obj);
    let p0 = 0;
    for (const c of points.chunks) {
      // Calls run in order, so each chunk's scratch can go back to the pool once its calls are made.
      const scratch = new Scratch(device);
      try {
        const run = flatLists(scratch, this.centroidStore, floatQueries(c.xb), 0, c.rows, 1, 'l2');
        device.dispatch({
          kernel: 'kmeans-partial', x: c.xb, xnorm: c.xnorm, score: run.s, label: run.i, sums: this.sums, counts: this.partCounts,
          obj: this.obj, n: c.rows, p0, dpad, nc, block: this.block,
        });
      } finally {
        scratch.release();
      }
      p0 += c.rows;
    }
    device.dispatch({ kernel: 'kmeans-reduce', sums: this.sums, counts: this.partCounts, centroids: centroids.xb, outCounts: this.counts, nc, dpad, nblocks });
    device.dispatch({ kernel: 'norms', x: centroids.xb, out: centroids.xnorm, n: nc, dpad, row0: 0, out0: 0 });
    const [obj, counts] = await device.read([
      { buffer: this.obj, offset: 0, bytes: nblocks * 4 },
      { buffer: this.counts, offset: 0, bytes: nc * 4 },
    ]);
    let objective = 0;
    for (const v of new Float32Array(obj)) objective += v;
    return { objective, counts: new Uint32Array(counts) };
  }

  async centroids(): Promise<Float32Array> {
    const c = this.centroidStore.chunks[0];
    const [padded] = await this.device.read([{ buffer: c.xb, offset: 0, bytes: this.nc * this.points.dpad * 4 }]);
    return unpadRows(new Float32Array(padded), this.nc, this.points.d, this.points.dpad);
  }

  dispose(): void {
    this.points.dispose();
    this.centroidStore.dispose();
    for (const b of [this.sums, this.partCounts, this.obj, this.counts]) this.device.release(b);
  }
}
