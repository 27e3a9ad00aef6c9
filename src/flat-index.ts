/**
 * Exact search: every query is scored against every stored vector (Faiss's IndexFlat).
 * Written once against `Backend`; the backend decides whether the kernels run on the GPU or CPU.
 */
import type { Backend, BaseStore } from './backend.js';
import { Codec } from './codecs/codec.js';
import { checkIds } from './ids.js';
import type { RefineKind } from './refine.js';
import type { CodeStore } from './stores/code-store.js';
import type { RowAt } from './stores/rows.js';
import type { Metric, SlotResult } from './types.js';
import { InvalidArgumentError, checkDim, checkMetric, checkVectors, prepareOwnRows, prepareRows } from './types.js';
import { type RowProgress, type VectorSource, checkIdRoom, checkSource, checkedBlocks, preparedSource } from './vector-source.js';
import { type IndexFileHeader, codecFileType, idSection, writeIndexFile } from './io/index-file.js';
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
   * Store the vectors as codes instead of float32 (src/codecs/codec.ts), as Faiss spells them: a
   * scalar quantiser (`SQ8` one byte a dimension, `SQ4` half a byte, `SQfp16` two bytes: Faiss's
   * IndexScalarQuantizer) or a product quantiser (`PQ<M>`, `PQ<M>x<nbits>`: M codes of nbits
   * bits, Faiss's IndexPQ), or binary codes (`LSH`, `LSHr`, `LSHt`, `LSHrt`: Faiss's IndexLSH, d
   * bits, ranked by Hamming distance, then re-scored against +-1 reconstructions; src/codecs/lsh.ts);
   * searches then rank by the distance to each vector's reconstruction.
   * SQ8, SQ4, PQ, LSHt and LSHrt are trained (`train`) before anything is added; SQfp16, LSH and
   * LSHr need no training.
   */
  codec?: string;
  /**
   * With a codec: keep the vectors a second time, as float32 rows (`Flat`: Faiss's `,RFlat`) or
   * SQfp16 codes (`SQfp16`: `,Refine(SQfp16)`), and re-score each search's k x kFactor candidates
   * from the codes against them (SearchParams.kFactor).
   */
  refine?: RefineKind;
}

export class FlatIndex extends IndexCore {
  private store: BaseStore;
  private readonly hostCopy: boolean | undefined;
  /** The trained codec of a coded index (null for float32 rows, and before training). */
  private codec: Codec | null = null;

  constructor(backend: Backend, options: FlatIndexOptions) {
    super(backend, checkDim(options?.dim), checkMetric(options?.metric ?? 'l2'), 'FlatIndex', options);
    this.hostCopy = options.hostCopy;
    this.store = backend.createBaseStore(this.dim, { hostCopy: options.hostCopy });
    const ready = this.codecSpec && Codec.untrained(this.codecSpec, this.dim);
    if (ready) this.installCodec(ready);
  }

  /** Whether vectors can be added: always for float32 rows and SQfp16, after `train` for SQ8, SQ4 and PQ. */
  get isTrained(): boolean {
    return this.codecSpec === null || this.codec !== null;
  }

  /**
   * Float32 rows (Faiss's IndexFlat): nothing to train, checks `xt` and returns. A codec: trains
   * it on `xt` (an array, or a source read block by block; see Codec.train) and empties the index.
   * SQfp16: checks `xt`.
   */
  async train(xt: Float32Array | VectorSource, _options?: TrainOptions): Promise<void> {
    this.queue.checkOpen('train');
    const checkNorms = this.metric !== 'cosine';
    if (xt instanceof Float32Array) checkVectors(xt, this.dim, 'xt', true, checkNorms);
    else checkSource(xt, this.dim, 'xt');
    const spec = this.codecSpec;
    if (spec === null || Codec.untrained(spec, this.dim)) return;
    const x = xt instanceof Float32Array ? prepareRows(this.metric, xt, this.dim) : preparedSource(xt, this.metric, this.dim);
    return this.queue.mutate(async () => this.installCodec(await Codec.train(this.backend, spec, this.dim, x)));
  }

  /** Uses a trained codec (from train or a saved index): a new, empty store of its codes. */
  private installCodec(codec: Codec): void {
    const store = this.backend.createBaseStore(this.dim, { hostCopy: this.hostCopy }, codec.format());
    this.store.dispose();
    this.store = store;
    this.codec = codec;
    this.refineRows?.reset();
    this.ids.reset();
  }

  /** The codec's trained tables (for save), or null. */
  get codecTables(): Float32Array | null {
    return this.codec?.tables() ?? null;
  }

  /** Restores a saved codec (loadIndex): `tables` as `codecTables` gave them. Empties the index. */
  async restoreCodec(tables: Float32Array): Promise<void> {
    this.queue.checkOpen('restoreCodec');
    const spec = this.codecSpec;
    if (spec === null) throw new InvalidArgumentError('restoreCodec: this index stores float32 rows; it has no codec');
    const codec = Codec.restore(spec, this.dim, tables);
    return this.queue.mutate(async () => this.installCodec(codec));
  }

