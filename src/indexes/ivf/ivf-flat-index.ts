/**
 * IVF-Flat (Faiss's IndexIVFFlat): k-means centroids partition the vectors into `nlist` inverted
 * lists; a search scans only the `nprobe` lists whose centroids are nearest the query, exactly.
 * Written once against `Backend`: the lists live on the device (src/stores/inverted-lists.ts),
 * which also keeps the host's view of them for `save` and the exact re-score (one host copy on
 * WebGPU unless `hostCopy` is false; none on the CPU, which reads its own memory).
 *
 * Metrics: `l2` assigns vectors and queries to lists by squared L2 to the centroids. `ip` does as
 * Faiss's IndexIVFFlat with an inner-product quantizer: vectors and queries go to the lists of
 * largest inner product with them (no MIPS-to-L2 reduction), and the centroids are trained by
 * that same assignment, with spherical k-means (unit-norm centroids; Faiss's IndexIVF sets
 * cp.spherical for inner product and assigns by its quantizer while training). Unit centroids are
 * what make an inner-product assignment a clustering: with L2 means a centroid's norm, not only
 * its direction, draws rows to it. `cosine` normalises vectors and queries, then works as `ip`,
 * centroids unit too (the mean of unit rows is shorter than 1 by its spread: means of unequal
 * spread would pull unequally). Lists of PQ codes are the exception, trained by L2 k-means: the
 * codes encode each row's residual to its centroid, L2 k-means' means are what make those
 * residuals smallest, and PQ's coarse codes lost more to the larger residuals of unit centroids
 * than the partition gained, in every measurement, ours and Faiss's alike (README, "IVF for
 * inner product, measured"). `spherical` overrides the default either way.
 *
 * With a codec (`IVF<n>,SQ8`, `IVF<n>,PQ16`: Faiss's IndexIVFScalarQuantizer and IndexIVFPQ) the
 * lists hold codes of each vector's residual to its list's centroid (Faiss's by_residual, its
 * default): the codec trains on residuals of a sample, and a search scores each (query, probed
 * list) pair with the query transformed for that list (src/stores/row-format.ts). `refine` keeps
 * the float32 vectors too (`,RFlat`) for an exact re-rank of k x kFactor candidates.
 */
import type { Backend } from '../../backend/backend.js';
import { Codec } from '../../codecs/codec.js';
import { type IdList, checkIds } from '../ids.js';
import type { RefineKind } from '../../codecs/refine.js';
import { rng } from '../../common/random.js';
import type { DeviceLists } from '../../stores/inverted-lists.js';
import { uncertified } from '../../stores/half-rows.js';

import { KMeans, type KMeansInit, type KMeansProgress, sampleRows } from '../../codecs/kmeans.js';
import type { Metric, SlotResult } from '../../types.js';
import { checkDim, checkMetric, checkVectors, prepareOwnRows, prepareRows } from '../../types.js';
import { type RowProgress, type VectorSource, checkIdRoom, checkSource, checkedBlocks, copyRows, preparedSource } from '../../common/vector-source.js';
import { type IndexFileHeader, checkLists, codecFileType, idSection } from '../../io/index-format.js';
import { type SearchParams } from '../vector-index.js';
import type { RangeCandidates } from '../../plans/range-search.js';
import type { BaseStore, RowAt } from '../../contracts.js';
import { IndexCore, type RowSpace, type SavedIndex } from '../index-core.js';
import type { MemoryTally } from '../memory.js';
import { InvalidArgumentError } from '../../errors.js';

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
  /**
   * Spherical k-means (KMeansTrainOptions.spherical: unit-norm centroids, so that the assignment
   * is by largest inner product). Default: true for ip and cosine (as Faiss's IndexIVF sets it)
   * except with PQ codes, false for l2 (see the header above).
   */
  spherical?: boolean;
  onTrainProgress?: (progress: KMeansProgress) => void;
  /** Keep one host copy of the vectors on WebGPU (default: the device's tuning.hostCopy); see FlatIndexOptions.hostCopy. */
  hostCopy?: boolean;
  /** Codes in the lists instead of float32 rows: as FlatIndexOptions.codec (SQ8, SQ4, SQfp16, PQ<M>, PQ<M>x<nbits>). */
  codec?: string;
  /** With a codec: keep the vectors a second time for a re-rank (`,RFlat`, `,Refine(SQfp16)`; see FlatIndexOptions.refine). */
  refine?: RefineKind;
}

