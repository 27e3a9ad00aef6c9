/**
 * IVF-Flat (Faiss's IndexIVFFlat): k-means centroids partition the vectors into `nlist` inverted
 * lists; a search scans only the `nprobe` lists whose centroids are nearest the query, exactly.
 * Written once against `Backend`.
 *
 * Metrics: `l2` assigns vectors and queries to lists by squared L2 to the centroids. `ip` does as
 * Faiss's IndexIVFFlat with an inner-product quantizer: centroids are trained with ordinary (L2)
 * k-means and vectors and queries go to the lists of largest inner product with them (no MIPS-to-L2
 * reduction). `cosine` normalises vectors and queries, then works as `ip`.
 */
import type { Backend, BaseStore } from './backend.js';
import type { KernelMetric } from './kernel-facts.js';
import { IvfLists } from './ivf-lists.js';
import { KMeans, type KMeansInit, type KMeansProgress } from './kmeans.js';
import type { SearchOptions } from './flat-index.js';
import type { Metric, SearchResult } from './types.js';
import { InvalidArgumentError, checkDim, checkK, checkMetric, checkVectors, normalizeRows } from './types.js';
import { writeIndexFile } from './io/index-file.js';

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
}

export interface IvfSearchOptions extends SearchOptions {
  /** Overrides the index's nprobe for this search. */
  nprobe?: number;
}

export class IvfFlatIndex {
  readonly dim: number;
  readonly nlist: number;
  readonly metric: Metric;
  private nprobeValue = 1;
  private coarse: BaseStore | null = null;
  private trainedCentroids: Float32Array | null = null;
  private readonly lists: IvfLists;
  private readonly options: IvfFlatIndexOptions;

  constructor(
    readonly backend: Backend,
    options: IvfFlatIndexOptions,
  ) {
    this.dim = checkDim(options?.dim);
    const nlist = options.nlist;
    if (typeof nlist !== 'number' || !Number.isInteger(nlist) || nlist < 1) {
      throw new InvalidArgumentError(`nlist must be an integer >= 1; got ${String(nlist)}`);
    }
    this.nlist = nlist;
    this.metric = checkMetric(options.metric ?? 'l2');
    this.options = options;
    this.lists = new IvfLists(this.dim, nlist);
    if (options.nprobe !== undefined) this.nprobe = options.nprobe;
  }

  get isTrained(): boolean {
    return this.coarse !== null;
  }

  get ntotal(): number {
    return this.lists.ntotal;
  }

  /** Lists scanned per query, in [1, nlist]. */
  get nprobe(): number {
    return this.nprobeValue;
  }

  set nprobe(value: number) {
    this.nprobeValue = this.checkNprobe(value);
  }

  /** Vectors per list (for balance checks). */
  listSizes(): Uint32Array {
    return this.lists.listSizes();
  }

