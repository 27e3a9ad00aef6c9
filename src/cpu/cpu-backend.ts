/**
 * The CPU backend: pure TypeScript, never imports webgpu. It runs the same kernel sequence as the
 * GPU (score a tile, select per tile, merge into a running list), using the kernels' CPU twins, so
 * both backends return the same (score, id) order.
 */
import type { Backend, BaseStore, KMeansWorkspace, SelfJoinOptions } from '../backend.js';
import type { KernelMetric } from '../kernel-facts.js';
import type { IvfLists } from '../ivf-lists.js';
import { finalizeResults } from '../results.js';
import type { SearchResult, SearchTimings } from '../types.js';
import { gemmScores } from './gemm-scores.js';
import { norms } from './norms.js';
import { RowBuffer } from '../row-buffer.js';
import { ivfScan } from './ivf-scan.js';
import { pairsThreshold } from './pairs-threshold.js';
import { DEFAULT_MAX_CANDIDATES, PairList, sortTilePairs, tooManyCandidates } from '../pairs.js';
import { MERGE_ROUND, PAD_ID } from '../kernel-facts.js';
import { topk } from './topk.js';
import { topkMerge } from './topk-merge.js';

/** Queries scored together: a 64 x 4096 float tile (1 MiB) stays in cache. */
const CPU_QUERY_TILE = 64;
const CPU_BASE_TILE = 4096;
/** The CPU has no device limit on k; this bounds memory per search (nq * k pairs). */
export const CPU_MAX_K = 1 << 20;

export class CpuBaseStore implements BaseStore {
  private readonly vectors: RowBuffer;
  private readonly norms = new RowBuffer(1);

  constructor(readonly d: number) {
    this.vectors = new RowBuffer(d);
  }

  get ntotal(): number {
    return this.vectors.n;
  }

  /** Row-major base vectors, `ntotal * d` (a view; the kernels' twins read it). */
  get xb(): Float32Array {
    return this.vectors.view();
  }

  /** Their squared norms, `ntotal`. */
  get xnorm(): Float32Array {
    return this.norms.view();
  }

  async add(x: Float32Array, n: number): Promise<void> {
    this.vectors.append(x, n);
    this.norms.append(norms(x, n, this.d), n);
  }

  rows(): Float32Array {
    return this.vectors.view();
  }

  reset(): void {
    this.vectors.clear();
    this.norms.clear();
  }

  dispose(): void {
    this.reset();
  }
}

export class CpuBackend implements Backend {
  readonly kind = 'cpu' as const;
  readonly maxK = CPU_MAX_K;
  readonly description = 'cpu (TypeScript twins, single thread)';

  createBaseStore(d: number): BaseStore {
    return new CpuBaseStore(d);
  }

  async searchFlat(
    store: BaseStore,
    xq: Float32Array,
    nq: number,
    k: number,
    metric: KernelMetric,
    timings?: SearchTimings,
  ): Promise<SearchResult> {
    const t0 = performance.now();
    const run = this.searchLists(store as CpuBaseStore, xq, nq, k, metric);
    const result = finalizeResults(metric, run.s, run.i, nq, k, metric === 'l2' ? norms(xq, nq, store.d) : null);
    if (timings) Object.assign(timings, { uploadMs: 0, computeMs: performance.now() - t0, readbackMs: 0, kernelMs: undefined });
    return result;
  }

  /** Each query's k best (score, id) against `base`, best first (`nq * k`), before finalizing. */
  searchLists(base: CpuBaseStore, xq: Float32Array, nq: number, k: number, metric: KernelMetric): { s: Float32Array; i: Uint32Array } {
    const d = base.d;
    const n = base.ntotal;
    const runS = new Float32Array(nq * k).fill(Infinity);
    const runI = new Uint32Array(nq * k).fill(PAD_ID);
    const tmpS = new Float32Array(CPU_QUERY_TILE * k);
    const tmpI = new Uint32Array(CPU_QUERY_TILE * k);
    const partS = new Float32Array(CPU_QUERY_TILE * k);
    const partI = new Uint32Array(CPU_QUERY_TILE * k);
    const scores = new Float32Array(CPU_QUERY_TILE * CPU_BASE_TILE);
    for (let q0 = 0; q0 < nq; q0 += CPU_QUERY_TILE) {
      const rows = Math.min(CPU_QUERY_TILE, nq - q0);
      const outS = runS.subarray(q0 * k, (q0 + rows) * k);
      const outI = runI.subarray(q0 * k, (q0 + rows) * k);
      for (let c0 = 0; c0 < n; c0 += CPU_BASE_TILE) {
        const cols = Math.min(CPU_BASE_TILE, n - c0);
        gemmScores(metric, xq, q0, rows, base.xb, base.xnorm, c0, cols, d, scores, CPU_BASE_TILE);
        tmpS.set(outS);
        tmpI.set(outI);
        topk(scores, CPU_BASE_TILE, rows, cols, c0, k, 1, cols, partS, partI, c0 === 0 ? null : { s: tmpS, i: tmpI, row0: 0 });
        topkMerge(partS, partI, rows, 1, k, c0 === 0 ? null : tmpS, c0 === 0 ? null : tmpI, outS, outI);
      }
    }
    return { s: runS, i: runI };
  }

