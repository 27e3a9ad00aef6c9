/**
 * A CAGRA graph index (Ootomo et al., arXiv 2308.15136; cuVS's cagra): float32 rows, as FlatIndex
 * stores them, and a graph of `degree` out-edges a row, built from them:
 *   1. the intermediate graph: each row's `intermediateDegree` nearest rows (the row itself left
 *      out), by the exact flat search of the rows against themselves or, for many rows, an IVF
 *      search of them (./intermediate.ts);
 *   2. rank-based pruning (cagra-prune) and the reverse edges merged in (src/plans/graph-build.ts).
 * A search walks the graph from seeded entry points (graph-search, one workgroup a query) and
 * hands the walk's best `candidates` to the exact re-score, as every index does. The graph is
 * built when a search (or save) first needs it after the rows changed, so an add costs nothing
 * until then and a build takes the whole index at once. Rows added to a built graph extend it
 * (cuVS's extend; see `extend`) rather than rebuild it, while they are at most
 * GRAPH_EXTEND_MAX_GROWTH of the rows it holds; `rebuildGraph` builds it anew. A filter, or removed rows awaiting
 * compaction, are read by the walk (it passes through the rows they disallow and never returns
 * them) where at least GRAPH_FILTER_MIN_SELECTIVITY of the rows are allowed; below that, and where
 * the walk could not hold the candidates, the search is the exact pre-filtered scan of FlatIndex.
 * Everything runs on either backend; the CPU walks the graph with the kernels' twins.
 */
import type { Backend } from '../../backend/backend.js';
import { rng } from '../../common/random.js';
import { InvalidArgumentError } from '../../errors.js';
import { type IndexFileHeader, idSection } from '../../io/index-format.js';
import type { SavedIndex } from '../index-core.js';
import type { MemoryTally } from '../memory.js';
import { buildGraphRows, checkGraphFits, pruneRows } from '../../plans/graph-build.js';
import { type DeviceGraph, type HalfRows, type WalkOptions, searchGraph } from '../../plans/graph-search.js';
import type { Metric, SearchResult, SlotResult } from '../../types.js';
import { FlatIndex } from '../flat/flat-index.js';
import type { SearchParams } from '../vector-index.js';
import { CAGRA_MAX_DEGREE, CAGRA_MAX_KIN, PAD_ID } from '../../kernel-facts.js';
import {
  type Device,
  type DeviceBuffer,
  GRAPH_SEARCH_MAX_CANDIDATES,
  GRAPH_SEARCH_MAX_HASH_BITS,
  GRAPH_SEARCH_MAX_ITOPK,
  GRAPH_SEARCH_MAX_WIDTH,
  halfRowWords,
} from '../../device.js';
import { popcount } from '../../cpu/hamming-scores.js';
import { padSlots } from '../../common/results.js';
import {
  type GraphBuildProgress,
  type GraphBuildReport,
  type IntermediateGraph,
  type IntermediateGraphInfo,
  checkIntermediateGraph,
  intermediateGraph,
  intermediatePlan,
} from './intermediate.js';
import { halfRowsWithNorms } from '../../stores/half-rows.js';
import { gatherRows } from '../../stores/rows.js';

/** What buildGraph and rebuildGraph take. */
export interface GraphBuildOptions {
  /** Hears of the build's phases and how far each is (see GraphBuildPhase). */
  onProgress?: (progress: GraphBuildProgress) => void;
}

export interface GraphIndexOptions {
  dim: number;
  /** Default `l2`. */
  metric?: Metric;
  /** Out-edges a row (default 32, at most 256): `CAGRA32`. */
  degree?: number;
  /** Neighbours a row in the intermediate graph that pruning starts from (default 2 x degree, as cuVS; at most 256). */
  intermediateDegree?: number;
  /**
   * How the intermediate graph is made: 'exact' (the flat self-search), 'ivf' (an IVF-Flat
   * self-search, `intermediateNprobe` lists a row) or 'auto' (default: exact while n^2 d <=
   * GRAPH_EXACT_KNN_MAX_WORK, IVF above). See ./intermediate.ts.
   */
  intermediateGraph?: IntermediateGraph;
  /**
   * Lists an 'ivf' intermediate graph scans a row (default: chosen by the build, the smallest of
   * 2, 4, 8, 16 whose sampled rows reach GRAPH_IVF_TARGET_RECALL of their exact graph; see
   * ./intermediate.ts and `lastIntermediate.tried`).
   */
  intermediateNprobe?: number;
  /** As FlatIndexOptions.hostCopy. */
  hostCopy?: boolean;
  /** The walk's internal list length by default (64, as cuVS); a search's params may say otherwise. */
  itopk?: number;
}

/** The kernel's largest internal list (shaders/graph-search.wgsl MAX_ITOPK). */
export const GRAPH_MAX_ITOPK = GRAPH_SEARCH_MAX_ITOPK;
/** The most results a search may ask for: the walk's list holds at least k (see `candidates`). */
export const GRAPH_MAX_K = GRAPH_MAX_ITOPK;
/**
 * A filter (with the removed rows) allowing at least this share of the rows is applied during the
 * walk; below it the search is the exact pre-filtered scan, as a walk through mostly disallowed
 * rows loses the allowed ones. Measured on SIFT10K (docs/graph-index.md): the walk keeps its recall
 * down to a tenth allowed, but the scan, whose cost falls with the allowed rows, is faster at every
 * share there; the switch belongs at a cost (allowed rows x d against the widened walk), still to
 * be measured on larger sets. `strategy` forces either.
 */
