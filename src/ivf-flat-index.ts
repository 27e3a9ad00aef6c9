/**
 * IVF-Flat (Faiss's IndexIVFFlat): k-means centroids partition the vectors into `nlist` inverted
 * lists; a search scans only the `nprobe` lists whose centroids are nearest the query, exactly.
 * Written once against `Backend`: the lists live on the device (src/stores/inverted-lists.ts),
 * which also keeps the host's view of them for `save` and the exact re-score (one host copy on
 * WebGPU unless `hostCopy` is false; none on the CPU, which reads its own memory).
 *
 * Metrics: `l2` assigns vectors and queries to lists by squared L2 to the centroids. `ip` does as
 * Faiss's IndexIVFFlat with an inner-product quantizer: centroids are trained with ordinary (L2)
 * k-means and vectors and queries go to the lists of largest inner product with them (no MIPS-to-L2
 * reduction). `cosine` normalises vectors and queries, then works as `ip`.
 */
import type { Backend, BaseStore } from './backend.js';
import { checkIds } from './ids.js';
import type { DeviceLists } from './stores/inverted-lists.js';
import type { RowAt } from './stores/rows.js';
import { KMeans, type KMeansInit, type KMeansProgress } from './kmeans.js';
import type { Metric, SlotResult } from './types.js';
import { InvalidArgumentError, checkDim, checkMetric, checkVectors, prepareOwnRows, prepareRows } from './types.js';
import { type RowProgress, type VectorSource, checkIdRoom, checkSource, checkedBlocks } from './vector-source.js';
import { checkLists, idSection, writeIndexFile } from './io/index-file.js';
import { IndexCore, type RowSpace, type SearchParams } from './vector-index.js';
import type { RangeCandidates } from './plans/range-search.js';

export interface IvfFlatIndexOptions {
  dim: number;
  /** Number of inverted lists (k-means centroids). */
  nlist: number;
  /** Default `l2`. */
  metric?: Metric;
  /** Lists scanned per query (default 1); settable later through `nprobe`. */
  nprobe?: number;
  /** k-means settings for `train` (defaults: 10 iterations, seed 1234, random init). */
  niter?: number;
  seed?: number;
  init?: KMeansInit;
  onTrainProgress?: (progress: KMeansProgress) => void;
  /** Keep one host copy of the vectors on WebGPU (default true); see FlatIndexOptions.hostCopy. */
  hostCopy?: boolean;
}

export class IvfFlatIndex extends IndexCore {
  readonly nlist: number;
  private nprobeValue = 1;
  private coarse: BaseStore | null = null;
  private trainedCentroids: Float32Array | null = null;
  /** The lists on the device (what searches scan, save writes and the re-score reads); emptied by reset, freed by dispose. */
  private deviceLists: DeviceLists;
  private readonly options: IvfFlatIndexOptions;

  constructor(backend: Backend, options: IvfFlatIndexOptions) {
    super(backend, checkDim(options?.dim), checkMetric(options?.metric ?? 'l2'), 'IvfFlatIndex');
    const nlist = options.nlist;
    if (typeof nlist !== 'number' || !Number.isInteger(nlist) || nlist < 1) {
      throw new InvalidArgumentError(`nlist must be an integer >= 1; got ${String(nlist)}`);
    }
    this.nlist = nlist;
    this.options = options;
    this.deviceLists = backend.createLists(this.dim, nlist, { hostCopy: options.hostCopy });
    if (options.nprobe !== undefined) this.nprobe = options.nprobe;
  }

  /** Whether centroids are installed now (a train still queued does not count yet). */
  get isTrained(): boolean {
    return this.coarse !== null;
  }

  /** Lists scanned per query, in [1, nlist]. */
  get nprobe(): number {
    return this.nprobeValue;
  }

  set nprobe(value: number) {
    this.nprobeValue = this.checkNprobe(value);
  }

  /** Vectors per list (removed vectors count until compaction). */
  listSizes(): Uint32Array {
    return this.deviceLists.listSizes();
  }

