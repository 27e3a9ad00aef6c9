/**
 * Exact search: every query is scored against every stored vector (Faiss's IndexFlat).
 * Written once against `Backend`; the backend decides whether the kernels run on the GPU or CPU.
 */
import type { Backend, BaseStore } from './backend.js';
import { SQ_KINDS, ScalarQuantizer, type SqKind } from './codecs/scalar-quantizer.js';
import { checkIds } from './ids.js';
import { sqRows } from './stores/row-format.js';
import type { CodeStore } from './stores/code-store.js';
import type { RowAt } from './stores/rows.js';
import type { Metric, SlotResult } from './types.js';
import { InvalidArgumentError, checkDim, checkMetric, checkVectors, prepareOwnRows, prepareRows } from './types.js';
import { type RowProgress, type VectorSource, checkIdRoom, checkSource, checkedBlocks, dimensionRange } from './vector-source.js';
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
  /**
   * Store the vectors as a scalar quantiser's codes (Faiss's IndexScalarQuantizer: `SQ8` one byte
   * a dimension, `SQ4` half a byte, `SQfp16` two bytes) instead of float32; searches then rank by
   * the distance to each vector's reconstruction. SQ8 and SQ4 are trained (`train`: per-dimension
   * min and max) before anything is added; SQfp16 needs no training.
   */
  codec?: SqKind;
}

export class FlatIndex extends IndexCore {
  private store: BaseStore;
  private readonly hostCopy: boolean | undefined;
  readonly codec: SqKind | null;
  /** The trained quantiser of a coded index (null for float32 rows, and before training). */
  private sq: ScalarQuantizer | null = null;

  constructor(backend: Backend, options: FlatIndexOptions) {
    super(backend, checkDim(options?.dim), checkMetric(options?.metric ?? 'l2'), 'FlatIndex');
    this.hostCopy = options.hostCopy;
    this.codec = options.codec ?? null;
    if (this.codec !== null && !SQ_KINDS.includes(this.codec)) {
      throw new InvalidArgumentError(`codec must be one of ${SQ_KINDS.join(', ')}; got ${String(this.codec)}`);
    }
    this.store = backend.createBaseStore(this.dim, { hostCopy: options.hostCopy });
    if (this.codec === 'SQfp16') this.installQuantizer(new ScalarQuantizer(this.dim, 'SQfp16'));
  }

  /** Whether vectors can be added: always for float32 rows and SQfp16, after `train` for SQ8 and SQ4. */
  get isTrained(): boolean {
    return this.codec === null || this.sq !== null;
  }

  /**
   * Float32 rows (Faiss's IndexFlat): nothing to train, checks `xt` and returns. SQ8 / SQ4: trains
   * the quantiser on `xt` (an array, or a source read block by block: only each dimension's
   * minimum and maximum are kept) and empties the index. SQfp16: checks `xt`.
   */
  async train(xt: Float32Array | VectorSource, _options?: TrainOptions): Promise<void> {
    this.queue.checkOpen('train');
    const checkNorms = this.metric !== 'cosine';
    if (xt instanceof Float32Array) checkVectors(xt, this.dim, 'xt', true, checkNorms);
    else checkSource(xt, this.dim, 'xt');
    if (this.codec !== 'SQ8' && this.codec !== 'SQ4') return;
    const codec = this.codec;
    const x = xt instanceof Float32Array ? prepareRows(this.metric, xt, this.dim) : xt;
    return this.queue.mutate(async () => {
      const range = await dimensionRange(x, this.dim, (b) => prepareOwnRows(this.metric, b, this.dim), checkNorms);
      if (range === null) throw new InvalidArgumentError(`FlatIndex.train: ${codec} needs at least one training vector; got none`);
      const sq = new ScalarQuantizer(this.dim, codec);
      // Faiss's RS_minmax depends only on each dimension's minimum and maximum: training on those
      // two rows gives the tables training on every row would.
      sq.train(range, 2);
      this.installQuantizer(sq);
    });
  }