export const GRAPH_FILTER_MIN_SELECTIVITY = 0.5;
/**
 * Rows added to a built graph extend it while they are at most this share of the rows it holds
 * (counted from its last full build); more, and the next search builds the graph anew.
 */
export const GRAPH_EXTEND_MAX_GROWTH = 1;
/** An extension adds rows in steps of at most this share of the rows already linked, so that later steps link to earlier ones. */
const EXTEND_STEP = 0.1;
/** Rounds of `connect` at most, and the rows its walk finds for each entry row. */
const CONNECT_ROUNDS = 4;
const CONNECT_CANDIDATES = 32;
/** Edges into each entry row, from the nearest rows the walk found that can take one. */
const CONNECT_LINKS = 4;
/** Entry points a walk starts from by default (GraphSearchParams.seeds): the query's nearest this many entry rows. */
export const GRAPH_DEFAULT_SEEDS = 16;
/** The most entry rows a graph keeps (GraphSearchParams.entryRows); by default a search scores entryRowsFor(n) of them. */
export const GRAPH_MAX_ENTRY_ROWS = 4096;
/** The most entry points a walk may start from. */
export const GRAPH_MAX_SEEDS = 256;

/** The widest searchWidth a graph of `degree` takes: GRAPH_SEARCH_MAX_WIDTH parents, at most GRAPH_SEARCH_MAX_CANDIDATES neighbours an iteration. */
export function widestSearch(degree: number): number {
  return Math.min(GRAPH_SEARCH_MAX_WIDTH, Math.floor(GRAPH_SEARCH_MAX_CANDIDATES / degree));
}
/** The seed of the entry rows' choice (a build is deterministic). */
const SEED = 1234;

/** An index's graph as a file holds it (GraphIndex.exportGraph): row r is the r-th live row. */
export interface GraphParts {
  n: number;
  dim: number;
  degree: number;
  metric: Metric;
  /** The rows in blocks, as stored (unit norm or zero for cosine); each call reads them again. */
  rows: () => AsyncIterable<Float32Array>;
  /** `degree` out-edges a row, each a row below n, PAD_ID (0xffffffff) after a row's last. */
  graph: Uint32Array;
  /** Row r's id. */
  ids: Float64Array;
}

/** A graph's host part: what an extension starts from. */
type HostGraph = Pick<BuiltGraph, 'n' | 'nBuilt' | 'rows'>;

interface BuiltGraph {
  /** Rows the graph links (the first n slots). */
  n: number;
  /** Rows of a full build; those after were linked by extensions. */
  nBuilt: number;
  device: DeviceGraph;
  /** The graph on the host (what save writes): `degree` ids a row, PAD_ID where a row has fewer. */
  rows: Uint32Array;
  /** The entry rows (chooseEntryRows) by position, as on the device. */
  entries: Uint32Array;
}

export class GraphIndex extends FlatIndex {
  readonly degree: number;
  readonly intermediateDegree: number;
  readonly intermediateGraph: IntermediateGraph;
  /** undefined: the build chooses it. */
  readonly intermediateNprobe: number | undefined;
  /** How the last full build made its intermediate graph (null before one). */
  lastIntermediate: IntermediateGraphInfo | null = null;
  /** The walk's internal list length when a search's params do not say. */
  itopk: number;
  private built: BuiltGraph | null = null;
  /**
   * The graph an extension that failed started from (host only: its device buffers went back):
   * the next search extends it again rather than build the graph anew. Null while a graph is built.
   */
  private unextended: HostGraph | null = null;
  /** The build in progress: searches that need the graph at once share it. */
  private building: Promise<BuiltGraph | null> | null = null;
  /** walkMask's results, by the masks IndexCore made. */
  private readonly walkMasks = new WeakMap<Uint32Array[], { mask: Uint32Array; allowed: number }>();

  constructor(backend: Backend, options: GraphIndexOptions) {
    super(backend, { dim: options?.dim, metric: options?.metric, hostCopy: options?.hostCopy }, 'GraphIndex');
    this.degree = options.degree ?? 32;
    if (!Number.isInteger(this.degree) || this.degree < 1 || this.degree > CAGRA_MAX_DEGREE) {
      throw new InvalidArgumentError(`degree must be an integer in [1, ${CAGRA_MAX_DEGREE}]; got ${String(options.degree)}`);
    }
    this.intermediateDegree = options.intermediateDegree ?? Math.min(CAGRA_MAX_KIN, 2 * this.degree);
    if (!Number.isInteger(this.intermediateDegree) || this.intermediateDegree < this.degree || this.intermediateDegree > CAGRA_MAX_KIN) {
      throw new InvalidArgumentError(`intermediateDegree must be an integer in [degree = ${this.degree}, ${CAGRA_MAX_KIN}]; got ${String(options.intermediateDegree)}`);
    }
    this.itopk = checkItopk(options.itopk ?? 64, 'itopk');
    this.intermediateGraph = checkIntermediateGraph(options.intermediateGraph);
    this.intermediateNprobe = options.intermediateNprobe;
    if (this.intermediateNprobe !== undefined && !(Number.isInteger(this.intermediateNprobe) && this.intermediateNprobe >= 1)) {
      throw new InvalidArgumentError(`intermediateNprobe must be an integer >= 1; got ${String(options.intermediateNprobe)}`);
    }
  }

