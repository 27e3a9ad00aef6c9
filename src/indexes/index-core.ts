/**
 * IndexCore: what the indexes share behind VectorIndex (src/indexes/vector-index.ts): ids
 * (src/indexes/ids.ts), the operation queue, filtered search (pre- or post-filter), removal with
 * tombstones and compaction, and range search. A kind's index class (src/indexes/flat,
 * src/indexes/ivf) says only how its store adds, scores, reads and compacts rows.
 */
import type { Backend } from '../backend/backend.js';
import { HEAP_MAX_K, type KernelMetric } from '../kernel-facts.js';
import { IdMap, type IdFilter, type IdList, allowedRows, checkFilter, checkId, checkIds, rowAllowed } from './ids.js';
import { OperationQueue } from './operation-queue.js';
import { RESCORE_MARGIN, candidatesFor, rescore, timedRescore } from './rescore.js';
import type { Metric, RangeSearchResult, SearchResult, SlotResult } from '../types.js';
import { checkK, checkVectors, prepareRows } from '../types.js';
import { type RowProgress, type VectorSource, checkIdRoom } from '../common/vector-source.js';
import { rangeRescore } from './range.js';
import type { RangeCandidates } from '../plans/range-search.js';
import { Codec, type CodecSpec, codecName } from '../codecs/codec.js';
import { type RefineKind, RefineRows, checkRefine } from '../codecs/refine.js';
import { type TransformSpec, checkTransform, parseTransform, TRANSFORM_FORMS } from '../codecs/transforms.js';
import type { RowAt } from '../contracts.js';
import { gatherRows } from '../stores/rows.js';
import { dedupMargin } from '../common/threshold.js';
import type { SearchParams, TrainOptions, VectorIndex } from './vector-index.js';
import { POST_FILTER_MIN_SELECTIVITY } from './vector-index.js';
import type { IndexFileHeader } from '../io/index-format.js';
import { indexBytes } from '../io/index-bytes.js';
import { type MemoryBytes, MemoryTally } from './memory.js';
import { platform } from '../platform/platform.js';
import { InvalidArgumentError } from '../errors.js';

/** What `save` and `serialize` write (see IndexCore.savedIndex). */
export interface SavedIndex {
  header: IndexFileHeader;
  parts: AsyncIterable<Float32Array | Uint32Array | BigInt64Array>;
}

/** The key the live rows' masks are cached under (a search without a filter). */
const LIVE_ROWS = {};

/** Where a store keeps its rows: slot -> storage position (chunk * chunkRows + row) and the chunk geometry. */
export interface RowSpace {
  chunkRows: number;
  chunks: number;
  positionOf: (slot: number) => number;
}

export abstract class IndexCore implements VectorIndex {
  abstract readonly isTrained: boolean;
  protected readonly ids = new IdMap();
  protected readonly queue: OperationQueue;
  /** Row masks made (see rowMasks), by filter object, and for no filter (the live rows) by LIVE_ROWS. */
  private maskCache = new WeakMap<IdFilter | typeof LIVE_ROWS, { version: number; chunks: number; contents: number; masks: Uint32Array[]; allowed: number }>();

  /** The codec's spec, or null for float32 rows. */
  readonly codecSpec: CodecSpec | null;
  /** The transform applied before the store (`Prefix<p>`, `PCA<p>`, `PCAR<p>`), or null. */
  readonly transformSpec: TransformSpec | null;
  /** The refine rows of a re-ranked index (`,RFlat`, `,Refine(SQfp16)`), or null. */
  protected readonly refineRows: RefineRows | null;

  constructor(
    readonly backend: Backend,
    readonly dim: number,
    readonly metric: Metric,
    owner: string,
    /** The index's codec, transform and refine options (see FlatIndexOptions), checked here, and where its stores keep a host copy. */
    coding: { codec?: unknown; refine?: unknown; transform?: unknown; hostCopy?: boolean } = {},
  ) {
    this.queue = new OperationQueue(owner);
    this.transformSpec = checkTransformOption(coding.transform, dim);
    if (this.transformSpec && coding.codec !== undefined) {
      throw new InvalidArgumentError(`a transform (${TRANSFORM_FORMS}) is followed by float32 rows only for now; got codec ${String(coding.codec)}`);
    }
    this.codecSpec = Codec.checkOptions(coding.codec, coding.refine, dim, this.transformSpec !== null);
    const refine = checkRefine(coding.refine);
    this.refineRows = refine ? new RefineRows(backend, dim, coding.hostCopy, refine) : null;
  }

