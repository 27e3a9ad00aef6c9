/**
 * A backend: one device (src/device.ts) and the plans (src/plans) that run on it. Indexes, jobs and
 * the scheduler are written once against `Backend`; choosing the GPU or the CPU is a constructor
 * argument (see create-backend.ts), never a code path: both run the same plans, the GPU device
 * as WGSL dispatches, the CPU device as the kernels' twins.
 */

import type { Device } from '../device.js';
import type { KernelMetric } from '../kernel-facts.js';
import { DeviceKMeans } from '../plans/kmeans-step.js';
import { searchFlat } from '../plans/flat-search.js';
import { searchIvf } from '../plans/ivf-search.js';
import { type RangeCandidates, rangeFlat, rangeIvf } from '../plans/range-search.js';
import { selfJoinCandidates } from '../plans/self-join.js';
import { CodeStore } from '../stores/code-store.js';
import { DeviceLists } from '../stores/inverted-lists.js';

import { type SlotResult, type SearchTimings } from '../types.js';

export type { DeviceKind as BackendKind } from '../device.js';
import type { BaseStore, BaseStoreOptions, Compute, KMeansWorkspace, ListStore, RowFormat, SelfJoinOptions } from '../contracts.js';
import { InvalidArgumentError } from '../errors.js';

export class Backend implements Compute {
  constructor(readonly device: Device) {}

  get kind(): Device['kind'] {
    return this.device.kind;
  }

  /** One line: backend, and for WebGPU the adapter (vendor, architecture, device). */
  get description(): string {
    return this.device.description;
  }

  /** Largest k (and nprobe) that searches accept. */
  get maxK(): number {
    return this.device.limits.maxK;
  }

  /** The binding limit in force: the device's own, or lower (BackendOptions.maxBindingBytes). */
  get maxBindingBytes(): number {
    return this.device.limits.maxBindingBytes;
  }

  /** A store of `d`-dimensional rows, as float32 rows or in another format (codes: see src/stores/row-format.ts). */
  createBaseStore(d: number, options?: BaseStoreOptions, format?: RowFormat): CodeStore {
    return new CodeStore(this.device, d, options, format);
  }

  /** Inverted lists on the device, for IVF indexes (`hostCopy` as for base stores). */
  createLists(d: number, nlist: number, options?: BaseStoreOptions, format?: RowFormat): DeviceLists {
    return new DeviceLists(this.device, d, nlist, options, format);
  }

  /**
   * Exact k-NN of `nq` queries (`xq`, `nq * d`) against every vector in `store` (with `masks`, one
   * bitmap per chunk, every vector they allow: see src/indexes/ids.ts allowedRows).
   * Returns distances (l2: squared Euclidean, clamped at 0; ip: inner product) and labels, each
   * `nq * k`, best first, padded with -1 and +-Infinity.
   */
  async searchFlat(
    store: BaseStore,
    xq: Float32Array,
    nq: number,
    k: number,
    metric: KernelMetric,
    timings?: SearchTimings,
    masks: Uint32Array[] | null = null,
  ): Promise<SlotResult> {
    this.checkK('k', k);
    return this.timed(timings, () => searchFlat(this.device, store, xq, nq, k, metric, timings, masks));
  }

  /**
   * IVF search: the `nprobe` lists nearest each query (a flat search of `coarse`, the centroids,
   * with the same metric), scanned for the k best. Results as for `searchFlat`. With `half`, a scan
   * reads the lists' half rows where they have them, and the result says so (`halfScores`): its
   * candidates are then to be checked (src/stores/half-rows.ts, `uncertified`).
   */
  async searchIvf(
    coarse: BaseStore,
    lists: ListStore,
    xq: Float32Array,
    nq: number,
    k: number,
    nprobe: number,
    metric: KernelMetric,
    timings?: SearchTimings,
    masks: Uint32Array[] | null = null,
    half = false,
  ): Promise<SlotResult> {
    this.checkK('k', k);
    this.checkK('nprobe', nprobe);
    return this.timed(timings, () => searchIvf(this.device, coarse, lists, xq, nq, k, nprobe, metric, timings, masks, half));
  }