  /**
   * Rows no walk can reach: not entry rows and not linked from any row an entry row reaches (a
   * breadth-first search of the built graph; 0 before the first build). The build links such
   * rows in (see `connect`), so this is 0 unless a row could not be linked.
   */
  get unreachableRows(): number {
    if (!this.built) return 0;
    return reachable(this.built.rows, this.degree, defaultEntries(this.built)).reduce((left, seen) => left + 1 - seen, 0);
  }

  /** The graph's rows as built (`degree` ids a row, PAD_ID where a row has fewer), or null before the first build. */
  get graphRows(): Uint32Array | null {
    return this.built?.rows ?? null;
  }

  /** Rows the graph links that extensions added since its last full build (0 before the first build). */
  get extendedRows(): number {
    return this.built ? this.built.n - this.built.nBuilt : 0;
  }

  /**
   * Builds the graph anew from every row, after every operation called before it (rows added
   * since the last build were linked by extensions, whose recall falls as they grow: see
   * docs/graph-index.md).
   */
  async rebuildGraph(options: GraphBuildOptions = {}): Promise<void> {
    this.queue.checkOpen('rebuildGraph');
    return this.queue.mutate(async () => {
      this.dropGraph();
      await this.graph(options.onProgress);
    });
  }

  /**
   * Brings the graph up to date with the rows, after every operation called before it, as the
   * next search or save would (built, or extended where rows were only added), reporting its
   * progress; resolves at once where it is up to date. A build a search started already is
   * waited for, without progress (so is one another buildGraph started: only the caller that
   * started a build hears of it).
   */
  async buildGraph(options: GraphBuildOptions = {}): Promise<void> {
    this.queue.checkOpen('buildGraph');
    return this.queue.search(async () => {
      await this.graph(options.onProgress);
    });
  }

  protected override rowsChanged(how: 'appended' | 'replaced'): void {
    // Appended rows keep the graph, to be extended by the next search that needs it.
    if (how === 'replaced') this.dropGraph();
  }

  protected override checkParams(params: SearchParams): SearchParams {
    const p = super.checkParams(params);
    if (p.itopk !== undefined) checkItopk(p.itopk, 'itopk');
    const widest = widestSearch(this.degree);
    if (p.searchWidth !== undefined && !(Number.isInteger(p.searchWidth) && p.searchWidth >= 1 && p.searchWidth <= widest)) {
      const why = widest < GRAPH_SEARCH_MAX_WIDTH ? ` (the walk scores at most ${GRAPH_SEARCH_MAX_CANDIDATES} neighbours an iteration: ${widest} rows of degree ${this.degree})` : '';
      throw new InvalidArgumentError(`searchWidth must be an integer in [1, ${widest}]${why}; got ${String(p.searchWidth)}`);
    }
    if (p.strategy !== undefined && !['auto', 'walk', 'scan'].includes(p.strategy)) {
      throw new InvalidArgumentError(`strategy must be 'auto', 'walk' or 'scan'; got ${String(p.strategy)}`);
    }
    if (p.seeds !== undefined && !(Number.isInteger(p.seeds) && p.seeds >= 1 && p.seeds <= GRAPH_MAX_SEEDS)) {
      throw new InvalidArgumentError(`seeds must be an integer in [1, ${GRAPH_MAX_SEEDS}] (GRAPH_MAX_SEEDS); got ${String(p.seeds)}`);
    }
    if (p.entryRows !== undefined && !(Number.isInteger(p.entryRows) && p.entryRows >= 1 && p.entryRows <= GRAPH_MAX_ENTRY_ROWS)) {
      throw new InvalidArgumentError(`entryRows must be an integer in [1, ${GRAPH_MAX_ENTRY_ROWS}] (GRAPH_MAX_ENTRY_ROWS); got ${String(p.entryRows)}`);
    }
    if (p.maxIterations !== undefined && !(Number.isInteger(p.maxIterations) && p.maxIterations >= 0)) {
      throw new InvalidArgumentError(`maxIterations must be an integer >= 0 (0: automatic); got ${String(p.maxIterations)}`);
    }
    return p;
  }

  /** Refuses, before anything runs, a k the walk's list cannot hold (at most GRAPH_MAX_K). */
  override search(xq: Float32Array, k: number, params: SearchParams = {}): Promise<SearchResult> {
    if (Number.isInteger(k) && k > GRAPH_MAX_K) {
      return Promise.reject(
        new InvalidArgumentError(`k = ${k}: a CAGRA search walks a list of at least k entries; the walk holds at most ${GRAPH_MAX_ITOPK}: ask for at most ${GRAPH_MAX_K} results`),
      );
    }
    return super.search(xq, k, params);
  }

