/**
 * Exact search: every query is scored against every stored vector (Faiss's IndexFlat).
 * Written once against `Backend`; the backend decides whether the kernels run on the GPU or CPU.
 */
import type { Backend, BaseStore } from './backend.js';
import type { KernelMetric } from './kernel-facts.js';
import type { Metric, SearchResult, SearchTimings } from './types.js';
import { checkDim, checkK, checkMetric, checkVectors, normalizeRows } from './types.js';
import { writeIndexFile } from './io/index-file.js';

export interface FlatIndexOptions {
  dim: number;
  /** Default `l2`. */
  metric?: Metric;
}

export interface SearchOptions {
  /** Filled with the time spent uploading, computing and reading back. */
  timings?: SearchTimings;
}

export class FlatIndex {
  readonly dim: number;
  readonly metric: Metric;
  private readonly store: BaseStore;

  constructor(
    readonly backend: Backend,
    options: FlatIndexOptions,
  ) {
    this.dim = checkDim(options?.dim);
    this.metric = checkMetric(options.metric ?? 'l2');
    this.store = backend.createBaseStore(this.dim);
  }

  /** Number of vectors added so far; their ids are 0 .. ntotal - 1 in the order added. */
  get ntotal(): number {
    return this.store.ntotal;
  }

  private get kernelMetric(): KernelMetric {
    return this.metric === 'l2' ? 'l2' : 'ip';
  }

  /**
   * Appends `xb` (`n * dim` floats, row-major); the vectors get ids ntotal .. ntotal + n - 1.
   * Validates everything first: if it throws, nothing was added.
   */
  async add(xb: Float32Array): Promise<void> {
    const n = checkVectors(xb, this.dim, 'xb', true);
    if (n === 0) return;
    await this.store.add(this.metric === 'cosine' ? normalizeRows(xb, this.dim) : xb, n);
  }

  /**
   * The k nearest stored vectors of each query in `xq` (`nq * dim` floats).
   * Returns `{ distances, labels }`, each `nq * k`, row-major, best first; when fewer than k vectors
   * are stored, rows are padded with label -1 and distance +Infinity (l2) or -Infinity (ip, cosine).
   * Distances: l2 = squared Euclidean; ip = inner product; cosine = cosine similarity.
   */
  async search(xq: Float32Array, k: number, options: SearchOptions = {}): Promise<SearchResult> {
    checkK(k, this.backend.maxK);
    const nq = checkVectors(xq, this.dim, 'xq', false);
    const queries = this.metric === 'cosine' ? normalizeRows(xq, this.dim) : xq;
    return this.backend.searchFlat(this.store, queries, nq, k, this.kernelMetric, options.timings);
  }

  /**
   * Writes the index to `path` (see src/io/index-file.ts): a versioned header, the vectors and a
   * checksum, through a temporary file, so a crash never leaves half an index. `loadIndex` reads it.
   */
  async save(path: string): Promise<void> {
    const xb = await this.store.read();
    writeIndexFile(path, { type: 'Flat', metric: this.metric, dim: this.dim, ntotal: this.ntotal, nlist: 0, nprobe: 0 }, [xb]);
  }

  /** Adds vectors exactly as given (already normalised for cosine): for loading saved indexes. */
  async addPrepared(xb: Float32Array): Promise<void> {
    const n = checkVectors(xb, this.dim, 'xb', true);
    if (n > 0) await this.store.add(xb, n);
  }

  /** Removes every vector (the index stays usable). */
  reset(): void {
    this.store.reset();
  }

  /** Frees the index's device memory. The backend stays open. */
  dispose(): void {
    this.store.dispose();
  }
}