  /**
   * Range search's candidates: for each of the `nq` queries (`xq`, `nq * d`; for cosine normalised,
   * with metric 'ip'), every row of `store` whose float32 minimised score (l2: squared distance;
   * ip: -dot) is at most `limit` plus the margin `rel * (||q||^2 + ||x||^2)` (rel as the self-join
   * takes it: dedupMargin), skipping rows that `masks` (one per chunk, as for searchFlat; null:
   * none) do not allow. More than `maxCandidates` (default DEFAULT_MAX_CANDIDATES) in all fail. A superset of the exact results: rangeRescore (src/indexes/range.ts)
   * cuts them exactly. Ids are positions; each query's ascending, no duplicates.
   */
  async rangeFlat(
    store: BaseStore,
    xq: Float32Array,
    nq: number,
    metric: KernelMetric,
    limit: number,
    rel: number,
    masks: Uint32Array[] | null,
    maxCandidates?: number,
  ): Promise<RangeCandidates> {
    return rangeFlat(this.device, store, xq, nq, metric, limit, rel, masks, maxCandidates);
  }

  /**
   * Range search's candidates in the `nprobe` lists nearest each query (a flat search of `coarse`,
   * the centroids, with the same metric); ids are those stored with the rows, `masks` one per
   * chunk of the lists. Otherwise as `rangeFlat`.
   */
  async rangeIvf(
    coarse: BaseStore,
    lists: ListStore,
    xq: Float32Array,
    nq: number,
    nprobe: number,
    metric: KernelMetric,
    limit: number,
    rel: number,
    masks: Uint32Array[] | null,
    maxCandidates?: number,
  ): Promise<RangeCandidates> {
    this.checkK('nprobe', nprobe);
    return rangeIvf(this.device, coarse, lists, xq, nq, nprobe, metric, limit, rel, masks, maxCandidates);
  }

  /**
   * The candidate pairs (i < j) of the self-join of `store`: every pair whose float32 minimised
   * score (l2: squared distance; ip: -dot) is at most `limit` plus the margin
   * `rel * (||x_i||^2 + ||x_j||^2)`, which exceeds the expansion's rounding, so no true pair is
   * missed (see shaders/pairs-threshold.wgsl).
   *
   * The pairs are streamed, never gathered: rows are joined in tiles, in ascending row order, and
   * `options.onPairs(block, rowsDone)` is called once per row tile (also when it has no pairs) with
   * that tile's pairs [i0, j0, i1, j1, ...] sorted by (i, j); every i of a block is below every i of
   * the next, so the blocks in call order are the whole join sorted by (i, j). `rowsDone` is the
   * number of rows finished (n after the last call). A block is valid only during the call: copy
   * what you keep. If `onPairs` throws, the join stops, frees its scratch memory and rejects with
   * that error.
   *
   * More than `options.maxCandidates` pairs in all (default DEFAULT_MAX_CANDIDATES, src/common/pairs.ts)
   * rejects with an InvalidArgumentError (see tooManyCandidates) as soon as a tile crosses the bound,
   * before that tile's pairs are handed on. Resolves to the number of candidate pairs.
   */
  selfJoinCandidates(store: BaseStore, metric: KernelMetric, limit: number, rel: number, options: SelfJoinOptions): Promise<number> {
    return selfJoinCandidates(this.device, store, metric, limit, rel, options);
  }

  /**
   * Holds `n` points (`x`, `n * d`, validated) and `nc` centroids for k-means iterations. With
   * bounds (tuning.kmeansBounds) the workspace reads `x` on every iteration: it must not change
   * until the workspace is disposed.
   */
  createKMeansWorkspace(x: Float32Array, n: number, d: number, nc: number): Promise<KMeansWorkspace> {
    return DeviceKMeans.create(this.device, x, n, d, nc);
  }

  /** Releases the device; for WebGPU this is what lets the process exit. */
  dispose(): void {
    this.device.dispose();
  }

  private checkK(name: string, v: number): void {
    if (v > this.maxK) throw new InvalidArgumentError(`${name} must be an integer in [1, ${this.maxK}] on the ${this.kind} backend; got ${v}`);
  }

  /** Runs a search with its timings zeroed (the plan and the device fill them). */
  private async timed(timings: SearchTimings | undefined, run: () => Promise<SlotResult>): Promise<SlotResult> {
    if (timings) Object.assign(timings, { uploadMs: 0, computeMs: 0, readbackMs: 0, kernelMs: undefined });
    return run();
  }
}