  /**
   * The walk's list is itopk long, and at least the `need` results the re-score keeps, not the
   * re-score's margin (`kc`): the walk is approximate, its list length is its recall knob, and a
   * list of 16 for k = 10 scores fewer rows than one of candidatesFor(10) = 32. The walk
   * hands back its whole list (at most kc), padded to kc with empty slots. Without `need` (a
   * post-filter reads the candidates in the kernels' order), or with a mask, the list holds all kc.
   */
  protected override async candidates(xq: Float32Array, nq: number, kc: number, masks: Uint32Array[] | null, params: SearchParams, need: number | null): Promise<SlotResult> {
    // The rows a filter and the removals allow, as one mask over every row the walk may reach.
    const { mask, allowed } = masks ? this.walkMask(masks) : { mask: null, allowed: 1 };
    // The walk passes through disallowed rows and keeps them in its list: widen it by their share (cuVS).
    // The allowed share is an average: a masked list keeps the re-score's margin against its spread.
    const least = mask || need === null ? kc : need;
    const wide = allowed > 0 ? Math.ceil(Math.max(params.itopk ?? this.itopk, least) / allowed) : Infinity;
    const strategy = params.strategy ?? 'auto';
    const itopk = strategy === 'walk' ? Math.min(wide, GRAPH_MAX_ITOPK) : wide;
    const walks = strategy === 'walk' ? allowed > 0 : strategy === 'auto' && allowed >= GRAPH_FILTER_MIN_SELECTIVITY && itopk <= GRAPH_MAX_ITOPK;
    const g = walks ? await this.graph() : null;
    // Too few rows allowed for a walk to find them, more candidates than the walk holds (a
    // post-filter's), or an index too small for a graph: the exact scan.
    if (params.timings) params.timings.strategy = g ? 'walk' : 'scan';
    if (!g) return super.candidates(xq, nq, kc, masks, params);
    const walk = walkOptions(g, itopk, params.searchWidth ?? 1, params.maxIterations ?? 0, params.seeds, params.entryRows);
    const kw = Math.min(kc, itopk);
    const r = await searchGraph(this.backend.device, this.store, g.device, xq, nq, kw, this.kernelMetric, walk, params.timings, mask ? [mask] : null);
    return kw === kc ? r : { ...r, ...padSlots(r, nq, kw, kc) };
  }

  /**
   * Per-chunk masks as one mask over every row, and the share of rows it allows. IndexCore keeps
   * the masks of a filter (and of the removals) until the index changes, so the join and the
   * count are made once per mask set, not once per search.
   */
  private walkMask(masks: Uint32Array[]): { mask: Uint32Array; allowed: number } {
    let w = this.walkMasks.get(masks);
    if (!w) {
      const n = this.ids.nslots;
      const mask = joinMasks(masks, this.store.chunkRows, n);
      this.walkMasks.set(masks, (w = { mask, allowed: countBits(mask, n) / Math.max(1, n) }));
    }
    return w;
  }

  /**
   * The graph of the rows as they are: built now if the rows changed since the last build, or
   * extended if rows were only added (at most GRAPH_EXTEND_MAX_GROWTH of those the last build
   * linked); null for fewer than 2 rows.
   */
  private graph(report: GraphBuildReport = () => {}): Promise<BuiltGraph | null> {
    const n = this.ids.nslots;
    if (this.built && this.built.n === n) return Promise.resolve(this.built);
    const from = this.built ?? this.unextended;
    const extend = from !== null && n - from.nBuilt <= GRAPH_EXTEND_MAX_GROWTH * from.nBuilt;
    if (!extend) this.dropGraph();
    this.building ??= (extend ? this.extend(from!, report) : this.build(report)).finally(() => (this.building = null));
    return this.building;
  }

  private async build(report: GraphBuildReport): Promise<BuiltGraph | null> {
    const n = this.ids.nslots;
    if (n < 2) return null;
    const d = this.dim;
    this.checkWalkRows(n);
    // 1. Each row's kin nearest other rows, exactly or by an IVF self-search.
    const kin = Math.min(this.intermediateDegree, n - 1);
    const plan = intermediatePlan(this.intermediateGraph, n, d, this.intermediateNprobe);
    const { knn, info } = await intermediateGraph(this.backend, this.store, n, kin, this.kernelMetric, plan, report);
    this.lastIntermediate = info;
    // 2. Pruned, with the reverse edges merged in.
    const degree = Math.min(this.degree, kin);
    report({ phase: 'prune', done: 0, total: 1 });
    const graphRows = await buildGraphRows(this.backend.device, knn, n, kin, degree);
    report({ phase: 'prune', done: 1, total: 1 });
    const rows = degree === this.degree ? graphRows : widen(graphRows, n, degree, this.degree);
    return (this.built = await this.connectOwned(await this.install(rows, n, n), report));
  }

  /** connect, and where it fails, the graph's device buffers handed back (nothing is left installed). */
  private async connectOwned(b: BuiltGraph, report: GraphBuildReport): Promise<BuiltGraph> {
    try {
      return await this.connect(b, report);
    } catch (err) {
      this.releaseGraph(b.device, true);
      throw err;
    }
  }

  /**
   * Makes every row reachable from the entry rows. A graph pruned from nearest neighbours alone
   * can split into components (tight clusters link only inside themselves: on 200,000 generated
   * rows in 447 blobs, 174,503 rows were out of reach of 64 entry rows). For the rows no walk
   * reaches, a head row of each part (partHeads) is searched for by a walk (graph-search, the
   * head row as the query), and the nearest row the walk found, which is reachable, gets an
   * edge to it, as a reverse edge is added (addReverseEdge: a free entry, or in place of the
   * second-half edge whose target has the most in-edges while that target keeps one; where no
   * edge can go, the next row the walk found). At most CONNECT_ROUNDS rounds; the same on every
   * device (the walk's twin, host code).
   */
  private async connect(b: BuiltGraph, report: GraphBuildReport): Promise<BuiltGraph> {
    const { degree, dim: d } = this;
    for (let round = 0; round < CONNECT_ROUNDS; round++) {
      report({ phase: 'connect', done: round, total: CONNECT_ROUNDS });
      const heads = partHeads(b.rows, degree, reachable(b.rows, degree, defaultEntries(b)));
      if (!heads.length) break;
      const queries = gatherRows(await this.store.rowsAt(heads), heads, d);
      const found = await searchGraph(this.backend.device, this.store, b.device, queries, heads.length, CONNECT_CANDIDATES, this.kernelMetric, walkOptions(b, CONNECT_CANDIDATES, 1, 0));
      const rows = b.rows;
      const inDegree = inDegrees(rows, b.n);
      heads.forEach((u, i) => {
        let linked = 0;
        for (let j = i * CONNECT_CANDIDATES; j < (i + 1) * CONNECT_CANDIDATES && linked < CONNECT_LINKS; j++) {
          const r = found.labels[j];
          if (r >= 0 && addReverseEdge(rows, degree, inDegree, r, u)) linked++;
        }
        // And a way out: a walk that enters the part can leave it for the nearest row outside.
        const r = found.labels[i * CONNECT_CANDIDATES];
        if (r >= 0) addReverseEdge(rows, degree, inDegree, u, r);
      });
      // The rows changed in place: the device's copy is the same size.
      this.backend.device.upload(b.device.graph, 0, rows);
    }
    report({ phase: 'connect', done: CONNECT_ROUNDS, total: CONNECT_ROUNDS });
    return b;
  }