  /**
   * Adds rows exactly as this index stores them (`n * rowWords` words, as `save` wrote them), with
   * sequential ids: for loading saved indexes (their refine rows follow: restoreRefine).
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
    if (!this.isTrained) throw new InvalidArgumentError(`FlatIndex.${what}: a ${this.codecName} index is trained first; call train(xt)`);
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
      const refineMark = this.refineRows?.mark();
      try {
        await this.store.reserve(source.rows);
        await this.refineRows?.reserve(source.rows);
        for await (const b of checkedBlocks(source, 'xb', this.metric !== 'cosine', (x) => prepareOwnRows(this.metric, x, this.dim))) {
          await this.storeBlock(b.data, b.rows);
          options.onProgress?.(b.start + b.rows, source.rows);
        }
      } catch (err) {
        this.store.rollback(mark);
        if (refineMark) this.refineRows!.rollback(refineMark);
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
    const mark = this.store.mark();
    const refineMark = this.refineRows?.mark();
    try {
      await this.storeBlock(x, n);
    } catch (err) {
      this.store.rollback(mark);
      if (refineMark) this.refineRows!.rollback(refineMark);
      throw err;
    }
  }

  /** Appends `n` prepared rows: float32 rows, or their codes (and with refine the rows too). */
  private async storeBlock(x: Float32Array, n: number): Promise<void> {
    if (this.codec) await this.store.addEncoded(await this.codec.encode(this.backend, this.store.format, x, n), n);
    else await this.store.add(x, n);
    await this.refineRows?.add(x, n);
  }

  protected candidates(xq: Float32Array, nq: number, kc: number, masks: Uint32Array[] | null, params: SearchParams): Promise<SlotResult> {
    return this.backend.searchFlat(this.store, xq, nq, kc, this.kernelMetric, params.timings, masks);
  }

  protected override rescoreQueries(queries: Float32Array, nq: number): Float32Array {
    return this.codec && !this.refineRows ? this.codec.toCodeSpace(queries, nq) : queries;
  }

  protected rangeCandidates(xq: Float32Array, nq: number, limit: number, rel: number, masks: Uint32Array[] | null, params: SearchParams): Promise<RangeCandidates> {
    if (this.codecSpec?.type === 'LSH') {
      throw new InvalidArgumentError(`rangeSearch: a ${this.codecName} index scores Hamming distances between bits, which bound no radius of the ${this.metric} metric`);
    }
    return this.backend.rangeFlat(this.store, xq, nq, this.kernelMetric, limit, rel, masks, params.maxCandidates);
  }

  protected rowsAt(slots: ArrayLike<number>): Promise<RowAt> {
    return (this.refineRows ?? this.store).rowsAt(slots);
  }

  protected rowSpace(): RowSpace {
    const store = this.store as CodeStore;
    return { chunkRows: store.chunkRows, chunks: store.chunks.length, positionOf: (slot) => slot };
  }

  /** A new store holding the live rows, in slot order. */
  protected async compactStore(): Promise<number[]> {
    const keep: number[] = [];
    for (let s = 0; s < this.ids.nslots; s++) if (!this.ids.isDead(s)) keep.push(s);
    const store = this.backend.createBaseStore(this.dim, { hostCopy: this.hostCopy }, this.store.format);
    try {
      await store.reserve(keep.length);
      for await (const block of this.liveRows(true)) await store.addStored(block, block.length / this.store.rowWords);
      await this.refineRows?.compact(this.ids);
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
      const tables = this.codec?.tables() ?? null;
      const rows = this.liveRows(tables !== null);
      const refine = this.refineRows?.liveRows(this.ids);
      async function* parts(): AsyncGenerator<Float32Array | Uint32Array | BigInt64Array> {
        if (tables) yield tables;
        yield* rows;
        if (refine) yield* refine;
        yield* idSection(live);
      }
      const header: IndexFileHeader = { type: this.codecSpec ? codecFileType(this.codecSpec, false) : 'Flat', metric: this.metric, dim: this.dim, ntotal: this.ntotal, nlist: 0, nprobe: 0, codec: this.codecSpec, refine: this.refine };
      await writeIndexFile(path, header, parts(), options.onProgress);
    });
  }

  /** Removes every vector, after every operation called before it (the index stays usable, and trained). */
  async reset(): Promise<void> {
    this.queue.checkOpen('reset');
    return this.queue.mutate(async () => {
      this.store.reset();
      this.refineRows?.reset();
      this.ids.reset();
    });
  }

  /** Frees the index's device memory once every operation called before it has settled. The backend stays open. */
  async dispose(): Promise<void> {
    return this.queue.close(async () => {
      this.store.dispose();
      this.refineRows?.dispose();
    });
  }
}
