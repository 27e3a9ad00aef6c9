/**
 * The CPU backend: pure TypeScript, never imports webgpu. It runs the same kernel sequence as the
 * GPU (score a tile, select per tile, merge into a running list), using the kernels' CPU twins, so
 * both backends return the same (score, id) order.
 */
import type { Backend, BaseStore, KernelMetric } from '../backend.js';
import { finalizeResults } from '../results.js';
import type { SearchResult, SearchTimings } from '../types.js';
import { gemmScores } from './gemm-scores.js';
import { norms } from './norms.js';
import { topk } from './topk.js';
import { topkMerge } from './topk-merge.js';

/** Queries scored together: a 64 x 4096 float tile (1 MiB) stays in cache. */
const CPU_QUERY_TILE = 64;
const CPU_BASE_TILE = 4096;
/** The CPU has no device limit on k; this bounds memory per search (nq * k pairs). */
export const CPU_MAX_K = 1 << 20;

export class CpuBaseStore implements BaseStore {
  /** Row-major base vectors; capacity grows geometrically, the first `ntotal` rows are valid. */
  xb: Float32Array;
  xnorm: Float32Array;
  ntotal = 0;

  constructor(readonly d: number) {
    this.xb = new Float32Array(0);
    this.xnorm = new Float32Array(0);
  }

  async add(x: Float32Array, n: number): Promise<void> {
    const need = this.ntotal + n;
    if (need > this.xnorm.length) {
      const cap = Math.max(need, this.xnorm.length * 2, 16);
      const xb = new Float32Array(cap * this.d);
      xb.set(this.xb.subarray(0, this.ntotal * this.d));
      const xnorm = new Float32Array(cap);
      xnorm.set(this.xnorm.subarray(0, this.ntotal));
      this.xb = xb;
      this.xnorm = xnorm;
    }
    this.xb.set(x.subarray(0, n * this.d), this.ntotal * this.d);
    norms(x, n, this.d, this.xnorm.subarray(this.ntotal, need));
    this.ntotal = need;
  }

  reset(): void {
    this.xb = new Float32Array(0);
    this.xnorm = new Float32Array(0);
    this.ntotal = 0;
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
    const base = store as CpuBaseStore;
    const d = base.d;
    const n = base.ntotal;
    const runS = new Float32Array(nq * k).fill(Infinity);
    const runI = new Uint32Array(nq * k).fill(0xffffffff);
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
    const qnorms = metric === 'l2' ? norms(xq, nq, d) : null;
    const result = finalizeResults(metric, runS, runI, nq, k, qnorms);
    if (timings) {
      timings.uploadMs = 0;
      timings.readbackMs = 0;
      timings.computeMs = performance.now() - t0;
    }
    return result;
  }

  dispose(): void {}
}