  async searchIvf(
    coarse: BaseStore,
    lists: IvfLists,
    xq: Float32Array,
    nq: number,
    k: number,
    nprobe: number,
    metric: KernelMetric,
    timings?: SearchTimings,
  ): Promise<SearchResult> {
    const t0 = performance.now();
    const d = coarse.d;
    const probes = this.searchLists(coarse as CpuBaseStore, xq, nq, nprobe, metric).i;
    const csr = lists.csr(d);
    const runS = new Float32Array(nq * k).fill(Infinity);
    const runI = new Uint32Array(nq * k).fill(PAD_ID);
    const rowsPerTile = Math.max(1, Math.min(CPU_QUERY_TILE, Math.floor((16 << 20) / (nprobe * k * 4))));
    const partS = new Float32Array(rowsPerTile * nprobe * k);
    const partI = new Uint32Array(rowsPerTile * nprobe * k);
    const tmpS = new Float32Array(rowsPerTile * k);
    const tmpI = new Uint32Array(rowsPerTile * k);
    for (let q0 = 0; q0 < nq; q0 += rowsPerTile) {
      const rows = Math.min(rowsPerTile, nq - q0);
      ivfScan(metric, xq, q0, rows, probes, q0, nprobe, 1, csr.offsets, csr.xb, csr.xnorm, csr.ids, d, k, partS, partI);
      const outS = runS.subarray(q0 * k, (q0 + rows) * k);
      const outI = runI.subarray(q0 * k, (q0 + rows) * k);
      mergeInRounds(partS, partI, rows, nprobe, k, outS, outI, tmpS, tmpI);
    }
    const result = finalizeResults(metric, runS, runI, nq, k, metric === 'l2' ? norms(xq, nq, d) : null);
    if (timings) Object.assign(timings, { uploadMs: 0, computeMs: performance.now() - t0, readbackMs: 0, kernelMs: undefined });
    return result;
  }

  async selfJoinCandidates(store: BaseStore, metric: KernelMetric, limit: number, rel: number, options: SelfJoinOptions): Promise<number> {
    const base = store as CpuBaseStore;
    const n = base.ntotal;
    const maxCandidates = options.maxCandidates ?? DEFAULT_MAX_CANDIDATES;
    // One row tile's pairs at a time: memory follows the largest tile (at most CPU_QUERY_TILE * n
    // pairs, and no more than maxCandidates), never the whole join.
    const tile = new PairList();
    let total = 0;
    const scores = new Float32Array(CPU_QUERY_TILE * CPU_BASE_TILE);
    for (let q0 = 0; q0 < n; q0 += CPU_QUERY_TILE) {
      const rows = Math.min(CPU_QUERY_TILE, n - q0);
      tile.clear();
      // Only columns right of the diagonal can hold pairs i < j.
      for (let c0 = q0 - (q0 % CPU_BASE_TILE); c0 < n; c0 += CPU_BASE_TILE) {
        const cols = Math.min(CPU_BASE_TILE, n - c0);
        gemmScores(metric, base.xb, q0, rows, base.xb, base.xnorm, c0, cols, base.d, scores, CPU_BASE_TILE);
        pairsThreshold(metric, scores, CPU_BASE_TILE, rows, cols, q0, c0, base.xnorm.subarray(q0), base.xnorm.subarray(c0), limit, rel, tile);
        // Checked per column tile, so an explosion stops within one tile's pairs of the bound.
        if (total + tile.length > maxCandidates) throw tooManyCandidates(maxCandidates, q0, n);
      }
      total += tile.length;
      // Column tiles are appended one after another, each row-major: a stable sort by row puts
      // the tile in (i, j) order.
      options.onPairs(sortTilePairs(tile.view(), q0, rows, true), q0 + rows);
      // Let progress output and other work through between tiles.
      await new Promise((r) => setImmediate(r));
    }
    return total;
  }

  async createKMeansWorkspace(x: Float32Array, n: number, d: number, nc: number): Promise<KMeansWorkspace> {
    const { CpuKMeansWorkspace } = await import('./kmeans-workspace.js');
    return new CpuKMeansWorkspace(this, x, n, d, nc);
  }

  dispose(): void {}
}

/**
 * Merges each row's `nlists` sorted lists (`part`, row r's list g at `(r * nlists + g) * k`) into
 * `out` (`rows * k`), at most MERGE_ROUND lists at a time, as the GPU does.
 */
function mergeInRounds(
  partS: Float32Array,
  partI: Uint32Array,
  rows: number,
  nlists: number,
  k: number,
  outS: Float32Array,
  outI: Uint32Array,
  tmpS: Float32Array,
  tmpI: Uint32Array,
): void {
  for (let seg0 = 0; seg0 < nlists; seg0 += MERGE_ROUND) {
    const nseg = Math.min(MERGE_ROUND, nlists - seg0);
    const first = seg0 === 0;
    if (!first) {
      tmpS.set(outS);
      tmpI.set(outI);
    }
    topkMerge(partS, partI, rows, nseg, k, first ? null : tmpS, first ? null : tmpI, outS, outI, nlists, seg0);
  }
}