  private checkNprobe(value: unknown): number {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > this.nlist) {
      throw new InvalidArgumentError(`nprobe must be an integer in [1, ${this.nlist}] (nlist); got ${String(value)}`);
    }
    return value;
  }

  protected override checkParams(params: SearchParams): SearchParams {
    return { ...params, nprobe: params.nprobe === undefined ? this.nprobeValue : this.checkNprobe(params.nprobe) };
  }
  /**
   * Trains the nlist centroids by k-means on `xt` (`n * dim`, n >= nlist), or on a source read
   * block by block (a file of any size: only the sample is held). Retraining empties the index. `onProgress` (default: the constructor's onTrainProgress) hears of every iteration.
   * Like Faiss, k-means runs on a seeded sample of at most `maxPointsPerCentroid` (default 256)
   * points per list, and at most `maxPoints` in all when given. Runs after every operation called before it, like every mutation (see
   * OperationQueue).
   */
  async train(
    xt: Float32Array | VectorSource,
    options: { onProgress?: (progress: KMeansProgress) => void; maxPointsPerCentroid?: number; maxPoints?: number } = {},
  ): Promise<void> {
    this.queue.checkOpen('train');
    let n: number;
    let x: Float32Array | VectorSource;
    if (xt instanceof Float32Array) {
      n = checkVectors(xt, this.dim, 'xt', true, this.metric !== 'cosine');
      x = prepareRows(this.metric, xt, this.dim);
    } else {
      checkSource(xt, this.dim, 'xt');
      n = xt.rows;
      const source = xt;
      x = { rows: n, dim: this.dim, blocks: () => checkedBlocks(source, 'xt', this.metric !== 'cosine', (b) => prepareOwnRows(this.metric, b, this.dim)) };
    }
    if (n < this.nlist) {
      throw new InvalidArgumentError(`IvfFlatIndex.train: nlist = ${this.nlist} needs at least k = ${this.nlist} training points; got ${n}`);
    }
    return this.queue.mutate(async () => {
      const kmeans = new KMeans(this.backend, { dim: this.dim });
      const { centroids } = await kmeans.train(x, {
        k: this.nlist,
        niter: this.options.niter ?? 10,
        seed: this.options.seed ?? 1234,
        init: this.options.init ?? 'random',
        maxPointsPerCentroid: options.maxPointsPerCentroid,
        maxPoints: options.maxPoints,
        onProgress: options.onProgress ?? this.options.onTrainProgress,
      });
      await this.installCentroids(centroids);
    });
  }

  /**
   * Uses `centroids` (`nlist * dim`, for example from another index's training) instead of
   * training. Empties the index.
   */
  async setCentroids(centroids: Float32Array): Promise<void> {
    this.queue.checkOpen('setCentroids');
    const n = checkVectors(centroids, this.dim, 'centroids', false);
    if (n !== this.nlist) throw new InvalidArgumentError(`centroids must hold nlist = ${this.nlist} vectors; got ${n}`);
    const copy = centroids.slice();
    return this.queue.mutate(() => this.installCentroids(copy));
  }

  private async installCentroids(centroids: Float32Array): Promise<void> {
    const coarse = this.backend.createBaseStore(this.dim, { hostCopy: false }); // the centroids are kept below
    await coarse.add(centroids, this.nlist);
    this.trainedCentroids = centroids;
    this.coarse?.dispose();
    this.coarse = coarse;
    this.clearLists();
  }

  private clearLists(): void {
    this.deviceLists.reset();
    this.ids.reset();
  }

  /** The trained centroids (`nlist * dim`), or null before training. */
  get centroids(): Float32Array | null {
    return this.trainedCentroids;
  }

  protected async storeRows(x: Float32Array, n: number): Promise<void> {
    const coarse = this.requireTrained('add');
    const assign = await this.backend.searchFlat(coarse, x, n, 1, this.kernelMetric);
    const listOf = new Uint32Array(assign.labels.buffer, assign.labels.byteOffset, n);
    const slots = Uint32Array.from({ length: n }, (_, i) => this.ids.nslots + i);
    await this.deviceLists.add(x, n, listOf, slots);
  }

  /**
   * Appends every row of `source` (a file of any size: see openVectors) to the lists, in two
   * passes: the first assigns each row to its list (the costly part) and keeps only the list
   * numbers; the second reads the rows again into lists sized exactly (no spare room, no growth).
   * Ids continue from ntotal. If it throws, nothing was added. `onProgress` hears of both passes
   * (phase 'assign', then 'add').
   */
  async addFrom(source: VectorSource, options: { onProgress?: RowProgress; ids?: BigInt64Array } = {}): Promise<void> {
    this.queue.checkOpen('addFrom');
    checkSource(source, this.dim);
    const given = options.ids === undefined ? undefined : checkIds(options.ids, source.rows);
    return this.queue.mutate(async () => {
      const coarse = this.requireTrained('addFrom');
      checkIdRoom(this.ids.nslots, source.rows);
      const newIds = this.ids.idsFor(source.rows, given);
      const prepare = (b: Float32Array): Float32Array => prepareOwnRows(this.metric, b, this.dim);
      const checkNorms = this.metric !== 'cosine';
      const n = source.rows;
      const listOf = new Uint32Array(n);
      const counts = new Uint32Array(this.nlist);
      for await (const b of checkedBlocks(source, 'xb', checkNorms, prepare)) {
        const assign = await this.backend.searchFlat(coarse, b.data, b.rows, 1, this.kernelMetric);
        for (let i = 0; i < b.rows; i++) counts[(listOf[b.start + i] = assign.labels[i])]++;
        options.onProgress?.(b.start + b.rows, n, 'assign');
      }
      const mark = this.deviceLists.mark();
      const id0 = this.ids.nslots;
      try {
        await this.deviceLists.reserve(counts);
        for await (const b of checkedBlocks(source, 'xb', checkNorms, prepare)) {
          const ids = new Uint32Array(b.rows);
          for (let i = 0; i < b.rows; i++) ids[i] = id0 + b.start + i;
          await this.deviceLists.add(b.data, b.rows, listOf.subarray(b.start, b.start + b.rows), ids);
          options.onProgress?.(b.start + b.rows, n, 'add');
        }
      } catch (err) {
        this.deviceLists.rollback(mark);
        throw err;
      }
      this.ids.append(newIds, given ? 'caller' : 'sequential');
    });
  }

  protected candidates(xq: Float32Array, nq: number, kc: number, masks: Uint32Array[] | null, params: SearchParams): Promise<SlotResult> {
    const coarse = this.requireTrained('search');
    return this.backend.searchIvf(coarse, this.deviceLists, xq, nq, kc, params.nprobe!, this.kernelMetric, params.timings, masks);
  }

  protected rangeCandidates(xq: Float32Array, nq: number, limit: number, rel: number, masks: Uint32Array[] | null, params: SearchParams): Promise<RangeCandidates> {
    const coarse = this.requireTrained('rangeSearch');
    return this.backend.rangeIvf(coarse, this.deviceLists, xq, nq, params.nprobe!, this.kernelMetric, limit, rel, masks, params.maxCandidates);
  }

  protected rowsAt(slots: ArrayLike<number>): Promise<RowAt> {
    return this.deviceLists.rowsAt(slots);
  }

  protected rowSpace(): RowSpace {
    const lists = this.deviceLists;
    return { chunkRows: lists.chunkRows, chunks: lists.chunks.length, positionOf: (slot) => lists.positionOf(slot) };
  }

  /**
   * New lists holding the live rows, list by list as before; the slots kept are renumbered in
   * their old order (so ids still increase with position in every list where they did).
   */
  protected async compactStore(): Promise<number[]> {
    const { offsets, keep, renumbered, rows } = this.liveLists();
    const lists = this.backend.createLists(this.dim, this.nlist, { hostCopy: this.options.hostCopy });
    try {
      await fillLists(lists, offsets, renumbered, rows, this.dim);
    } catch (err) {
      lists.reset();
      throw err;
    }
    this.deviceLists.reset();
    this.deviceLists = lists;
    return keep;
  }

  /**
   * The live rows list by list: CSR offsets, the live slots in ascending order (`keep`), each row's
   * slot renumbered to its index in `keep` (as compaction and save number them), and the rows in
   * blocks.
   */
  private liveLists(): { offsets: Uint32Array; keep: number[]; renumbered: Uint32Array; rows: AsyncGenerator<Float32Array> } {
    const lists = this.deviceLists;
    const sizes = lists.listSizes();
    const all = lists.listIds();
    const offsets = new Uint32Array(this.nlist + 1);
    const slots: number[] = [];
    let p = 0;
    for (let l = 0; l < this.nlist; l++) {
      for (let i = 0; i < sizes[l]; i++, p++) if (!this.ids.isDead(all[p])) slots.push(all[p]);
      offsets[l + 1] = slots.length;
    }
    const keep = slots.slice().sort((a, b) => a - b);
    const renumber = new Map(keep.map((old, s) => [old, s]));
    const renumbered = Uint32Array.from(slots, (old) => renumber.get(old)!);
    return { offsets, keep, renumbered, rows: this.ids.liveRows(lists.readRows(), this.dim, (row) => all[row]) };
  }

  /**
   * Writes the index to `path` (centroids, the live rows' lists in CSR form, their ids, checksum),
   * block by block from the host's view of the lists (see FlatIndex.save); `loadIndex` reads it.
   */
  async save(path: string, options: { onProgress?: (bytesDone: number, bytesTotal: number) => void } = {}): Promise<void> {
    this.queue.checkOpen('save');
    const nprobe = this.nprobe; // as it is when save is called, like every argument
    return this.queue.search(async () => {
      const centroids = this.trainedCentroids;
      if (!centroids) throw new InvalidArgumentError('IvfFlatIndex.save: the index is not trained; there is nothing to save');
      const { offsets, keep, renumbered, rows } = this.liveLists();
      const live = { ids: Float64Array.from(keep, (s) => this.ids.idOf(s)), nextId: this.ids.savedNextId };
      async function* parts(): AsyncGenerator<Float32Array | Uint32Array | BigInt64Array> {
        yield centroids!;
        yield offsets;
        yield renumbered;
        yield* rows;
        yield* idSection(live);
      }
      await writeIndexFile(path, { type: 'IVF', metric: this.metric, dim: this.dim, ntotal: this.ntotal, nlist: this.nlist, nprobe }, parts(), options.onProgress);
    });
  }

  /**
   * Restores lists as saved (for loadIndex): `offsets` (list L is rows [offsets[L], offsets[L + 1])),
   * each row's id, and the rows (as stored: already normalised), block by block in that order.
   * Lists are sized exactly first. If it throws, the index is empty.
   */
  async restoreLists(offsets: Uint32Array, ids: Uint32Array, xb: Float32Array | AsyncIterable<Float32Array>): Promise<void> {
    this.queue.checkOpen('restoreLists');
    if (offsets.length !== this.nlist + 1) throw new InvalidArgumentError(`restoreLists: offsets must hold nlist + 1 = ${this.nlist + 1} values; got ${offsets.length}`);
    checkLists('restoreLists', offsets, ids, ids.length);
    checkIdRoom(0, ids.length);
    return this.queue.mutate(async () => {
      this.requireTrained('restoreLists');
      this.clearLists();
      try {
        await fillLists(this.deviceLists, offsets, ids, xb, this.dim);
      } catch (err) {
        this.clearLists();
        throw err;
      }
      this.ids.restore(Float64Array.from({ length: ids.length }, (_, s) => s), ids.length, 'restoreLists');
    });
  }

  /** Removes every vector, after every operation called before it; the centroids stay trained. */
  async reset(): Promise<void> {
    this.queue.checkOpen('reset');
    return this.queue.mutate(async () => this.clearLists());
  }

  /** Frees the index's device memory once every operation called before it has settled. */
  async dispose(): Promise<void> {
    return this.queue.close(async () => {
      this.coarse?.dispose();
      this.coarse = null;
      this.trainedCentroids = null;
      this.clearLists();
    });
  }

  protected override requireTrained(what: string): BaseStore {
    if (!this.coarse) throw new InvalidArgumentError(`IvfFlatIndex.${what}: the index is not trained; call train(xt) first`);
    return this.coarse;
  }
}