  /** Uses a trained quantiser (from train or a saved index): a new, empty store of its codes. */
  private installQuantizer(sq: ScalarQuantizer): void {
    const store = this.backend.createBaseStore(this.dim, { hostCopy: this.hostCopy }, sqRows(sq));
    this.store.dispose();
    this.store = store;
    this.sq = sq;
    this.ids.reset();
  }

  protected override get scoreMetric(): Metric {
    return this.codec !== null && this.metric === 'cosine' ? 'ip' : this.metric;
  }

  /** The quantiser's trained tables (for save), or null. */
  get quantizerTables(): Float32Array | null {
    return this.sq?.tables() ?? null;
  }

  /**
   * Restores a saved quantiser (loadIndex): `tables` as ScalarQuantizer.tables gave them. Empties
   * the index.
   */
  async restoreQuantizer(tables: Float32Array): Promise<void> {
    this.queue.checkOpen('restoreQuantizer');
    const codec = this.codec;
    if (codec === null) throw new InvalidArgumentError('restoreQuantizer: this index stores float32 rows; it has no quantiser');
    const sq = ScalarQuantizer.fromTables(this.dim, codec, tables);
    return this.queue.mutate(async () => this.installQuantizer(sq));
  }

  /**
   * Adds rows exactly as this index stores them (`n * rowWords` words, as `save` wrote them), with
   * sequential ids: for loading saved indexes.
   */
  async addStored(words: Float32Array, n: number): Promise<void> {
    this.queue.checkOpen('addStored');
    return this.queue.mutate(async () => {
      this.requireTrained('addStored');
      checkIdRoom(this.ids.nslots, n);
      if (words.length !== n * this.store.rowWords) throw new InvalidArgumentError(`addStored: ${words.length} words for ${n} rows of ${this.store.rowWords}`);
      const ids = this.ids.idsFor(n);
      await this.store.addStored(words, n);
      this.ids.append(ids, 'sequential');
    });
  }

  protected override requireTrained(what: string): void {
    if (!this.isTrained) throw new InvalidArgumentError(`FlatIndex.${what}: a ${this.codec} index is trained first; call train(xt)`);
  }

  /**
   * Adds vectors exactly as given (already normalised for cosine), with sequential ids: for
   * loading saved indexes. The index takes `xb` over (no copy): the caller must not modify it.
   */
  async addPrepared(xb: Float32Array): Promise<void> {
    this.queue.checkOpen('addPrepared');
    const n = checkVectors(xb, this.dim, 'xb', true, this.metric !== 'cosine');
    return this.queue.mutate(async () => {
      this.requireTrained('addPrepared');
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
      this.requireTrained('addFrom');
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
    const store = this.backend.createBaseStore(this.dim, { hostCopy: this.hostCopy }, this.sq ? sqRows(this.sq) : undefined);
    try {
      await store.reserve(keep.length);
      for await (const block of this.liveRows(true)) await store.addStored(block, block.length / this.store.rowWords);
    } catch (err) {
      store.dispose();
      throw err;
    }
    this.store.dispose();
    this.store = store;
    return keep;
  }

  /**
   * The live rows in slot order, in blocks (views valid until the next block is asked for): `d`
   * floats a row, or with `stored`, as stored (`rowWords` words: codes stay coded).
   */
  private liveRows(stored = false): AsyncGenerator<Float32Array> {
    return this.ids.liveRows(this.store.readRows(stored), stored ? this.store.rowWords : this.dim, (row) => row);
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
      const live = { ids: this.ids.liveIds(), nextId: this.ids.savedNextId };
      const tables = this.sq?.tables() ?? null;
      const rows = this.liveRows(tables !== null);
      async function* parts(): AsyncGenerator<Float32Array | Uint32Array | BigInt64Array> {
        if (tables) yield tables;
        yield* rows;
        yield* idSection(live);
      }
      const header = { type: this.codec ?? 'Flat', metric: this.metric, dim: this.dim, ntotal: this.ntotal, nlist: 0, nprobe: 0 } as const;
      await writeIndexFile(path, header, parts(), options.onProgress);
    });
  }

  /** Removes every vector, after every operation called before it (the index stays usable, and trained). */
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
