/**
 * Exact search: every query is scored against every stored vector (Faiss's IndexFlat).
 * Written once against `Backend`; the backend decides whether the kernels run on the GPU or CPU.
 */
import type { Backend, BaseStore } from './backend.js';
import { checkIds } from './ids.js';
import type { CodeStore } from './stores/code-store.js';
import type { RowAt } from './stores/rows.js';
import type { Metric, SlotResult } from './types.js';
import { InvalidArgumentError, checkDim, checkMetric, checkVectors, prepareOwnRows } from './types.js';
import { type RowProgress, type VectorSource, checkIdRoom, checkSource, checkedBlocks } from './vector-source.js';
import { idSection, writeIndexFile } from './io/index-file.js';
import { IndexCore, type RowSpace, type SearchParams, type TrainOptions } from './vector-index.js';
import type { RangeCandidates } from './plans/range-search.js';

export interface FlatIndexOptions {
  dim: number;
  /** Default `l2`. */
  metric?: Metric;
  /**
   * Keep one host copy of the vectors where the device's memory is not the host's (WebGPU; default
   * true): the exact re-score and `save` read it. False: they read the rows back from the device.
   * The CPU backend never keeps a copy (it reads its own memory). See BaseStoreOptions.
   */
  hostCopy?: boolean;
}

export class FlatIndex extends IndexCore {
  private store: BaseStore;
  private readonly hostCopy: boolean | undefined;

  constructor(backend: Backend, options: FlatIndexOptions) {
    super(backend, checkDim(options?.dim), checkMetric(options?.metric ?? 'l2'), 'FlatIndex');
    this.hostCopy = options.hostCopy;
    this.store = backend.createBaseStore(this.dim, { hostCopy: options.hostCopy });
  }

  /** Always true: a flat index has nothing to train. */
  get isTrained(): boolean {
    return true;
  }

  /** Nothing to train (Faiss's IndexFlat): checks `xt` and returns. */
  async train(xt: Float32Array | VectorSource, _options?: TrainOptions): Promise<void> {
    this.queue.checkOpen('train');
    if (xt instanceof Float32Array) checkVectors(xt, this.dim, 'xt', true, this.metric !== 'cosine');
    else checkSource(xt, this.dim, 'xt');
  }

  /**
   * Adds vectors exactly as given (already normalised for cosine), with sequential ids: for
   * loading saved indexes. The index takes `xb` over (no copy): the caller must not modify it.
   */
  async addPrepared(xb: Float32Array): Promise<void> {
    this.queue.checkOpen('addPrepared');
    const n = checkVectors(xb, this.dim, 'xb', true, this.metric !== 'cosine');
    return this.queue.mutate(async () => {
      checkIdRoom(this.ids.nslots, n);
      const ids = this.ids.idsFor(n);
      await this.storeRows(xb, n);
      this.ids.append(ids, 'sequential');
    });
  }

  /**
   * Appends every row of `source` (a file of any size: see openVectors), block by block, in
   * buffers sized once for all of them, with sequential ids, or `options.ids` (one per row, as
   * addWithIds). If it throws (a malformed block, a full device), nothing was added.
   */
  async addFrom(source: VectorSource, options: { onProgress?: RowProgress; ids?: BigInt64Array } = {}): Promise<void> {
    this.queue.checkOpen('addFrom');
    checkSource(source, this.dim);
    const given = options.ids === undefined ? undefined : checkIds(options.ids, source.rows);
    return this.queue.mutate(async () => {
      checkIdRoom(this.ids.nslots, source.rows);
      const ids = this.ids.idsFor(source.rows, given);
      const mark = this.store.mark();
      try {
        await this.store.reserve(source.rows);
        for await (const b of checkedBlocks(source, 'xb', this.metric !== 'cosine', (x) => prepareOwnRows(this.metric, x, this.dim))) {
          await this.store.add(b.data, b.rows);
          options.onProgress?.(b.start + b.rows, source.rows);
        }
      } catch (err) {
        this.store.rollback(mark);
        throw err;
      }
      this.ids.append(ids, given ? 'caller' : 'sequential');
    });
  }

