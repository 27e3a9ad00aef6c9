/**
 * Exact search: every query is scored against every stored vector (Faiss's IndexFlat).
 * Written once against `Backend`; the backend decides whether the kernels run on the GPU or CPU.
 */
import type { Backend } from '../../backend/backend.js';
import { Codec } from '../../codecs/codec.js';
import { type IdList, checkIds } from '../ids.js';
import type { RefineKind } from '../../codecs/refine.js';
import { Transform, transformName } from '../../codecs/transforms.js';

import type { Metric, SlotResult } from '../../types.js';
import { checkDim, checkMetric, checkVectors, prepareOwnRows, prepareRows } from '../../types.js';
import { type RowProgress, type VectorSource, checkIdRoom, checkSource, checkedBlocks, preparedSource } from '../../common/vector-source.js';
import { type IndexFileHeader, TRANSFORM_FILE_TYPE, codecFileType, idSection } from '../../io/index-format.js';
import { type SearchParams, type TrainOptions } from '../vector-index.js';
import type { RangeCandidates } from '../../plans/range-search.js';
import type { BaseStore, RowAt } from '../../contracts.js';
import { IndexCore, type RowSpace, type SavedIndex } from '../index-core.js';
import type { MemoryTally } from '../memory.js';
import { InvalidArgumentError } from '../../errors.js';

export interface FlatIndexOptions {
  dim: number;
  /** Default `l2`. */
  metric?: Metric;
  /**
   * Keep one host copy of the vectors where the device's memory is not the host's (WebGPU): the
   * exact re-score and `save` read it. False: they read the rows back from the device. Default: the
   * device's `tuning.hostCopy` (on for a real GPU, off for a CPU-emulated adapter). The CPU backend
   * never keeps a copy (it reads its own memory). See BaseStoreOptions.
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
   * from the codes against them (SearchParams.kFactor). With a transform: keep the full-d rows
   * (`Flat`) or their SQfp16 codes for the re-rank of the transformed rows' candidates.
   */
  refine?: RefineKind;
  /**
   * Search on transformed rows (src/codecs/transforms.ts), as the factory's first component spells it:
   * `Prefix<p>` (the first p dimensions), `PCA<p>` or `PCAR<p>` (trained: `train` before adding),
   * 1 <= p <= dim. The store holds p floats a row; queries are transformed the same way. Without
   * `refine` the distances are those of the transformed rows (as Faiss's IndexPreTransform); with
   * it, those of the full rows. Storage after a transform is float32 rows (no codec) for now.
   */
  transform?: string;
}

export class FlatIndex extends IndexCore {
  protected store: BaseStore;
  private readonly hostCopy: boolean | undefined;
  /** The trained codec of a coded index (null for float32 rows, and before training). */
  private codec: Codec | null = null;
  /** The ready transform (null without one, and before a PCA is trained). */
  private transform: Transform | null = null;
  /** Floats a stored row has: the transform's p, else dim. */
  private readonly storeDim: number;
  /** Transformed queries by the prepared queries' array: a search transforms them once for its candidates and its re-score. */
  private readonly transformed = new WeakMap<Float32Array, Float32Array>();

  constructor(backend: Backend, options: FlatIndexOptions, name = 'FlatIndex') {
    super(backend, checkDim(options?.dim), checkMetric(options?.metric ?? 'l2'), name, options);
    this.hostCopy = options.hostCopy;
    this.storeDim = this.transformSpec?.p ?? this.dim;
    this.store = backend.createBaseStore(this.storeDim, { hostCopy: options.hostCopy });
    const ready = this.codecSpec && Codec.untrained(this.codecSpec, this.dim);
    if (ready) this.installCodec(ready);
    const prefix = this.transformSpec && Transform.untrained(this.transformSpec, this.dim);
    if (prefix) this.transform = prefix;
  }