  /**
   * Links the rows added after `old.n` into its graph (cuVS's extend, in our own order), in steps
   * of at most EXTEND_STEP of the rows linked so far, so that a step's rows link to earlier steps'.
   * For each step's rows:
   *   1. candidates: each row's `intermediateDegree` nearest linked rows by a walk of the graph so
   *      far (graph-search, the row as the query; itopk at least that);
   *   2. forward edges: the candidates pruned by rank (cagra-prune), the detours read from the
   *      linked rows' graph rows;
   *   3. reverse edges, on the host in row order: each new row R is put in the rows of its first
   *      degree/2 forward edges E, in E's free entry if any, else in place of the edge of E's
   *      second half whose target has the most in-edges (the last such entry on ties), when that
   *      target keeps at least one; an edge already there is not repeated. Each row's first half
   *      (its best pruned edges) never changes.
   * Every step is the same on every device (the kernels' twins, and host code), so a graph grown
   * on WebGPU equals one grown on the CPU.
   */
  private async extend(old: HostGraph, report: GraphBuildReport): Promise<BuiltGraph> {
    try {
      return await this.extendOnce(old, report);
    } catch (err) {
      // Nothing of the extension stays; the graph it started from does, for the next search
      // (still installed where the extension failed before it took the graph down).
      if (!this.built) this.unextended = { n: old.n, nBuilt: old.nBuilt, rows: old.rows };
      throw err;
    }
  }

  /** extend's work (a failure leaves no buffer taken and no graph installed). */
  private async extendOnce(old: HostGraph, report: GraphBuildReport): Promise<BuiltGraph> {
    const n = this.ids.nslots;
    const { degree, dim: d } = this;
    const device = this.backend.device;
    this.checkWalkRows(n);
    const rows = new Uint32Array(n * degree).fill(PAD_ID);
    rows.set(old.rows);
    const inDegree = inDegrees(old.rows, n);
    // The added rows, as the walk's queries (stored rows: unit norm for cosine, as queries are).
    const slots = Array.from({ length: n - old.n }, (_, i) => old.n + i);
    const added = gatherRows(await this.store.rowsAt(slots), slots, d);
    this.dropGraph();
    const halfRows = this.walksHalves() ? await this.uploadHalfRows(n) : null;
    let linked = old.n;
    let current: BuiltGraph | null = null;
    try {
      while (linked < n) {
        report({ phase: 'extend', done: linked - old.n, total: n - old.n });
        const step = Math.min(n - linked, Math.max(1, Math.ceil(linked * EXTEND_STEP)));
        current = await this.installGraph(rows, linked, halfRows, old.nBuilt);
        // 1. Candidates by a walk of the rows linked so far.
        const kin = Math.min(this.intermediateDegree, linked);
        const itopk = Math.min(GRAPH_MAX_ITOPK, Math.max(this.itopk, kin));
        const walk = walkOptions(current, itopk, 1, 0);
        const queries = added.subarray((linked - old.n) * d, (linked - old.n + step) * d);
        const found = await searchGraph(device, this.store, current.device, queries, step, kin, this.kernelMetric, walk);
        const walked = current;
        current = null; // before the release: a release that threw must not be repeated by the catch
        this.releaseGraph(walked.device, false);
        // 2. Forward edges: the candidates pruned, detours through the linked rows' graph rows.
        const knn = new Uint32Array((linked + step) * kin).fill(PAD_ID);
        for (let r = 0; r < linked; r++) knn.set(rows.subarray(r * degree, r * degree + Math.min(degree, kin)), r * kin);
        for (let j = 0; j < step * kin; j++) knn[linked * kin + j] = found.labels[j] >= 0 ? found.labels[j] : PAD_ID;
        const kept = Math.min(degree, kin);
        const pruned = await pruneRows(device, knn, linked + step, kin, kept, linked, step);
        for (let r = 0; r < step; r++) {
          for (let e = 0; e < kept; e++) {
            const to = pruned[r * kept + e];
            rows[(linked + r) * degree + e] = to;
            if (to !== PAD_ID) inDegree[to]++;
          }
        }
        // 3. Reverse edges.
        for (let r = 0; r < step; r++) {
          const from = linked + r;
          for (let e = 0; e < Math.ceil(kept / 2); e++) {
            const to = pruned[r * kept + e];
            if (to !== PAD_ID) addReverseEdge(rows, degree, inDegree, to, from);
          }
        }
        linked += step;
      }
      report({ phase: 'extend', done: n - old.n, total: n - old.n });
      current = await this.installGraph(rows, n, halfRows, old.nBuilt);
    } catch (err) {
      if (current) this.releaseGraph(current.device, false);
      for (const b of halfRowBuffers(halfRows)) device.release(b);
      throw err;
    }
    return (this.built = await this.connectOwned(current, report));
  }