  /** The codec's factory name (SQ8, PQ16, ...), or null for float32 rows. */
  get codecName(): string | null {
    return this.codecSpec && codecName(this.codecSpec);
  }

  /** What re-ranks the codes' candidates (`,RFlat`: Flat; `,Refine(SQfp16)`: SQfp16), or null. */
  get refine(): RefineKind | null {
    return this.refineRows?.kind ?? null;
  }

  /**
   * Restores the refine rows of a loaded index (after its rows): as saved, block by block, one per
   * slot in slot order (see RefineRows.liveRows). If it throws, the index is left to be disposed.
   */
  async restoreRefine(blocks: AsyncIterable<Float32Array>): Promise<void> {
    this.queue.checkOpen('restoreRefine');
    const refine = this.refineRows;
    if (!refine) throw new InvalidArgumentError('restoreRefine: this index keeps no refine rows');
    return this.queue.mutate(async () => {
      await refine.reserve(this.ids.nslots);
      await refine.restore(blocks);
      if (refine.ntotal !== this.ids.nslots) throw new InvalidArgumentError(`restoreRefine: ${refine.ntotal} refine rows for ${this.ids.nslots} vectors`);
    });
  }

  get ntotal(): number {
    return this.ids.ntotal;
  }

  /**
   * Bytes the index holds now (a getter: after the operations that have resolved; see
   * src/indexes/memory.ts): `host`, its typed arrays on the host (rows or codes where the host
   * holds them: the CPU backend's stores, a WebGPU store's host copy; ids; tables; lists' ids;
   * the graph), and `device`, its GPU buffers (0 on the CPU backend). Counted from the arrays and
   * buffers themselves, as allocated (a store's spare capacity included).
   */
  get memoryBytes(): MemoryBytes {
    const tally = new MemoryTally(this.backend.device);
    this.countMemory(tally);
    return tally.bytes;
  }

  /** Hands `tally` every array and buffer the index holds (a kind adds its own, then calls this). */
  protected countMemory(tally: MemoryTally): void {
    for (const a of this.ids.arrays) tally.array(a);
    tally.store(this.refineRows?.rowStore);
  }

  protected get kernelMetric(): KernelMetric {
    return this.metric === 'l2' ? 'l2' : 'ip';
  }

  /**
   * What a re-score of rows computes: the index's metric, except where the rows are
   * reconstructions of normalised vectors (codes, or SQfp16 refine rows), whose norms are not 1:
   * there cosine is the inner product of the normalised query with the reconstruction, as Faiss
   * ranks normalised data with an inner-product quantiser, and as the kernels rank the candidates.
   * (A transform's rows are re-normalised for cosine: they are re-scored by cosine, in its space;
   * see ownQueries.) `own`: the index's own rows (rowsAt), else the final re-score's (finalRows).
   */
  private scoreMetric(own: boolean): Metric {
    const approximate = own || this.refine === null ? this.codecSpec !== null : this.refine === 'SQfp16';
    return approximate && this.metric === 'cosine' ? 'ip' : this.metric;
  }

  /**
   * The queries (prepared, `nq * dim`) in the space of the rows `rowsAt` returns, and their dim:
   * here, as given; a transformed index compares its p-dim rows with transformed queries, an LSH
   * its reconstructions with rotated ones.
   */
  protected ownQueries(xq: Float32Array, _nq: number): { queries: Float32Array; dim: number } {
    return { queries: xq, dim: this.dim };
  }

  /**
   * What the final re-score compares (the rows of the slots it is given, the queries in their
   * space, the metric): the refine rows and the queries as prepared where there are refine rows,
   * else the index's own rows (rowsAt, ownQueries).
   */
  private async finalRows(queries: Float32Array, nq: number, slots: ArrayLike<number>): Promise<{ rowAt: RowAt; queries: Float32Array; dim: number; metric: Metric }> {
    const metric = this.scoreMetric(false);
    if (this.refineRows) return { rowAt: await this.refineRows.rowsAt(slots), queries, dim: this.dim, metric };
    return { rowAt: await this.rowsAt(slots), ...this.ownQueries(queries, nq), metric };
  }