  /**
   * Makes room for `n` more vectors in buffers of exactly that size, so that adds of up to `n`
   * allocate nothing more (no doubling and copying as the store grows).
   */
  async reserve(n: number): Promise<void> {
    this.queue.checkOpen('reserve');
    if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`reserve: n must be an integer >= 0; got ${String(n)}`);
    return this.queue.mutate(() => this.store.reserve(n));
  }

  protected async storeRows(x: Float32Array, n: number): Promise<void> {
    await this.store.add(x, n);
  }

  protected candidates(xq: Float32Array, nq: number, kc: number, masks: Uint32Array[] | null, params: SearchParams): Promise<SlotResult> {
    return this.backend.searchFlat(this.store, xq, nq, kc, this.kernelMetric, params.timings, masks);
  }

  protected rangeCandidates(xq: Float32Array, nq: number, limit: number, rel: number, masks: Uint32Array[] | null, params: SearchParams): Promise<RangeCandidates> {
    return this.backend.rangeFlat(this.store, xq, nq, this.kernelMetric, limit, rel, masks, params.maxCandidates);
  }

  protected rowsAt(slots: ArrayLike<number>): Promise<RowAt> {
    return this.store.rowsAt(slots);
  }

  protected rowSpace(): RowSpace {
    const store = this.store as CodeStore;
    return { chunkRows: store.chunkRows, chunks: store.chunks.length, positionOf: (slot) => slot };
  }

  /** A new store holding the live rows, in slot order. */
  protected async compactStore(): Promise<number[]> {
    const keep: number[] = [];
    for (let s = 0; s < this.ids.nslots; s++) if (!this.ids.isDead(s)) keep.push(s);
    const store = this.backend.createBaseStore(this.dim, { hostCopy: this.hostCopy });
    try {
      await store.reserve(keep.length);
      for await (const block of this.liveRows()) await store.add(block, block.length / this.dim);
    } catch (err) {
      store.dispose();
      throw err;
    }
    this.store.dispose();
    this.store = store;
    return keep;
  }

  /** The live rows in slot order, in blocks (views valid until the next block is asked for). */
  private async *liveRows(): AsyncGenerator<Float32Array> {
    const d = this.dim;
    let slot = 0;
    for await (const block of this.store.readRows()) {
      const n = block.length / d;
      if (this.ids.ndead === 0) {
        yield block;
        slot += n;
        continue;
      }
      const out = new Float32Array(n * d);
      let m = 0;
      for (let i = 0; i < n; i++, slot++) if (!this.ids.isDead(slot)) out.set(block.subarray(i * d, (i + 1) * d), d * m++);
      if (m > 0) yield out.subarray(0, m * d);
    }
  }

  /**
   * Writes the index to `path` (see src/io/index-file.ts): a versioned header, the live vectors,
   * their ids and a checksum, through a temporary file, so a crash never leaves half an index.
   * `loadIndex` reads it. It saves the index as it is after every operation called before it,
   * block by block from the host copy (or the CPU's memory; without a host copy, read back from
   * the device).
   */
  async save(path: string, options: { onProgress?: (bytesDone: number, bytesTotal: number) => void } = {}): Promise<void> {
    this.queue.checkOpen('save');
    return this.queue.search(async () => {
      const live = this.ids.liveIds();
      const rows = this.liveRows();
      async function* parts(): AsyncGenerator<Float32Array | Uint32Array | BigInt64Array> {
        yield* rows;
        yield* idSection(live);
      }
      await writeIndexFile(path, { type: 'Flat', metric: this.metric, dim: this.dim, ntotal: this.ntotal, nlist: 0, nprobe: 0 }, parts(), options.onProgress);
    });
  }

  /** Removes every vector, after every operation called before it (the index stays usable). */
  async reset(): Promise<void> {
    this.queue.checkOpen('reset');
    return this.queue.mutate(async () => {
      this.store.reset();
      this.ids.reset();
    });
  }

  /** Frees the index's device memory once every operation called before it has settled. The backend stays open. */
  async dispose(): Promise<void> {
    return this.queue.close(async () => this.store.dispose());
  }
}