  /** Whether vectors can be added: always for float32 rows, SQfp16 and Prefix, after `train` for SQ8, SQ4, PQ, PCA and PCAR. */
  get isTrained(): boolean {
    return (this.codecSpec === null || this.codec !== null) && (this.transformSpec === null || this.transform !== null);
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
    const tspec = this.transformSpec;
    const x = (): Float32Array | VectorSource => (xt instanceof Float32Array ? prepareRows(this.metric, xt, this.dim) : preparedSource(xt, this.metric, this.dim));
    if (tspec && !Transform.untrained(tspec, this.dim)) {
      const rows = x();
      return this.queue.mutate(async () => this.installTransform(await Transform.train(tspec, this.dim, rows)));
    }
    if (spec === null || Codec.untrained(spec, this.dim)) return;
    const rows = x();
    return this.queue.mutate(async () => {
      const codec = await Codec.train(this.backend, spec, this.dim, rows);
      codec.checkBound(null, true);
      this.installCodec(codec);
    });
  }

  /** Uses a trained transform (from train or a saved index), emptying the index. */
  private installTransform(transform: Transform): void {
    this.transform = transform;
    this.store.reset();
    this.refineRows?.reset();
    this.ids.reset();
  }

  /** The prepared queries as the store is searched: transformed where there is a transform. */
  private storeQueries(xq: Float32Array, nq: number): Float32Array {
    if (!this.transform) return xq;
    let y = this.transformed.get(xq);
    if (!y) this.transformed.set(xq, (y = this.transform.apply(xq, nq, this.metric)));
    return y;
  }