  /**
   * How a search turns the kernels' candidates into k results, for `kr` = rerankCount(k, kFactor):
   *   - an index with a re-rank (refine rows; LSH, whose Hamming order is not its reconstructions')
   *     re-scores exactly kr candidates against it, the kr best by its codes' own order. Hamming
   *     scores are integers, the same on every device, and the kernels break their ties on the
   *     smaller slot: the kernels' first kr are those (`kc` = kr). Other codes are scored in
   *     float32, rounded differently on each device: the kernels give candidatesFor(kr) (the
   *     RESCORE_MARGIN, for that rounding alone), re-scored in float64 against the codes'
   *     reconstructions, and the kr best of those by (score, id) are re-ranked. So the margin buys
   *     the codes' exact order, identical on every backend, and the re-rank reads kr rows, as
   *     Faiss's IndexRefine (whose k_factor candidates are ordered by float32 distances).
   *   - any other index re-scores candidatesFor(kr) against the rows the kernels scored and keeps
   *     the k best: kFactor only widens the margin.
   * `need`: how many of the nearest the candidates must hold (what the first re-score keeps).
   */
  private candidatePlan(k: number, kr: number): { kc: number; need: number } {
    const maxK = this.backend.maxK;
    if (this.exactCodeOrder) return { kc: Math.min(kr, maxK), need: Math.min(kr, maxK) };
    return { kc: candidatesFor(kr, maxK), need: this.reranks ? kr : k };
  }

  /** Whether the final re-score compares other rows than those the kernels score (see candidatePlan). */
  private get reranks(): boolean {
    return this.refineRows !== null || this.exactCodeOrder;
  }

  /** Whether the kernels' scores are exact (LSH's Hamming distances), so their order needs no re-score. */
  private get exactCodeOrder(): boolean {
    return this.codecSpec?.type === 'LSH';
  }

  abstract train(xt: Float32Array | VectorSource, options?: TrainOptions): Promise<void>;
  abstract addFrom(source: VectorSource, options?: { onProgress?: RowProgress; ids?: IdList }): Promise<void>;
  abstract reset(): Promise<void>;
  abstract dispose(): Promise<void>;

  /**
   * What `save` and `serialize` write: the header and the arrays in file order (see
   * src/io/index-file.ts). Called when they are (an argument such as IVF's nprobe is read then);
   * the function it returns runs in the queue as a search does, so the index does not change while
   * its parts are read. `what` names the call in errors (an untrained index is refused).
   */
  protected abstract savedIndex(what: 'save' | 'serialize'): () => Promise<SavedIndex>;

  /**
   * Writes the index to `path` (see src/io/index-file.ts): a versioned header, the live vectors,
   * their ids and a checksum, through a temporary file, so a crash never leaves half an index.
   * `loadIndex` reads it. It saves the index as it is after every operation called before it,
   * block by block from the host copy (or the CPU's memory; without a host copy, read back from
   * the device). Node only (the browser build has no files: `serialize` there).
   */
  async save(path: string, options: { onProgress?: (bytesDone: number, bytesTotal: number) => void } = {}): Promise<void> {
    this.queue.checkOpen('save');
    const saved = this.savedIndex('save');
    return this.queue.search(async () => {
      const { header, parts } = await saved();
      await platform.writeIndexFile(path, header, parts, options.onProgress);
    });
  }

  /**
   * The bytes `save` would write to a file, in one Uint8Array (the same format, made by the same
   * writer: src/io/index-stream.ts), for a page to keep in IndexedDB or OPFS, or to send;
   * `deserializeIndex` reads them back. As `save`, the index as it is after every operation called
   * before it. The array holds the whole index: for one larger than memory allows, `save`.
   */
  async serialize(options: { onProgress?: (bytesDone: number, bytesTotal: number) => void } = {}): Promise<Uint8Array> {
    this.queue.checkOpen('serialize');
    const saved = this.savedIndex('serialize');
    return this.queue.search(async () => {
      const { header, parts } = await saved();
      return indexBytes(header, parts, options.onProgress);
    });
  }