  /** Whether the walk reads a copy of the rows as halves: where the store's rows span chunks. */
  private walksHalves(): boolean {
    return this.store.chunks.filter((c) => c.rows > 0).length > 1;
  }

  /** Half rows one binding holds. */
  private halfRowsPerBinding(): number {
    return Math.floor(this.backend.maxBindingBytes / (halfRowWords(this.store.dpad) * 4));
  }

  /** Refuses, before any build work, what the walk cannot bind: a graph past one binding, rows past two even as halves. */
  private checkWalkRows(n: number): void {
    checkGraphFits(this.backend.device, n, this.degree);
    if (!this.walksHalves()) return;
    if (n > 2 * this.halfRowsPerBinding()) {
      const bytes = n * halfRowWords(this.store.dpad) * 4;
      throw new InvalidArgumentError(
        `a CAGRA walk reads its rows in at most two bindings: ${n} rows of ${this.dim} dimensions take ${bytes} bytes as halves; this device binds at most ${this.backend.maxBindingBytes} bytes (maxBindingBytes), ${2 * this.halfRowsPerBinding()} such rows in two`,
      );
    }
  }

  /** Puts a graph (`degree` ids a row of the store's `n` rows, all linked by a build of `nBuilt`), its entry rows and where needed the rows as halves on the device. */
  private async install(rows: Uint32Array, n: number, nBuilt: number): Promise<BuiltGraph> {
    const halfRows = this.walksHalves() ? await this.uploadHalfRows(n) : null;
    try {
      return await this.installGraph(rows, n, halfRows, nBuilt);
    } catch (err) {
      for (const b of halfRowBuffers(halfRows)) this.backend.device.release(b);
      throw err;
    }
  }

  /**
   * Puts `rows` (`degree` ids a row, the first `linked` rows linked) and the entry rows,
   * chosen among the linked rows (their ids and a store of their rows), on the device beside
   * `halfRows` (which the graph then owns; where this fails, they stay the caller's, and what it
   * made itself is handed back).
   */
  private async installGraph(rows: Uint32Array, linked: number, halfRows: DeviceGraph['halfRows'], nBuilt: number): Promise<BuiltGraph> {
    const entries = chooseEntryRows(linked, Math.min(linked, GRAPH_MAX_ENTRY_ROWS));
    const entryRows = this.backend.createBaseStore(this.dim, { hostCopy: false });
    try {
      await entryRows.add(gatherRows(await this.store.rowsAt(entries), entries, this.dim), entries.length);
      const [graph, ids] = uploadAll(this.backend.device, [['graph', rows], ['graph_entries', entries]]);
      return { n: linked, nBuilt, rows, entries, device: { graph, degree: this.degree, entries: { rows: entryRows, ids }, halfRows } };
    } catch (err) {
      entryRows.dispose();
      throw err;
    }
  }

  /** The store's `n` rows as halves, with the squared norms of the halves, on the device. */
  private async uploadHalfRows(n: number): Promise<HalfRows> {
    const dpad = this.store.dpad;
    const padded = new Float32Array(n * dpad);
    let at = 0;
    for await (const block of this.store.readRows(true)) {
      padded.set(block, at);
      at += block.length;
    }
    const { words, norms } = halfRowsWithNorms(padded, n, dpad);
    // The rows past one binding (checkWalkRows allows two) from rowSplit on.
    const rowSplit = Math.min(n, this.halfRowsPerBinding());
    const split = rowSplit * halfRowWords(dpad);
    const hi = rowSplit < n;
    const made = uploadAll(this.backend.device, [
      ['graph_half_rows', words.subarray(0, split)],
      ...(hi ? [['graph_half_rows_hi', words.subarray(split)] as [string, Uint32Array]] : []),
      ['graph_half_norms', norms],
    ]);
    return { xb: made[0], xbHi: hi ? made[1] : null, rowSplit, xnorm: made[made.length - 1] };
  }

  private dropGraph(): void {
    this.unextended = null;
    if (!this.built) return;
    this.releaseGraph(this.built.device, true);
    this.built = null;
  }

  /** Frees a device graph's buffers (with `halfRows`, its copy of the rows too). */
  private releaseGraph(g: DeviceGraph, halfRows: boolean): void {
    const rows = halfRows ? halfRowBuffers(g.halfRows) : [];
    for (const b of [g.graph, g.entries.ids, ...rows]) this.backend.device.release(b);
    g.entries.rows.dispose();
  }

  /**
   * Restores a saved graph (loadIndex, after the rows): `degree` ids a row, each below ntotal or
   * PAD_ID. The index takes `rows` over.
   */
  async restoreGraph(rows: Uint32Array, what: string): Promise<void> {
    this.queue.checkOpen('restoreGraph');
    return this.queue.mutate(async () => {
      const n = this.ids.nslots;
      if (rows.length !== n * this.degree) throw new InvalidArgumentError(`${what}: ${rows.length} graph entries for ${n} rows of degree ${this.degree}`);
      for (let p = 0; p < rows.length; p++) {
        const id = rows[p];
        if (id !== PAD_ID && id >= n) throw new InvalidArgumentError(`${what}: graph[${p}] (row ${Math.floor(p / this.degree)}) is ${id}; expected a row in [0, ${n - 1}] or 0xffffffff (none)`);
      }
      this.dropGraph();
      if (n >= 2) {
        this.checkWalkRows(n);
        this.built = await this.install(rows, n, n);
      }
    });
  }