/**
 * Fills empty `lists` as saved (see IvfFlatIndex.restoreLists): `offsets` (list L is rows
 * [offsets[L], offsets[L + 1])), each row's id, and the rows (prepared), block by block in that
 * order, in lists sized exactly first.
 */
async function fillLists(lists: DeviceLists, offsets: Uint32Array, ids: Uint32Array, xb: Float32Array | AsyncIterable<Float32Array>, d: number): Promise<void> {
  const nlist = offsets.length - 1;
  await lists.reserve(Uint32Array.from({ length: nlist }, (_, l) => offsets[l + 1] - offsets[l]));
  let at = 0;
  let list = 0;
  for await (const block of xb instanceof Float32Array ? [xb] : xb) {
    const n = block.length / d;
    if (!Number.isInteger(n) || at + n > ids.length) {
      throw new InvalidArgumentError(`restoreLists: a block of ${block.length} values after ${at} rows: not whole rows of dim ${d}, or more rows than the ${ids.length} ids`);
    }
    const listOf = new Uint32Array(n);
    for (let i = 0; i < n; i++) {
      while (offsets[list + 1] <= at + i) list++;
      listOf[i] = list;
    }
    await lists.add(block, n, listOf, ids.subarray(at, at + n));
    at += n;
  }
  if (at !== ids.length) throw new InvalidArgumentError(`restoreLists: ${at} rows given for ${ids.length} ids`);
}