/** Training rows the codec of an IVF index trains on (a seeded sample, as residuals): Faiss's PQ samples 256 per centroid of 256. */
const CODEC_TRAIN_ROWS = 65536;

export class IvfFlatIndex extends IndexCore {
  readonly nlist: number;
  private nprobeValue = 1;
  private coarse: BaseStore | null = null;
  private trainedCentroids: Float32Array | null = null;
  /** The lists on the device (what searches scan, save writes and the re-score reads); emptied by reset, freed by dispose. */
  private deviceLists: DeviceLists;
  private readonly options: IvfFlatIndexOptions;
  /** The trained codec (null for float32 lists, and before training). */
  private codec: Codec | null = null;

  constructor(backend: Backend, options: IvfFlatIndexOptions) {
    super(backend, checkDim(options?.dim), checkMetric(options?.metric ?? 'l2'), 'IvfFlatIndex', options);
    const nlist = options.nlist;
    if (typeof nlist !== 'number' || !Number.isInteger(nlist) || nlist < 1) {
      throw new InvalidArgumentError(`nlist must be an integer >= 1; got ${String(nlist)}`);
    }
    if (this.codecSpec?.type === 'LSH') throw new InvalidArgumentError(`IVF lists hold float32 rows, SQ or PQ codes; got ${this.codecName} (binary codes are stored in Flat indexes only)`);
    this.nlist = nlist;
    this.options = options;
    this.deviceLists = backend.createLists(this.dim, nlist, { hostCopy: options.hostCopy });
    if (options.nprobe !== undefined) this.nprobe = options.nprobe;
  }

  /** Whether centroids (and the codec, if any) are installed now (a train still queued does not count yet). */
  get isTrained(): boolean {
    return this.coarse !== null && (this.codecSpec === null || this.codec !== null);
  }