  /** Stores `n` prepared rows whose slots are ids.nslots onwards; if it throws, nothing was stored. */
  protected abstract storeRows(x: Float32Array, n: number): Promise<void>;
  /**
   * The k (kc) best slots of each query, over the rows `masks` allow (null: all stored rows): any
   * kc that hold the `need` nearest (the re-score keeps `need` of them), or where `need` is null
   * the kc first in the kernels' order (a post-filter reads them so).
   */
  protected abstract candidates(xq: Float32Array, nq: number, kc: number, masks: Uint32Array[] | null, params: SearchParams, need: number | null): Promise<SlotResult>;
  /** Range-search candidates (a superset of the rows within `limit` on the minimised score). */
  protected abstract rangeCandidates(xq: Float32Array, nq: number, limit: number, rel: number, masks: Uint32Array[] | null, params: SearchParams): Promise<RangeCandidates>;
  /** The index's own stored rows of these slots, as floats (codes: their reconstructions; see BaseStore.rowsAt), in ownQueries' space. */
  protected abstract rowsAt(slots: ArrayLike<number>): Promise<RowAt>;
  protected abstract rowSpace(): RowSpace;
  /** Drops the dead rows from the store; returns the old slots of the rows kept, in their new slot order. */
  protected abstract compactStore(): Promise<ArrayLike<number>>;
  /** Checks search params beyond the filter (IVF: nprobe); returns them with defaults filled. */
  protected checkParams(params: SearchParams): SearchParams {
    return params;
  }

  async add(xb: Float32Array): Promise<void> {
    this.queue.checkOpen('add');
    return this.addRows(xb, undefined);
  }

  async addWithIds(xb: Float32Array, ids: IdList): Promise<void> {
    this.queue.checkOpen('addWithIds');
    const n = checkVectors(xb, this.dim, 'xb', true, this.metric !== 'cosine');
    return this.addRows(xb, checkIds(ids, n));
  }

  private async addRows(xb: Float32Array, given: Float64Array | undefined): Promise<void> {
    const n = checkVectors(xb, this.dim, 'xb', true, this.metric !== 'cosine');
    const x = prepareRows(this.metric, xb, this.dim);
    return this.queue.mutate(async () => {
      this.requireTrained('add');
      checkIdRoom(this.ids.nslots, n);
      const ids = this.ids.idsFor(n, given);
      if (n === 0) return;
      await this.storeRows(x, n);
      this.ids.append(ids, given ? 'caller' : 'sequential');
    });
  }

  /** Throws unless the index can take vectors (IVF before training). */
  protected requireTrained(_what: string): void {}

  async removeIds(ids: IdList): Promise<number> {
    this.queue.checkOpen('removeIds');
    const list = checkIds(ids, ids?.length ?? 0, 'ids', false);
    return this.queue.mutate(async () => {
      const removed = this.ids.remove(list);
      if (this.ids.shouldCompact()) await this.compactNow();
      return removed;
    });
  }

  contains(id: number | bigint): boolean {
    return this.ids.slotOf(checkId(id)) >= 0;
  }

  async reconstruct(ids: IdList): Promise<Float32Array> {
    this.queue.checkOpen('reconstruct');
    const list = checkIds(ids, (ids as ArrayLike<unknown> | null)?.length ?? 0, 'ids', false);
    if (this.transformSpec && !this.refineRows) {
      throw new InvalidArgumentError(`reconstruct: this index stores its rows transformed (${this.transformSpec.kind}${this.transformSpec.p}) without the full rows; add a refine (",RFlat") to keep them`);
    }
    return this.queue.search(async () => {
      const slots = Array.from(list, (id, i) => {
        const slot = this.ids.slotOf(id);
        if (slot < 0) throw new InvalidArgumentError(`reconstruct: ids[${i}] = ${id} is not in the index`);
        return slot;
      });
      const rowAt = this.refineRows ? await this.refineRows.rowsAt(slots) : await this.rowsAt(slots);
      return gatherRows(rowAt, slots, this.dim);
    });
  }

  /**
   * Drops removed vectors from the store now (removeIds does so once COMPACT_DEAD_FRACTION of the
   * slots are dead), so that searches no longer mask them. Ids do not change.
   */
  async compact(): Promise<void> {
    this.queue.checkOpen('compact');
    return this.queue.mutate(async () => {
      if (this.ids.ndead > 0) await this.compactNow();
    });
  }

  private async compactNow(): Promise<void> {
    const order = await this.compactStore();
    this.ids.compact(order);
  }

