/**
 * Exact search: every query is scored against every stored vector (Faiss's IndexFlat).
 * Written once against `Backend`; the backend decides whether the kernels run on the GPU or CPU.
 */
import type { Backend, BaseStore } from './backend.js';
import type { KernelMetric } from './kernel-facts.js';
import type { Metric, SearchResult, SearchTimings } from './types.js';
import { InvalidArgumentError, checkDim, checkK, checkMetric, checkVectors, prepareOwnRows, prepareRows } from './types.js';
import { type RowProgress, type VectorSource, checkIdRoom, checkSource, checkedBlocks } from './vector-source.js';
import { writeIndexFile } from './io/index-file.js';
import { OperationQueue } from './operation-queue.js';
import { candidatesFor, rescore, timedRescore } from './rescore.js';

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

export interface SearchOptions {
  /** Filled with the time spent uploading, computing and reading back. */
  timings?: SearchTimings;
}

export class FlatIndex {
  readonly dim: number;
  readonly metric: Metric;
  private readonly store: BaseStore;
  private readonly queue = new OperationQueue('FlatIndex');

  constructor(
    readonly backend: Backend,
    options: FlatIndexOptions,
  ) {
    this.dim = checkDim(options?.dim);
    this.metric = checkMetric(options.metric ?? 'l2');
    this.store = backend.createBaseStore(this.dim, { hostCopy: options.hostCopy });
  }

  /** Number of vectors stored so far (adds still queued are not counted); ids 0 .. ntotal - 1 in add order. */
  get ntotal(): number {
    return this.store.ntotal;
  }

  private get kernelMetric(): KernelMetric {
    return this.metric === 'l2' ? 'l2' : 'ip';
  }

  /**
   * Appends `xb` (`n * dim` floats, row-major); the vectors get ids ntotal .. ntotal + n - 1, in
   * call order (see "Operations in call order" in the README). `xb` is copied when the call is
   * made: the caller may reuse it at once. Validates everything first: if it rejects, nothing was added.
   */
  async add(xb: Float32Array): Promise<void> {
    this.queue.checkOpen('add');
    return this.addRows(xb, true);
  }

  /**
   * Adds vectors exactly as given (already normalised for cosine): for loading saved indexes.
   * The index takes `xb` over (no copy): the caller must not modify it afterwards.
   */
  async addPrepared(xb: Float32Array): Promise<void> {
    this.queue.checkOpen('addPrepared');
    return this.addRows(xb, false);
  }

  /**
   * Appends every row of `source` (a file of any size: see openVectors), block by block, in
   * buffers sized once for all of them. Ids continue from ntotal. If it throws (a malformed block,
   * a full device), nothing was added.
   */
  async addFrom(source: VectorSource, options: { onProgress?: RowProgress } = {}): Promise<void> {
    this.queue.checkOpen('addFrom');
    checkSource(source, this.dim);
    return this.queue.mutate(async () => {
      checkIdRoom(this.ntotal, source.rows);
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

  private async addRows(xb: Float32Array, prepare: boolean): Promise<void> {
    const n = checkVectors(xb, this.dim, 'xb', true, this.metric !== 'cosine');
    const x = prepare ? prepareRows(this.metric, xb, this.dim) : xb;
    return this.queue.mutate(async () => {
      checkIdRoom(this.ntotal, n);
      if (n > 0) await this.store.add(x, n);
    });
  }

  /**
   * The k nearest stored vectors of each query in `xq` (`nq * dim` floats), after every add and
   * reset called before it. Returns `{ distances, labels }`, each `nq * k`, row-major, best first;
   * when fewer than k vectors are stored, rows are padded with label -1 and distance +Infinity
   * (l2) or -Infinity (ip, cosine). Distances: l2 = squared Euclidean; ip = inner product;
   * cosine = cosine similarity. The final candidates are re-scored exactly (src/rescore.ts), so
   * the order is the same on every backend and a stored vector is at distance 0 from itself.
   */
  async search(xq: Float32Array, k: number, options: SearchOptions = {}): Promise<SearchResult> {
    this.queue.checkOpen('search');
    checkK(k, this.backend.maxK);
    const nq = checkVectors(xq, this.dim, 'xq', false, this.metric !== 'cosine');
    const queries = prepareRows(this.metric, xq, this.dim);
    return this.queue.search(async () => {
      const kc = candidatesFor(k, this.backend.maxK);
      const cand = await this.backend.searchFlat(this.store, queries, nq, kc, this.kernelMetric, options.timings);
      return timedRescore(options.timings, async () =>
        rescore(this.metric, queries, nq, this.dim, cand, kc, k, await this.store.rowsAt(cand.labels)),
      );
    });
  }

  /**
   * Writes the index to `path` (see src/io/index-file.ts): a versioned header, the vectors and a
   * checksum, through a temporary file, so a crash never leaves half an index. `loadIndex` reads it.
   * It saves the index as it is after every add and reset called before it, block by block from
   * the host copy (or the CPU's memory; without a host copy, read back from the device).
   */
  async save(path: string, options: { onProgress?: (bytesDone: number, bytesTotal: number) => void } = {}): Promise<void> {
    this.queue.checkOpen('save');
    return this.queue.search(async () => {
      await writeIndexFile(path, { type: 'Flat', metric: this.metric, dim: this.dim, ntotal: this.ntotal, nlist: 0, nprobe: 0 }, this.store.readRows(), options.onProgress);
    });
  }

  /** Removes every vector, after every operation called before it (the index stays usable). */
  async reset(): Promise<void> {
    this.queue.checkOpen('reset');
    return this.queue.mutate(async () => this.store.reset());
  }

  /** Frees the index's device memory once every operation called before it has settled. The backend stays open. */
  async dispose(): Promise<void> {
    return this.queue.close(async () => this.store.dispose());
  }
}