  /** The codec's trained tables (for save), or null. */
  get codecTables(): Float32Array | null {
    return this.codec?.tables() ?? null;
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
      x = preparedSource(xt, this.metric, this.dim);
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
        spherical: this.options.spherical ?? (this.metric !== 'l2' && this.codecSpec?.type !== 'PQ'),
        maxPointsPerCentroid: options.maxPointsPerCentroid,
        maxPoints: options.maxPoints,
        onProgress: options.onProgress ?? this.options.onTrainProgress,
      });
      await this.installCentroids(centroids);
      const spec = this.codecSpec;
      if (spec) {
        const sample = await sampleRows(x, this.dim, CODEC_TRAIN_ROWS, rng((this.options.seed ?? 1234) + 1));
        const n = sample.length / this.dim;
        const residuals = await this.residuals(sample, n, await this.assign(sample, n));
        const codec = await Codec.train(this.backend, spec, this.dim, residuals, this.options.seed ?? 1234);
        codec.checkBound(this.trainedCentroids, true);
        this.installCodec(codec);
      }
    });
  }

  /** The list (nearest centroid) of each of `n` prepared rows. */
  private async assign(x: Float32Array, n: number): Promise<Uint32Array> {
    const coarse = this.requireCentroids('add');
    const { labels } = await this.backend.searchFlat(coarse, x, n, 1, this.kernelMetric);
    return new Uint32Array(labels.buffer, labels.byteOffset, n);
  }

  /** `x - c_list` for each of `n` rows (residuals to their lists' centroids). */
  private async residuals(x: Float32Array, n: number, listOf: Uint32Array): Promise<Float32Array> {
    const c = this.trainedCentroids!;
    const d = this.dim;
    const out = new Float32Array(n * d);
    for (let i = 0; i < n; i++) {
      const c0 = listOf[i] * d;
      for (let j = 0; j < d; j++) out[i * d + j] = x[i * d + j] - c[c0 + j];
    }
    return out;
  }

  /** Uses a trained codec (from train or a saved index): new, empty lists of its codes. */
  private installCodec(codec: Codec): void {
    this.codec = codec;
    this.deviceLists.reset();
    this.deviceLists = this.backend.createLists(this.dim, this.nlist, { hostCopy: this.options.hostCopy }, codec.format(this.trainedCentroids));
    this.clearLists();
  }

  /**
   * Restores a saved codec (loadIndex; after setCentroids): `tables` as `codecTables` gave them,
   * checked as a file's are (finite, and each list's centroid plus the codes' largest
   * reconstruction within the bound on added vectors: Codec.checkBound). Empties the index.
   */
  async restoreCodec(tables: Float32Array): Promise<void> {
    this.queue.checkOpen('restoreCodec');
    const spec = this.codecSpec;
    if (spec === null) throw new InvalidArgumentError('restoreCodec: this index stores float32 rows; it has no codec');
    const codec = Codec.restore(spec, this.dim, tables);
    return this.queue.mutate(async () => {
      this.requireCentroids('restoreCodec');
      codec.checkBound(this.trainedCentroids);
      this.installCodec(codec);
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
    // Codes of residuals belong to their centroids: a trained codec goes with the old ones (train
    // or restoreCodec installs one again); one that needs no training is installed for the new.
    if (this.codecSpec) {
      this.codec = null;
      const ready = Codec.untrained(this.codecSpec, this.dim);
      if (ready) this.installCodec(ready);
    }
    this.clearLists();
  }

  private clearLists(): void {
    this.deviceLists.reset();
    this.refineRows?.reset();
    this.ids.reset();
  }

  /** The trained centroids (`nlist * dim`), or null before training. */
  get centroids(): Float32Array | null {
    return this.trainedCentroids;
  }

  protected async storeRows(x: Float32Array, n: number): Promise<void> {
    this.requireTrained('add');
    const listOf = await this.assign(x, n);
    const slots = Uint32Array.from({ length: n }, (_, i) => this.ids.nslots + i);
    const mark = this.deviceLists.mark();
    const refineMark = this.refineRows?.mark();
    try {
      await this.addBlock(x, n, listOf, slots);
    } catch (err) {
      this.deviceLists.rollback(mark);
      if (refineMark) this.refineRows!.rollback(refineMark);
      throw err;
    }
  }

  /** Appends `n` prepared rows to lists `listOf` with slots `slots`: float32 rows, or codes of their residuals (and with refine the rows, by slot). */
  private async addBlock(x: Float32Array, n: number, listOf: Uint32Array, slots: Uint32Array): Promise<void> {
    const lists = this.deviceLists;
    if (this.codec) {
      const rows = lists.format.residual ? await this.residuals(x, n, listOf) : x;
      await lists.addEncoded(await this.codec.encode(this.backend, lists.format, rows, n), n, listOf, slots);
    } else await lists.add(x, n, listOf, slots);
    await this.refineRows?.add(x, n);
  }

  /**
   * Appends every row of `source` (a file of any size: see openVectors) to the lists, in two
   * passes: the first assigns each row to its list (the costly part) and keeps only the list
   * numbers; the second reads the rows again into lists sized exactly (no spare room, no growth).
   * Ids continue from ntotal. If it throws, nothing was added. `onProgress` hears of both passes
   * (phase 'assign', then 'add').
   */
  async addFrom(source: VectorSource, options: { onProgress?: RowProgress; ids?: IdList } = {}): Promise<void> {
    this.queue.checkOpen('addFrom');
    checkSource(source, this.dim);
    const given = options.ids === undefined ? undefined : checkIds(options.ids, source.rows);
    return this.queue.mutate(async () => {
      this.requireTrained('addFrom');
      checkIdRoom(this.ids.nslots, source.rows);
      const newIds = this.ids.idsFor(source.rows, given);
      const prepare = (b: Float32Array): Float32Array => prepareOwnRows(this.metric, b, this.dim);
      const checkNorms = this.metric !== 'cosine';
      const n = source.rows;
      const listOf = new Uint32Array(n);
      const counts = new Uint32Array(this.nlist);
      for await (const b of checkedBlocks(source, 'xb', checkNorms, prepare)) {
        const assigned = await this.assign(b.data, b.rows);
        for (let i = 0; i < b.rows; i++) counts[(listOf[b.start + i] = assigned[i])]++;
        options.onProgress?.(b.start + b.rows, n, 'assign');
      }
      const mark = this.deviceLists.mark();
      const refineMark = this.refineRows?.mark();
      const id0 = this.ids.nslots;
      try {
        await this.deviceLists.reserve(counts);
        await this.refineRows?.reserve(n);
        for await (const b of checkedBlocks(source, 'xb', checkNorms, prepare)) {
          const ids = new Uint32Array(b.rows);
          for (let i = 0; i < b.rows; i++) ids[i] = id0 + b.start + i;
          await this.addBlock(b.data, b.rows, listOf.subarray(b.start, b.start + b.rows), ids);
          options.onProgress?.(b.start + b.rows, n, 'add');
        }
      } catch (err) {
        this.deviceLists.rollback(mark);
        if (refineMark) this.refineRows!.rollback(refineMark);
        throw err;
      }
      this.ids.append(newIds, given ? 'caller' : 'sequential');
    });
  }

  /**
   * Where the lists keep half rows (tuning.ivfHalfScan) and the scan reads them, the queries whose
   * candidates the float16 bound does not vouch for are searched again on the float32 rows
   * (src/stores/half-rows.ts): the candidates hold the `need` nearest either way.
   */
  protected async candidates(xq: Float32Array, nq: number, kc: number, masks: Uint32Array[] | null, params: SearchParams, need: number | null): Promise<SlotResult> {
    const coarse = this.requireTrained('search');
    const lists = this.deviceLists;
    const search = (x: Float32Array, n: number, half: boolean) => this.backend.searchIvf(coarse, lists, x, n, kc, params.nprobe!, this.kernelMetric, params.timings, masks, half);
    const cand = await search(xq, nq, need !== null && need < kc);
    if (!cand.halfScores) return cand;
    const { maxNorm, maxError } = lists.half!;
    const again = uncertified(cand, xq, nq, this.dim, lists.dpad, kc, need!, this.kernelMetric, maxNorm, maxError);
    if (again.length > 0) {
      const exact = await search(copyRows(xq, this.dim, again), again.length, false);
      again.forEach((r, i) => {
        cand.distances.set(exact.distances.subarray(i * kc, (i + 1) * kc), r * kc);
        cand.labels.set(exact.labels.subarray(i * kc, (i + 1) * kc), r * kc);
      });
    }
    this.halfScanStats.queries += nq;
    this.halfScanStats.again += again.length;
    return { distances: cand.distances, labels: cand.labels };
  }

  /** Queries a scan on half rows answered, and how many of them it searched again (tuning.ivfHalfScan). */
  readonly halfScanStats = { queries: 0, again: 0 };

  protected rangeCandidates(xq: Float32Array, nq: number, limit: number, rel: number, masks: Uint32Array[] | null, params: SearchParams): Promise<RangeCandidates> {
    const coarse = this.requireTrained('rangeSearch');
    return this.backend.rangeIvf(coarse, this.deviceLists, xq, nq, params.nprobe!, this.kernelMetric, limit, rel, masks, params.maxCandidates);
  }

  protected async rowsAt(slots: ArrayLike<number>): Promise<RowAt> {
    const lists = this.deviceLists;
    const at = await lists.rowsAt(slots);
    if (!lists.format.residual) return at;
    // Codes of residuals: the reconstruction is the list's centroid plus the decoded residual.
    const c = this.trainedCentroids!;
    const d = this.dim;
    return (slot) => {
      const r = at(slot);
      const c0 = lists.listOf(slot) * d;
      const out = new Float32Array(d);
      for (let j = 0; j < d; j++) out[j] = c[c0 + j] + r[j];
      return out;
    };
  }

  protected rowSpace(): RowSpace {
    const lists = this.deviceLists;
    return { chunkRows: lists.chunkRows, chunks: lists.chunks.length, positionOf: (slot) => lists.positionOf(slot) };
  }

  /**
   * New lists holding the live rows, list by list as before; the slots kept are renumbered in
   * their old order (so ids still increase with position in every list where they did).
   */
  protected async compactStore(): Promise<Uint32Array> {
    const { offsets, keep, renumbered, rows } = this.liveLists();
    const lists = this.backend.createLists(this.dim, this.nlist, { hostCopy: this.options.hostCopy }, this.deviceLists.format);
    try {
      await fillLists(lists, offsets, renumbered, rows, this.coded);
      await this.refineRows?.compact(this.ids);
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
  private liveLists(): { offsets: Uint32Array; keep: Uint32Array; renumbered: Uint32Array; rows: AsyncGenerator<Float32Array> } {
    const lists = this.deviceLists;
    const sizes = lists.listSizes();
    const all = lists.listIds();
    const offsets = new Uint32Array(this.nlist + 1);
    // Typed arrays throughout: at 10M vectors a Map or arrays of numbers cost gigabytes.
    const slots = new Uint32Array(this.ntotal);
    let m = 0;
    let p = 0;
    for (let l = 0; l < this.nlist; l++) {
      for (let i = 0; i < sizes[l]; i++, p++) if (!this.ids.isDead(all[p])) slots[m++] = all[p];
      offsets[l + 1] = m;
    }
    const keep = slots.slice().sort();
    const renumber = new Uint32Array(this.ids.nslots);
    keep.forEach((old, s) => (renumber[old] = s));
    const renumbered = slots.map((old) => renumber[old]);
    const width = this.coded ? lists.rowWords : this.dim;
    return { offsets, keep, renumbered, rows: this.ids.liveRows(lists.readRows(this.coded), width, (row) => all[row]) };
  }

  /** Whether the lists hold codes (compaction and save copy them as stored). */
  private get coded(): boolean {
    return this.codecSpec !== null;
  }

  /** The centroids (on the device, and kept on the host), the lists, the codec's tables (as saved). */
  protected override countMemory(tally: MemoryTally): void {
    tally.store(this.coarse);
    tally.array(this.trainedCentroids);
    tally.lists(this.deviceLists);
    for (const a of this.deviceLists.idArrays) tally.array(a);
    tally.array(this.codec?.tables());
    super.countMemory(tally);
  }

  /**
   * The centroids, the live rows' lists in CSR form and their ids, block by block from the host's
   * view of the lists (see IndexCore.savedIndex); nprobe as it is when save or serialize is called.
   */
  protected savedIndex(what: 'save' | 'serialize'): () => Promise<SavedIndex> {
    const nprobe = this.nprobe; // as it is when save is called, like every argument
    return async () => {
      this.requireTrained(what); // its centroids and tables are part of the file
      const centroids = this.trainedCentroids!;
      const { offsets, keep, renumbered, rows } = this.liveLists();
      const live = { ids: Float64Array.from(keep, (s) => this.ids.idOf(s)), nextId: this.ids.savedNextId };
      const tables = this.codec?.tables() ?? null;
      const refine = this.refineRows?.liveRows(this.ids);
      async function* parts(): AsyncGenerator<Float32Array | Uint32Array | BigInt64Array> {
        yield centroids;
        if (tables) yield tables;
        yield offsets;
        yield renumbered;
        yield* rows;
        if (refine) yield* refine;
        yield* idSection(live);
      }
      const type = this.codecSpec ? codecFileType(this.codecSpec, true) : 'IVF';
      const header: IndexFileHeader = { type, metric: this.metric, dim: this.dim, ntotal: this.ntotal, nlist: this.nlist, nprobe, codec: this.codecSpec, refine: this.refine };
      return { header, parts: parts() };
    };
  }

  /**
   * Restores lists as saved (for loadIndex): `offsets` (list L is rows [offsets[L], offsets[L + 1])),
   * each row's id, and the rows as stored (already normalised floats, or codes: `rowWords` words a
   * row), block by block in that order (refine rows follow: restoreRefine). Lists are sized
   * exactly first. If it throws, the index is empty.
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
        await fillLists(this.deviceLists, offsets, ids, xb, this.coded);
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
      this.refineRows?.dispose();
    });
  }

  protected override requireTrained(what: string): BaseStore {
    const coarse = this.requireCentroids(what);
    if (!this.isTrained) throw new InvalidArgumentError(`IvfFlatIndex.${what}: the ${this.codecName} codec is not trained; call train(xt) first`);
    return coarse;
  }

  private requireCentroids(what: string): BaseStore {
    if (!this.coarse) throw new InvalidArgumentError(`IvfFlatIndex.${what}: the index is not trained; call train(xt) first`);
    return this.coarse;
  }
}

/**
 * Fills empty `lists` as saved (see IvfFlatIndex.restoreLists): `offsets` (list L is rows
 * [offsets[L], offsets[L + 1])), each row's id, and the rows (prepared floats, or with `stored`
 * as the lists store them), block by block in that order, in lists sized exactly first.
 */
async function fillLists(lists: DeviceLists, offsets: Uint32Array, ids: Uint32Array, xb: Float32Array | AsyncIterable<Float32Array>, stored: boolean): Promise<void> {
  const d = stored ? lists.rowWords : lists.d;
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
    if (stored) await lists.addEncoded(lists.format.stored(block, n), n, listOf, ids.subarray(at, at + n));
    else await lists.add(block, n, listOf, ids.subarray(at, at + n));
    at += n;
  }
  if (at !== ids.length) throw new InvalidArgumentError(`restoreLists: ${at} rows given for ${ids.length} ids`);
}