  /** Restores the ids of a loaded index (slot s has id ids[s]; nextId -1 for caller ids). */
  async restoreIds(ids: Float64Array, nextId: number, what: string): Promise<void> {
    this.queue.checkOpen('restoreIds');
    return this.queue.mutate(async () => {
      if (ids.length !== this.ids.nslots) throw new InvalidArgumentError(`${what}: ${ids.length} ids for ${this.ids.nslots} vectors`);
      this.ids.restore(ids, nextId, what);
    });
  }

  /** Removed vectors not yet compacted away. */
  get ndead(): number {
    return this.ids.ndead;
  }

  /**
   * The k nearest stored vectors of each query in `xq` (`nq * dim` floats), after every operation
   * called before it, as SearchResult says, labels being ids; with `params.filter`, the k nearest
   * allowed ones. The final candidates are re-scored exactly (src/indexes/rescore.ts), so the order is the
   * same on every backend and a stored vector is at distance 0 from itself.
   */
  async search(xq: Float32Array, k: number, params: SearchParams = {}): Promise<SearchResult> {
    this.queue.checkOpen('search');
    checkK(k, this.backend.maxK);
    const nq = checkVectors(xq, this.dim, 'xq', false, this.metric !== 'cosine');
    const p = this.checkParams(params ?? {});
    if (p.kFactor !== undefined) checkKFactor(p.kFactor);
    const filter = p.filter === undefined ? undefined : checkFilter(p.filter);
    const mode = p.filterMode ?? 'auto';
    if (!['auto', 'pre', 'post'].includes(mode)) throw new InvalidArgumentError(`filterMode must be auto, pre or post; got ${String(mode)}`);
    const queries = prepareRows(this.metric, xq, this.dim);
    return this.queue.search(async () => {
      const res = filter === undefined ? await this.searchMasked(queries, nq, k, this.tombstones(), p) : await this.searchFiltered(queries, nq, k, filter, mode, p);
      const out: SearchResult = { distances: res.distances, labels: this.ids.toIds(res.labels) };
      if (p.exactScores) out.scores = res.scores;
      return out;
    });
  }

  /** Candidates for k among the rows `masks` allow (null: all stored rows), re-scored (see candidatePlan). */
  private async searchMasked(queries: Float32Array, nq: number, k: number, masks: Uint32Array[] | null, p: SearchParams): Promise<SlotResult> {
    const kr = rerankCount(k, p.kFactor, this.ntotal);
    const { kc, need } = this.candidatePlan(k, kr);
    const cand = await this.candidates(queries, nq, kc, masks, p, need);
    return this.rescored(queries, nq, cand, kc, k, kr, p);
  }

  /**
   * The k results of `kc` candidates a query (-1: none), as candidatePlan says: with a re-rank, the
   * kr best by the codes' own order (LSH: the first kr in the kernels' order) re-scored against
   * it; else all re-scored against the rows the kernels scored. With `p.exactScores`, with the
   * float64 scores too.
   */
  private async rescored(queries: Float32Array, nq: number, cand: SlotResult, kc: number, k: number, kr: number, p: SearchParams): Promise<SlotResult> {
    return timedRescore(p.timings, async () => {
      let shortlist = cand;
      let width = kc;
      if (this.reranks && kc > kr) {
        if (this.exactCodeOrder) shortlist = { distances: new Float32Array(0), labels: firstPerRow(cand.labels, nq, kc, kr) }; // rescore reads labels only
        else {
          const own = this.ownQueries(queries, nq);
          shortlist = rescore(this.scoreMetric(true), own.queries, nq, own.dim, cand, kc, kr, await this.rowsAt(cand.labels), this.tieKey());
        }
        width = kr;
      }
      const f = await this.finalRows(queries, nq, shortlist.labels);
      return rescore(f.metric, f.queries, nq, f.dim, shortlist, width, k, f.rowAt, this.tieKey(), p.exactScores);
    });
  }