  /**
   * The queries in the space of what the store holds (rowsAt): a transformed index's rows in the
   * transformed space, an LSH's reconstructions in its rotated space (Codec.toCodeSpace).
   */
  protected override ownQueries(xq: Float32Array, nq: number): { queries: Float32Array; dim: number } {
    if (this.transform) return { queries: this.storeQueries(xq, nq), dim: this.storeDim };
    return { queries: this.codec ? this.codec.toCodeSpace(xq, nq) : xq, dim: this.dim };
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

  /**
   * Restores saved tables (loadIndex): the codec's (as `codecTables` gave them) or the
   * transform's (Transform.tables), whichever this index has, checked as a file's are (finite,
   * every reconstruction within the bound on added vectors, a rotation or projection
   * orthonormal). Empties the index.
   */
  async restoreTables(tables: Float32Array): Promise<void> {
    this.queue.checkOpen('restoreTables');
    const { codecSpec, transformSpec } = this;
    if (codecSpec) {
      const codec = Codec.restore(codecSpec, this.dim, tables);
      codec.checkBound();
      return this.queue.mutate(async () => this.installCodec(codec));
    }
    if (!transformSpec) throw new InvalidArgumentError('restoreTables: this index stores float32 rows; it has no codec or transform');
    const transform = Transform.restore(transformSpec, this.dim, tables);
    return this.queue.mutate(async () => this.installTransform(transform));
  }

  /**
   * Adds rows exactly as this index stores them (codes: `n * rowWords` words; transformed float
   * rows: `n * p` floats; as `save` wrote them), with sequential ids: for loading saved indexes
   * (their refine rows follow: restoreRefine).
   */
  async addStored(words: Float32Array, n: number): Promise<void> {
    this.queue.checkOpen('addStored');
    return this.queue.mutate(async () => {
      this.requireTrained('addStored');
      checkIdRoom(this.ids.nslots, n);
      const w = this.codec ? this.store.rowWords : this.storeDim;
      if (words.length !== n * w) throw new InvalidArgumentError(`addStored: ${words.length} words for ${n} rows of ${w}`);
      const ids = this.ids.idsFor(n);
      if (this.codec) await this.store.addStored(words, n);
      else await this.store.add(words, n);
      this.ids.append(ids, 'sequential');
      this.rowsChanged('appended');
    });
  }

  protected override requireTrained(what: string): void {
    const name = this.codecName ?? (this.transformSpec && transformName(this.transformSpec));
    if (!this.isTrained) throw new InvalidArgumentError(`FlatIndex.${what}: the ${name} index is not trained; call train(xt) first`);
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
  async addFrom(source: VectorSource, options: { onProgress?: RowProgress; ids?: IdList } = {}): Promise<void> {
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
      this.rowsChanged('appended');
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
    this.rowsChanged('appended');
  }

  /**
   * Called whenever the stored rows change, inside the operation that changed them: `appended`
   * after an add (the rows before keep their slots), `replaced` after a compaction or a reset. A
   * subclass that keeps something built from the rows (GraphIndex's graph) extends or drops it.
   */
  protected rowsChanged(_how: 'appended' | 'replaced'): void {}

  /** Appends `n` prepared rows: float32 rows, or their codes (and with refine the rows too). */
  private async storeBlock(x: Float32Array, n: number): Promise<void> {
    if (this.codec) await this.store.addEncoded(await this.codec.encode(this.backend, this.store.format, x, n), n);
    else await this.store.add(this.transform ? this.transform.apply(x, n, this.metric) : x, n);
    await this.refineRows?.add(x, n);
  }

  // In the kernels' order always (what `need` null asks for).
  protected candidates(xq: Float32Array, nq: number, kc: number, masks: Uint32Array[] | null, params: SearchParams, _need?: number | null): Promise<SlotResult> {
    return this.backend.searchFlat(this.store, this.storeQueries(xq, nq), nq, kc, this.kernelMetric, params.timings, masks);
  }

  protected rangeCandidates(xq: Float32Array, nq: number, limit: number, rel: number, masks: Uint32Array[] | null, params: SearchParams): Promise<RangeCandidates> {
    if (this.codecSpec?.type === 'LSH') {
      throw new InvalidArgumentError(`rangeSearch: a ${this.codecName} index scores Hamming distances between bits, which bound no radius of the ${this.metric} metric`);
    }
    return this.backend.rangeFlat(this.store, this.storeQueries(xq, nq), nq, this.kernelMetric, limit, rel, masks, params.maxCandidates);
  }

  protected rowsAt(slots: ArrayLike<number>): Promise<RowAt> {
    return this.store.rowsAt(slots);
  }

  protected rowSpace(): RowSpace {
    return { chunkRows: this.store.chunkRows, chunks: this.store.chunks.length, positionOf: (slot) => slot };
  }

  /** A new store holding the live rows, in slot order. */
  protected async compactStore(): Promise<number[]> {
    const keep: number[] = [];
    for (let s = 0; s < this.ids.nslots; s++) if (!this.ids.isDead(s)) keep.push(s);
    const store = this.backend.createBaseStore(this.storeDim, { hostCopy: this.hostCopy }, this.store.format);
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
    this.rowsChanged('replaced');
    return keep;
  }

  /**
   * The live rows in slot order, in blocks (views valid until the next block is asked for): `d`
   * floats a row (p with a transform), or with `stored`, as stored (`rowWords` words: codes stay coded).
   */
  protected liveRows(stored = false): AsyncGenerator<Float32Array> {
    return this.ids.liveRows(this.store.readRows(stored), stored ? this.store.rowWords : this.storeDim, (row) => row);
  }

  /** The store's chunks, and the codec's or transform's tables (as saved). */
  protected override countMemory(tally: MemoryTally): void {
    tally.store(this.store);
    tally.array(this.codec?.tables());
    tally.array(this.transform?.tables());
    super.countMemory(tally);
  }

  /** Float32 rows, codes or transformed rows, by slot (see IndexCore.savedIndex). */
  protected savedIndex(what: 'save' | 'serialize'): () => Promise<SavedIndex> {
    return async () => {
      this.requireTrained(what); // its tables are part of the file
      const live = { ids: this.ids.liveIds(), nextId: this.ids.savedNextId };
      const tables = this.codec?.tables() ?? this.transform?.tables() ?? null;
      const rows = this.liveRows(this.codec !== null);
      const refine = this.refineRows?.liveRows(this.ids);
      async function* parts(): AsyncGenerator<Float32Array | Uint32Array | BigInt64Array> {
        if (tables) yield tables;
        yield* rows;
        if (refine) yield* refine;
        yield* idSection(live);
      }
      const type = this.codecSpec ? codecFileType(this.codecSpec, false) : this.transformSpec ? TRANSFORM_FILE_TYPE : 'Flat';
      const header: IndexFileHeader = { type, metric: this.metric, dim: this.dim, ntotal: this.ntotal, nlist: 0, nprobe: 0, codec: this.codecSpec, refine: this.refine, transform: this.transformSpec };
      return { header, parts: parts() };
    };
  }

  /** Removes every vector, after every operation called before it (the index stays usable, and trained). */
  async reset(): Promise<void> {
    this.queue.checkOpen('reset');
    return this.queue.mutate(async () => {
      this.store.reset();
      this.refineRows?.reset();
      this.ids.reset();
      this.rowsChanged('replaced');
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