  /** The graph (on the host, and on the device with its entry rows and, where kept, the rows as halves), then the rows. */
  protected override countMemory(tally: MemoryTally): void {
    const g = this.built;
    if (this.unextended) tally.array(this.unextended.rows);
    if (g) {
      tally.array(g.rows);
      tally.array(g.entries);
      tally.store(g.device.entries.rows);
      for (const b of [g.device.graph, g.device.entries.ids, ...halfRowBuffers(g.device.halfRows)]) tally.buffer(b);
    }
    super.countMemory(tally);
  }

  /**
   * Type CAGRA (src/io/index-file.ts): the live rows, the graph (built first if the rows changed;
   * edges to removed rows left out) and the ids (see IndexCore.savedIndex).
   */
  protected override savedIndex(): () => Promise<SavedIndex> {
    return async () => {
      const { rows, graph, ids } = await this.savedParts();
      const live = { ids, nextId: this.ids.savedNextId };
      async function* parts(): AsyncGenerator<Float32Array | Uint32Array | BigInt64Array> {
        yield* rows();
        yield graph;
        yield* idSection(live);
      }
      const header: IndexFileHeader = { type: 'CAGRA', metric: this.metric, dim: this.dim, ntotal: this.ntotal, nlist: this.degree, nprobe: 0, codec: null, refine: null, transform: null };
      return { header, parts: parts() };
    };
  }

  /**
   * Hands `write` what save writes, for a file of another format (the CLI's `export --format
   * hnswlib`): the live rows, the graph over them and each row's id (see GraphParts). The graph
   * is built first if the rows changed. `write` runs as a search does: the index does not change
   * until it returns.
   */
  async exportGraph<T>(write: (parts: GraphParts) => Promise<T>): Promise<T> {
    this.queue.checkOpen('exportGraph');
    return this.queue.search(async () => write(await this.savedParts()));
  }

  /** The live rows, the graph renumbered over them and their ids (save's arrays; in a search of the queue). */
  private async savedParts(): Promise<GraphParts> {
    const built = await this.graph();
    const graph = savedGraph(built?.rows ?? null, this.ids.nslots, this.degree, (slot) => this.ids.isDead(slot));
    return { n: this.ntotal, dim: this.dim, degree: this.degree, metric: this.metric, rows: () => this.liveRows(), graph, ids: this.ids.liveIds() };
  }

  override async dispose(): Promise<void> {
    await super.dispose();
    this.dropGraph();
  }
}

/**
 * Puts the edge `from` -> `to` among row `from`'s (extend's reverse edges): in a free entry, or in
 * place of the second-half entry whose target has the most in-edges (the last on ties) when that
 * target keeps one; nothing when the edge is there already or no entry may go.
 */
function addReverseEdge(rows: Uint32Array, degree: number, inDegree: Uint32Array, from: number, to: number): boolean {
  const row = rows.subarray(from * degree, (from + 1) * degree);
  if (row.includes(to)) return true;
  let at = row.indexOf(PAD_ID);
  if (at < 0) {
    for (let e = Math.floor(degree / 2); e < degree; e++) if (at < 0 || inDegree[row[e]] >= inDegree[row[at]]) at = e;
    if (at < 0 || inDegree[row[at]] < 2) return false;
    inDegree[row[at]]--;
  }
  row[at] = to;
  inDegree[to]++;
  return true;
}

/** Each of `n` rows' in-edges in a graph's rows. */
function inDegrees(rows: Uint32Array, n: number): Uint32Array {
  const inDegree = new Uint32Array(n);
  for (const to of rows) if (to !== PAD_ID) inDegree[to]++;
  return inDegree;
}

/** Which of the graph's rows a walk from the entry rows can reach (a breadth-first search): 1 a row. */
function reachable(g: Uint32Array, degree: number, entries: ArrayLike<number>): Uint8Array {
  const seen = new Uint8Array(g.length / degree);
  const queue = Array.from(entries);
  for (const s of queue) seen[s] = 1;
  for (let head = 0; head < queue.length; head++) {
    const row = queue[head];
    for (let e = row * degree; e < (row + 1) * degree; e++) {
      const to = g[e];
      if (to !== PAD_ID && !seen[to]) {
        seen[to] = 1;
        queue.push(to);
      }
    }
  }
  return seen;
}

/**
 * Head rows of the parts `seen` lacks: in row order, each unseen row not yet covered, and then
 * every unseen row it leads to covered. Linking each head from a seen row makes every row seen.
 */
function partHeads(g: Uint32Array, degree: number, seen: Uint8Array): number[] {
  const covered = seen.slice();
  const heads: number[] = [];
  for (let u = 0; u < covered.length; u++) {
    if (covered[u]) continue;
    heads.push(u);
    covered[u] = 1;
    const stack = [u];
    while (stack.length) {
      const row = stack.pop()!;
      for (let e = row * degree; e < (row + 1) * degree; e++) {
        const to = g[e];
        if (to !== PAD_ID && !covered[to]) {
          covered[to] = 1;
          stack.push(to);
        }
      }
    }
  }
  return heads;
}