  private async searchFiltered(queries: Float32Array, nq: number, k: number, filter: IdFilter, mode: 'auto' | 'pre' | 'post', p: SearchParams): Promise<SlotResult> {
    const space = this.rowSpace();
    const { masks, allowed } = this.rowMasks(filter, space);
    const selectivity = allowed / Math.max(1, this.ntotal);
    const kr = rerankCount(k, p.kFactor, this.ntotal);
    // Allowed candidates a row must keep to stand for a pre-filtered search's.
    const room = this.exactCodeOrder ? kr : kr + RESCORE_MARGIN;
    const kPost = postFilterK(kr, selectivity, this.backend.maxK);
    const post = kPost <= Math.min(HEAP_MAX_K, this.backend.maxK) && (mode === 'post' || (mode === 'auto' && selectivity >= POST_FILTER_MIN_SELECTIVITY));
    if (!post) return this.searchMasked(queries, nq, k, masks, p);
    // Post-filter: more candidates over the live rows, the disallowed dropped.
    const cand = await this.candidates(queries, nq, kPost, this.tombstones(), p, null);
    const isAllowed = (slot: number): boolean => rowAllowed(masks, space.chunkRows, space.positionOf(slot));
    const short: number[] = [];
    for (let r = 0; r < nq; r++) {
      let kept = 0;
      const full = cand.labels[(r + 1) * kPost - 1] >= 0;
      for (let j = r * kPost; j < (r + 1) * kPost; j++) {
        if (cand.labels[j] < 0) continue;
        if (isAllowed(cand.labels[j])) kept++;
        else cand.labels[j] = -1;
      }
      // A full list may have cut allowed vectors: too few kept, and the row is searched again.
      if (full && kept < Math.min(room, allowed)) short.push(r);
    }
    const res = await this.rescored(queries, nq, cand, kPost, k, kr, p);
    if (short.length > 0) {
      const d = this.dim;
      const again = new Float32Array(short.length * d);
      short.forEach((r, i) => again.set(queries.subarray(r * d, (r + 1) * d), i * d));
      const pre = await this.searchMasked(again, short.length, k, masks, { ...p, timings: undefined });
      short.forEach((r, i) => {
        res.labels.set(pre.labels.subarray(i * k, (i + 1) * k), r * k);
        res.distances.set(pre.distances.subarray(i * k, (i + 1) * k), r * k);
        if (res.scores && pre.scores) res.scores.set(pre.scores.subarray(i * k, (i + 1) * k), r * k);
      });
    }
    return res;
  }

  /**
   * The rows `filter` allows (see allowedRows; no filter: the live rows), cached per filter object
   * until the index changes: a filter passed to many searches (batches of one job, the scheduler's
   * requests) is turned into a bitmap once. An id array's contents are checked too (a hash of its
   * words): one changed in place is read again. A predicate is taken to answer the same for the
   * same id meanwhile.
   */
  private rowMasks(filter: IdFilter | undefined, space: RowSpace): { masks: Uint32Array[]; allowed: number } {
    const key = filter ?? LIVE_ROWS;
    const c = this.maskCache.get(key);
    const contents = filter instanceof BigInt64Array ? wordHash(filter) : 0;
    if (c && c.version === this.ids.version && c.chunks === space.chunks && c.contents === contents) return c;
    const made = { ...allowedRows(this.ids, filter, space.chunkRows, space.chunks, space.positionOf), version: this.ids.version, chunks: space.chunks, contents };
    this.maskCache.set(key, made);
    return made;
  }

  /** Exact ties go to the smaller id (README): slots increase with sequential ids, not with caller ids. */
  private tieKey(): ((slot: number) => number) | undefined {
    const ids = this.ids;
    return ids.kind === 'caller' ? (slot) => ids.idOf(slot) : undefined;
  }

  /** The live rows' masks while some rows are dead, else null (every stored row is live). */
  private tombstones(): Uint32Array[] | null {
    return this.ids.ndead === 0 ? null : this.rowMasks(undefined, this.rowSpace()).masks;
  }