  private checkNprobe(value: unknown): number {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > this.nlist) {
      throw new InvalidArgumentError(`nprobe must be an integer in [1, ${this.nlist}] (nlist); got ${String(value)}`);
    }
    return value;
  }

  private get kernelMetric(): KernelMetric {
    return this.metric === 'l2' ? 'l2' : 'ip';
  }

  private prepare(x: Float32Array): Float32Array {
    return this.metric === 'cosine' ? normalizeRows(x, this.dim) : x;
  }

  /**
   * Trains the nlist centroids by k-means on `xt` (`n * dim`, n >= nlist). Retraining empties the
   * index. `onProgress` (default: the constructor's onTrainProgress) hears of every iteration.
   */
  async train(xt: Float32Array, options: { onProgress?: (progress: KMeansProgress) => void } = {}): Promise<void> {
    const n = checkVectors(xt, this.dim, 'xt', true);
    if (n < this.nlist) {
      throw new InvalidArgumentError(`IvfFlatIndex.train: nlist = ${this.nlist} needs at least k = ${this.nlist} training points; got ${n}`);
    }
    const kmeans = new KMeans(this.backend, { dim: this.dim });
    const { centroids } = await kmeans.train(this.prepare(xt), {
      k: this.nlist,
      niter: this.options.niter ?? 10,
      seed: this.options.seed ?? 1234,
      init: this.options.init ?? 'random',
      onProgress: options.onProgress ?? this.options.onTrainProgress,
    });
    await this.setCentroids(centroids);
  }

  /**
   * Uses `centroids` (`nlist * dim`, for example from another index's training) instead of
   * training. Empties the index.
   */
  async setCentroids(centroids: Float32Array): Promise<void> {
    const n = checkVectors(centroids, this.dim, 'centroids', false);
    if (n !== this.nlist) throw new InvalidArgumentError(`centroids must hold nlist = ${this.nlist} vectors; got ${n}`);
    const coarse = this.backend.createBaseStore(this.dim);
    await coarse.add(centroids, this.nlist);
    this.trainedCentroids = centroids.slice();
    this.coarse?.dispose();
    this.coarse = coarse;
    this.lists.reset();
  }

  /** The trained centroids (`nlist * dim`), or null before training. */
  get centroids(): Float32Array | null {
    return this.trainedCentroids;
  }

  /** Appends `xb` to the lists of their nearest centroids; ids continue from ntotal. */
  async add(xb: Float32Array): Promise<void> {
    const n = checkVectors(xb, this.dim, 'xb', true);
    const coarse = this.requireTrained('add');
    if (n === 0) return;
    const x = this.prepare(xb);
    const assign = await this.backend.searchFlat(coarse, x, n, 1, this.kernelMetric);
    this.lists.add(x, n, new Uint32Array(assign.labels.buffer, assign.labels.byteOffset, n), this.lists.ntotal);
  }

  /** As FlatIndex.search, over the `nprobe` nearest lists of each query. */
  async search(xq: Float32Array, k: number, options: IvfSearchOptions = {}): Promise<SearchResult> {
    checkK(k, this.backend.maxK);
    const nq = checkVectors(xq, this.dim, 'xq', false);
    const nprobe = options.nprobe === undefined ? this.nprobeValue : this.checkNprobe(options.nprobe);
    const coarse = this.requireTrained('search');
    return this.backend.searchIvf(coarse, this.lists, this.prepare(xq), nq, k, nprobe, this.kernelMetric, options.timings);
  }

  /** Writes the index to `path` (centroids, lists in CSR form, checksum); `loadIndex` reads it. */
  async save(path: string): Promise<void> {
    const centroids = this.trainedCentroids;
    if (!centroids) throw new InvalidArgumentError('IvfFlatIndex.save: the index is not trained; there is nothing to save');
    const csr = this.lists.csr(this.dim);
    writeIndexFile(
      path,
      { type: 'IVF', metric: this.metric, dim: this.dim, ntotal: this.ntotal, nlist: this.nlist, nprobe: this.nprobe },
      [centroids, csr.offsets, csr.ids, csr.xb],
    );
  }

  /** Restores lists from CSR arrays as saved (vectors as stored, ids as given): for loadIndex. */
  restoreLists(offsets: Uint32Array, ids: Uint32Array, xb: Float32Array): void {
    this.requireTrained('restoreLists');
    const listOf = new Uint32Array(ids.length);
    for (let l = 0; l < this.nlist; l++) listOf.fill(l, offsets[l], offsets[l + 1]);
    this.lists.reset();
    this.lists.add(xb, ids.length, listOf, ids);
  }

  /** Removes every vector; the centroids stay trained. */
  reset(): void {
    this.lists.reset();
  }

  dispose(): void {
    this.coarse?.dispose();
    this.coarse = null;
    this.trainedCentroids = null;
    this.lists.reset();
  }

  private requireTrained(what: string): BaseStore {
    if (!this.coarse) throw new InvalidArgumentError(`IvfFlatIndex.${what}: the index is not trained; call train(xt) first`);
    return this.coarse;
  }
}