/** Per-chunk masks (bit r of chunk c: row c * chunkRows + r) as one mask over the first `n` rows. */
function joinMasks(masks: Uint32Array[], chunkRows: number, n: number): Uint32Array {
  if (masks.length === 1) return masks[0];
  const out = new Uint32Array(Math.ceil(n / 32));
  for (let row = 0; row < n; row++) {
    const c = Math.floor(row / chunkRows);
    const r = row - c * chunkRows;
    if ((masks[c][r >>> 5] >>> (r & 31)) & 1) out[row >>> 5] |= 1 << (row & 31);
  }
  return out;
}

/** Set bits among the first `n` of `mask`. */
function countBits(mask: Uint32Array, n: number): number {
  let c = 0;
  for (let w = 0; w < n >>> 5; w++) c += popcount(mask[w]);
  if (n & 31) c += popcount(mask[n >>> 5] & ((1 << (n & 31)) - 1));
  return c;
}

function checkItopk(v: unknown, what: string): number {
  if (!(Number.isInteger(v) && (v as number) >= 1 && (v as number) <= GRAPH_MAX_ITOPK)) {
    throw new InvalidArgumentError(`${what} must be an integer in [1, ${GRAPH_MAX_ITOPK}]; got ${String(v)}`);
  }
  return v as number;
}

/**
 * How a walk of `g` runs: maxIterations 0 is automatic (itopk / searchWidth + 32); the query scored
 * against `entryRows` of the graph's entry rows (default entryRowsFor(n)) and started from its
 * `seeds` nearest. The visited hash always has the kernel's most slots (GRAPH_SEARCH_MAX_HASH_BITS:
 * its workgroup memory is sized by them anyway): resets are then rare, and each reset lets the walk
 * score again the rows it had dropped from its list. On Fashion-MNIST (itopk 16 and 32) the smallest
 * hash that holds an iteration twice over scored 1.5x and 1.75x the rows for the same results.
 */
function walkOptions(g: BuiltGraph, itopk: number, searchWidth: number, maxIterations: number, seeds = GRAPH_DEFAULT_SEEDS, entryRows = entryRowsFor(g.n)): WalkOptions {
  return { itopk, searchWidth, maxIterations: maxIterations || Math.ceil(itopk / searchWidth) + 32, entryRows, seeds, hashBits: GRAPH_SEARCH_MAX_HASH_BITS };
}

/** The entry rows a walk scores by default (the first entryRowsFor(n) of the graph's): those every row must be reachable from. */
function defaultEntries(b: BuiltGraph): Uint32Array {
  return b.entries.subarray(0, entryRowsFor(b.n));
}

/**
 * The entry rows a search of a graph of n rows scores by default: 4 sqrt(n), at least
 * GRAPH_MAX_SEEDS, at most GRAPH_MAX_ENTRY_ROWS and n. A sample of the rows that grows with them
 * meets the regions a query may fall in, as an HNSW's upper layers do; each walk starts from the
 * query's nearest `seeds` of them (src/plans/graph-search.ts). See docs/graph-index.md for what
 * more or fewer cost and find.
 */
export function entryRowsFor(n: number): number {
  return Math.min(n, GRAPH_MAX_ENTRY_ROWS, Math.max(GRAPH_MAX_SEEDS, Math.ceil(4 * Math.sqrt(n))));
}

/** `m` distinct rows of n, the same for every build of n rows, in the order drawn: the first m' are those drawn for m' < m. */
function chooseEntryRows(n: number, m: number): Uint32Array {
  const random = rng(SEED);
  const picked = new Set<number>();
  const out = new Uint32Array(m);
  for (let s = 0; s < m; ) {
    const v = Math.floor(random() * n);
    if (!picked.has(v)) {
      picked.add(v);
      out[s++] = v;
    }
  }
  return out;
}

/** Rows of `from` ids widened to `to` (PAD_ID after): a graph of fewer rows than the degree. */
function widen(g: Uint32Array, n: number, from: number, to: number): Uint32Array {
  const out = new Uint32Array(n * to).fill(PAD_ID);
  for (let r = 0; r < n; r++) out.set(g.subarray(r * from, (r + 1) * from), r * to);
  return out;
}

/**
 * The graph as a file holds it: rows of the live slots only, renumbered as the file numbers
 * rows (live slots in order), edges to removed rows dropped (the row's later edges move up).
 */
function savedGraph(rows: Uint32Array | null, nslots: number, degree: number, dead: (slot: number) => boolean): Uint32Array {
  const position = new Int32Array(nslots);
  let live = 0;
  for (let s = 0; s < nslots; s++) position[s] = dead(s) ? -1 : live++;
  const out = new Uint32Array(live * degree).fill(PAD_ID);
  if (!rows) return out;
  for (let s = 0; s < nslots; s++) {
    if (position[s] < 0) continue;
    let w = position[s] * degree;
    for (let e = 0; e < degree; e++) {
      const id = rows[s * degree + e];
      if (id !== PAD_ID && position[id] >= 0) out[w++] = position[id];
    }
  }
  return out;
}

/** New device buffers holding `parts` (label, contents), in order; where one fails, those made are handed back. */
function uploadAll(device: Device, parts: [string, Uint32Array | Float32Array][]): DeviceBuffer[] {
  const made: DeviceBuffer[] = [];
  try {
    for (const [label, data] of parts) {
      const b = device.buffer(label, data.byteLength);
      made.push(b);
      device.upload(b, 0, data);
    }
    return made;
  } catch (err) {
    for (const b of made) device.release(b);
    throw err;
  }
}

/** The device buffers of a graph's rows as halves (none for null). */
function halfRowBuffers(h: HalfRows | null): DeviceBuffer[] {
  return h ? [h.xb, ...(h.xbHi ? [h.xbHi] : []), h.xnorm] : [];
}