  /**
   * Every stored vector within `radius` of each query (l2: squared distance <= radius; ip: inner
   * product >= radius; cosine: cosine similarity >= radius), with `params.filter` only allowed ones,
   * in Faiss's layout (RangeSearchResult). Candidates come from the device with a margin over the
   * float32 rounding; each is re-scored exactly in float64 and kept by the exact test.
   */
  async rangeSearch(xq: Float32Array, radius: number, params: SearchParams = {}): Promise<RangeSearchResult> {
    this.queue.checkOpen('rangeSearch');
    // The device compares float32 scores with the radius plus a margin: both must stay finite.
    if (typeof radius !== 'number' || !(Math.abs(radius) <= MAX_RADIUS)) {
      throw new InvalidArgumentError(`radius must be a number in [-${MAX_RADIUS}, ${MAX_RADIUS}] (float32 range, with room for the rounding margin); got ${String(radius)}`);
    }
    const nq = checkVectors(xq, this.dim, 'xq', false, this.metric !== 'cosine');
    const p = this.checkParams(params ?? {});
    const filter = p.filter === undefined ? undefined : checkFilter(p.filter);
    if (p.maxCandidates !== undefined && !(Number.isInteger(p.maxCandidates) && p.maxCandidates >= 0)) {
      throw new InvalidArgumentError(`maxCandidates must be an integer >= 0; got ${String(p.maxCandidates)}`);
    }
    const queries = prepareRows(this.metric, xq, this.dim);
    return this.queue.search(async () => {
      const masks = filter === undefined ? this.tombstones() : this.rowMasks(filter, this.rowSpace()).masks;
      const limit = this.metric === 'l2' ? radius : -radius;
      const cand = await this.rangeCandidates(queries, nq, limit, dedupMargin(this.dim), masks, p);
      const f = await this.finalRows(queries, nq, cand.ids);
      const res = rangeRescore(f.metric, f.queries, nq, f.dim, cand, f.rowAt, radius, this.tieKey());
      return { lims: res.lims, distances: res.distances, labels: this.ids.toIds(res.labels) };
    });
  }
}

/** An index's `transform` option (a factory component such as `PCAR64`), checked for `dim`: its spec, or null. */
function checkTransformOption(transform: unknown, dim: number): TransformSpec | null {
  if (transform === undefined) return null;
  const spec = typeof transform === 'string' ? parseTransform(transform) : null;
  if (spec === null) throw new InvalidArgumentError(`transform must be one of ${TRANSFORM_FORMS}; got ${String(transform)}`);
  return checkTransform(spec, dim);
}

/**
 * Candidates re-ranked for k results: k x kFactor rounded down (Faiss's IndexRefine takes
 * idx_t(k * k_factor)), at least k; k without a kFactor. Never more than the `ntotal` vectors
 * held (beyond them there are no candidates, only padding: a kFactor of 1e6 would otherwise size
 * every query's candidate lists by it, 10 GB for 500 queries on the CPU backend).
 */
export function rerankCount(k: number, kFactor: number | undefined, ntotal: number): number {
  return Math.max(k, Math.min(Math.floor(k * (kFactor ?? 1)), ntotal));
}

/** Each row's first `keep` labels that are not -1 (of `kc` a row, in their order), padded with -1: rows of `keep`. */
function firstPerRow(labels: Int32Array, nq: number, kc: number, keep: number): Int32Array {
  const out = new Int32Array(nq * keep).fill(-1);
  for (let r = 0; r < nq; r++) {
    let m = 0;
    for (let j = r * kc; j < (r + 1) * kc && m < keep; j++) if (labels[j] >= 0) out[r * keep + m++] = labels[j];
  }
  return out;
}

/** Throws unless `kFactor` is a finite number >= 1. */
export function checkKFactor(kFactor: unknown): number {
  if (typeof kFactor !== 'number' || !(kFactor >= 1) || !Number.isFinite(kFactor)) {
    throw new InvalidArgumentError(`kFactor must be a finite number >= 1; got ${String(kFactor)}`);
  }
  return kFactor;
}

/** Largest |radius| a range search takes (float32's range is 3.4e38; the margin needs room above it). */
export const MAX_RADIUS = 1e38;

/** Candidates a post-filter asks for, to keep k + RESCORE_MARGIN allowed ones at `selectivity` with room to spare (k: the candidates re-ranked, rerankCount). */
export function postFilterK(k: number, selectivity: number, maxK: number): number {
  if (selectivity <= 0) return maxK + 1;
  const want = Math.ceil((1.5 * (k + RESCORE_MARGIN)) / selectivity);
  return want > maxK ? maxK + 1 : candidatesFor(want, maxK);
}

/** A 32-bit FNV-1a hash of the words of `a` and its length (to notice an array changed in place). */
function wordHash(a: BigInt64Array): number {
  const w = new Uint32Array(a.buffer, a.byteOffset, a.length * 2);
  let h = 0x811c9dc5 ^ a.length;
  for (let i = 0; i < w.length; i++) h = Math.imul(h ^ w[i], 0x01000193);
  return h >>> 0;
}
