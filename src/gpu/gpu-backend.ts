/**
 * The WebGPU backend. A flat search is one submit and one readback:
 *
 *   for each query tile (QT queries), for each base chunk, for each column tile (BT base vectors):
 *     gemm-scores  -> scores[QT x BT]          (the full nq x n matrix is never materialised)
 *     topk         -> nseg partial lists per query row
 *     topk-merge   -> the row's running list of the k best (ping-pong between two buffers)
 *
 * Base vectors live on the device in chunks, each within one storage binding, zero-padded to a
 * multiple of 4 floats per row so that kernels use vec4 loads; their norms are computed on the GPU
 * when they are added.
 */
import type { Backend, BaseStore, KernelMetric } from '../backend.js';
import { norms as cpuNorms } from '../cpu/norms.js';
import { finalizeResults } from '../results.js';
import type { SearchResult, SearchTimings } from '../types.js';
import { InvalidArgumentError, WebGpuUnavailableError } from '../types.js';
import { GpuContext } from './context.js';
import { encodeGemmScores } from './kernels/gemm-scores.js';
import { Kernels } from './kernels/kernels.js';
import { encodeNorms } from './kernels/norms.js';
import { TOPK_MAX_K, encodeTopk } from './kernels/topk.js';
import { MERGE_MAX_SEG, encodeTopkMerge } from './kernels/topk-merge.js';
import { PipelineCache } from './pipelines.js';
import { STORAGE, createBuffer } from './recorder.js';

export interface GpuBackendOptions {
  /** Most base rows per device chunk (default: as many as fit one storage binding). Lower it to test chunking. */
  chunkRows?: number;
  /** Base vectors per score tile (default 16384). */
  tileCols?: number;
  /** Bytes of the score tile buffer (default 64 MiB, capped by the binding limit). */
  scoreTileBytes?: number;
  /** Most queries per submit (default: as many as fit one binding). Lower it to test batching. */
  queryBatch?: number;
  /** Time each kernel with GPU timestamp queries, where the adapter has them (default false). */
  timeKernels?: boolean;
  /**
   * Selection invocations to aim for per tile (rows x segments). More segments mean more parallel
   * work but more heap work in total. Default: 512 on a CPU-emulated (fallback) adapter, whose
   * few cores are busy with a few hundred, 65536 on a real GPU.
   */
  selectInvocations?: number;
  /** Options for Dawn's `create()`, such as `backend=vulkan` or `adapter=NAME`. */
  dawnFlags?: string[];
}

const DEFAULT_TILE_COLS = 16384;
const DEFAULT_SCORE_TILE_BYTES = 64 << 20;

/** Rounds d up to the vec4 row length used on the device. */
export function paddedDim(d: number): number {
  return Math.ceil(d / 4) * 4;
}

/** Copies `n` rows of `d` floats into rows of `dpad` floats (zero padding); no copy when d == dpad. */
export function padRows(x: Float32Array, n: number, d: number, dpad: number): Float32Array {
  if (d === dpad) return x.length === n * d ? x : x.subarray(0, n * d);
  const out = new Float32Array(n * dpad);
  for (let i = 0; i < n; i++) out.set(x.subarray(i * d, (i + 1) * d), i * dpad);
  return out;
}

interface Chunk {
  xb: GPUBuffer;
  xnorm: GPUBuffer;
  rows: number;
  capacity: number;
}

export class GpuBaseStore implements BaseStore {
  readonly dpad: number;
  /** Rows per chunk: every chunk but the last is full. */
  readonly chunkRows: number;
  chunks: Chunk[] = [];
  ntotal = 0;

  constructor(
    private readonly backend: GpuBackend,
    readonly d: number,
  ) {
    this.dpad = paddedDim(d);
    const fit = Math.floor(backend.ctx.maxBinding / (this.dpad * 4));
    this.chunkRows = Math.max(1, Math.min(fit, backend.options.chunkRows ?? fit));
  }

  async add(x: Float32Array, n: number): Promise<void> {
    if (n === 0) return;
    const { ctx } = this.backend;
    ctx.check();
    const device = ctx.device;
    const rowBytes = this.dpad * 4;
    // Plan: which chunks grow or are created, and where the new rows go.
    const plan: { index: number; start: number; rows: number }[] = [];
    let remaining = n;
    let index = this.chunks.length - 1;
    let filled = index >= 0 ? this.chunks[index].rows : this.chunkRows;
    while (remaining > 0) {
      if (filled === this.chunkRows) {
        index++;
        filled = 0;
      }
      const rows = Math.min(remaining, this.chunkRows - filled);
      plan.push({ index, start: filled, rows });
      filled += rows;
      remaining -= rows;
    }
    // Allocate every new buffer first, under an error scope, so that running out of device memory
    // leaves the store as it was.
    const replaced = new Map<number, Chunk>();
    device.pushErrorScope('out-of-memory');
    for (const p of plan) {
      const old = this.chunks[p.index];
      const need = p.start + p.rows;
      if (old && old.capacity >= need) continue;
      const capacity = Math.min(this.chunkRows, Math.max(need, (old?.capacity ?? 0) * 2));
      replaced.set(p.index, {
        xb: createBuffer(device, 'xb', capacity * rowBytes, STORAGE()),
        xnorm: createBuffer(device, 'xnorm', capacity * 4, STORAGE()),
        rows: old?.rows ?? 0,
        capacity,
      });
    }
    const oom = await device.popErrorScope();
    if (oom) {
      for (const c of replaced.values()) {
        c.xb.destroy();
        c.xnorm.destroy();
      }
      throw new WebGpuUnavailableError(`adding ${n} vectors of dim ${this.d} ran out of GPU memory: ${oom.message}`);
    }
    // Commit: copy grown chunks' old rows over, write the new rows, compute their norms.
    const kernels = new Kernels(ctx, this.backend.pipelines);
    const padded = padRows(x, n, this.d, this.dpad);
    for (const [i, c] of replaced) {
      const old = this.chunks[i];
      if (old) {
        kernels.recorder.copy(old.xb, 0, c.xb, 0, old.rows * rowBytes);
        kernels.recorder.copy(old.xnorm, 0, c.xnorm, 0, old.rows * 4);
      }
    }
    await kernels.recorder.submit();
    for (const [i, c] of replaced) {
      const old = this.chunks[i];
      if (old) {
        old.xb.destroy();
        old.xnorm.destroy();
      }
      this.chunks[i] = c;
    }
    let src = 0;
    for (const p of plan) {
      const c = this.chunks[p.index];
      device.queue.writeBuffer(c.xb, p.start * rowBytes, padded, src * this.dpad, p.rows * this.dpad);
      encodeNorms(kernels, { x: c.xb, out: c.xnorm, n: p.rows, dpad: this.dpad, row0: p.start, out0: p.start });
      c.rows = p.start + p.rows;
      src += p.rows;
    }
    await kernels.recorder.submit();
    this.ntotal += n;
  }

  reset(): void {
    for (const c of this.chunks) {
      c.xb.destroy();
      c.xnorm.destroy();
    }
    this.chunks = [];
    this.ntotal = 0;
  }

  dispose(): void {
    this.reset();
  }
}

export class GpuBackend implements Backend {
  readonly kind = 'webgpu' as const;
  readonly maxK = TOPK_MAX_K;
  readonly pipelines: PipelineCache;

  private constructor(
    readonly ctx: GpuContext,
    readonly options: GpuBackendOptions,
  ) {
    this.pipelines = new PipelineCache(ctx);
  }

  /** Null when there is no adapter. */
  static async create(options: GpuBackendOptions = {}): Promise<GpuBackend | null> {
    const ctx = await GpuContext.create(options.dawnFlags ?? []);
    return ctx ? new GpuBackend(ctx, options) : null;
  }

  get description(): string {
    return this.ctx.describe();
  }

  createBaseStore(d: number): BaseStore {
    return new GpuBaseStore(this, d);
  }

  async searchFlat(
    store: BaseStore,
    xq: Float32Array,
    nq: number,
    k: number,
    metric: KernelMetric,
    timings?: SearchTimings,
  ): Promise<SearchResult> {
    if (k > this.maxK) {
      throw new InvalidArgumentError(`k must be an integer in [1, ${this.maxK}] on the WebGPU backend; got ${k}`);
    }
    this.ctx.check();
    const base = store as GpuBaseStore;
    const { d, dpad } = base;
    const qnorms = metric === 'l2' ? cpuNorms(xq, nq, d) : null;
    const runS = new Float32Array(nq * k).fill(Infinity);
    const runI = new Uint32Array(nq * k).fill(0xffffffff);
    if (timings) Object.assign(timings, { uploadMs: 0, computeMs: 0, readbackMs: 0, kernelMs: undefined });
    if (base.ntotal > 0) {
      // Query batches: each fits one binding for the queries and for the running lists.
      const maxBinding = this.ctx.maxBinding;
      const fit = Math.min(Math.floor(maxBinding / (dpad * 4)), Math.floor(maxBinding / (k * 4)));
      const batch = Math.max(1, Math.min(nq, fit, this.options.queryBatch ?? fit));
      for (let b0 = 0; b0 < nq; b0 += batch) {
        const rows = Math.min(batch, nq - b0);
        const part = await this.searchBatch(base, xq.subarray(b0 * d, (b0 + rows) * d), rows, k, metric, timings);
        runS.set(part.scores, b0 * k);
        runI.set(part.ids, b0 * k);
      }
    }
    return finalizeResults(metric, runS, runI, nq, k, qnorms);
  }

  private async searchBatch(
    base: GpuBaseStore,
    xq: Float32Array,
    nq: number,
    k: number,
    metric: KernelMetric,
    timings?: SearchTimings,
  ): Promise<{ scores: Float32Array; ids: Uint32Array }> {
    const { device } = this.ctx;
    const { d, dpad } = base;
    const maxBinding = this.ctx.maxBinding;
    const tileCols = Math.max(4, Math.min(this.options.tileCols ?? DEFAULT_TILE_COLS, base.chunkRows));
    const scoreBytes = Math.min(maxBinding, this.options.scoreTileBytes ?? DEFAULT_SCORE_TILE_BYTES);
    const queryTile = Math.max(1, Math.min(nq, Math.floor(scoreBytes / (tileCols * 4))));
    // Segments per tile row: enough parallel work in total, but each segment costs a heap of k, so
    // no more than needed; few enough lists for large k.
    const target = this.options.selectInvocations ?? (this.ctx.adapterInfo.isFallbackAdapter ? 512 : 65536);
    const nseg = Math.max(1, Math.min(MERGE_MAX_SEG, Math.ceil(target / queryTile), Math.floor(tileCols / Math.max(256, 4 * k))));
    const segLen = Math.ceil(tileCols / nseg);

    const t0 = performance.now();
    const xqBuf = createBuffer(device, 'xq', nq * dpad * 4, STORAGE(), padRows(xq, nq, d, dpad));
    const scores = createBuffer(device, 'scores', queryTile * tileCols * 4, STORAGE());
    const partS = createBuffer(device, 'part_s', queryTile * nseg * k * 4, STORAGE());
    const partI = createBuffer(device, 'part_i', queryTile * nseg * k * 4, STORAGE());
    const run = [0, 1].map((i) => ({
      s: createBuffer(device, `run_s${i}`, nq * k * 4, STORAGE()),
      i: createBuffer(device, `run_i${i}`, nq * k * 4, STORAGE()),
    }));
    const staging = createBuffer(device, 'readback', 2 * nq * k * 4, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);
    try {
      if (timings) {
        await device.queue.onSubmittedWorkDone();
        timings.uploadMs += performance.now() - t0;
      }
      const t1 = performance.now();
      const kernels = new Kernels(this.ctx, this.pipelines);
      let tiles = 0;
      for (let q0 = 0; q0 < nq; q0 += queryTile) {
        const rows = Math.min(queryTile, nq - q0);
        tiles = 0;
        let id0 = 0;
        for (const c of base.chunks) {
          for (let col0 = 0; col0 < c.rows; col0 += tileCols) {
            const cols = Math.min(tileCols, c.rows - col0);
            const [src, dst] = tiles % 2 === 0 ? [run[0], run[1]] : [run[1], run[0]];
            encodeGemmScores(kernels, { metric, xq: xqBuf, xb: c.xb, xnorm: c.xnorm, scores, q0, rows, col0, cols, dpad, ldc: tileCols });
            encodeTopk(kernels, {
              scores, outS: partS, outI: partI, rows, cols, ldc: tileCols, k, nseg, segLen, id0: id0 + col0,
              bound: tiles === 0 ? null : { s: src.s, i: src.i, row0: q0 },
            });
            encodeTopkMerge(kernels, {
              partS, partI, runInS: src.s, runInI: src.i, runOutS: dst.s, runOutI: dst.i,
              rows, k, nseg, first: tiles === 0, row0: q0,
            });
            tiles++;
          }
          id0 += c.rows;
        }
      }
      const final = run[tiles % 2];
      kernels.recorder.copy(final.s, 0, staging, 0, nq * k * 4);
      kernels.recorder.copy(final.i, 0, staging, nq * k * 4, nq * k * 4);
      const kernelMs = await kernels.recorder.submit(Boolean(timings) && this.options.timeKernels === true);
      const t2 = performance.now();
      await staging.mapAsync(GPUMapMode.READ);
      this.ctx.check();
      const bytes = staging.getMappedRange().slice(0);
      staging.unmap();
      if (timings) {
        timings.computeMs += t2 - t1;
        timings.readbackMs += performance.now() - t2;
        if (kernelMs) {
          timings.kernelMs ??= {};
          for (const [name, ms] of Object.entries(kernelMs)) timings.kernelMs[name] = (timings.kernelMs[name] ?? 0) + ms;
        }
      }
      return { scores: new Float32Array(bytes, 0, nq * k), ids: new Uint32Array(bytes, nq * k * 4, nq * k) };
    } finally {
      for (const b of [xqBuf, scores, partS, partI, staging, ...run.flatMap((r) => [r.s, r.i])]) b.destroy();
    }
  }

  dispose(): void {
    this.ctx.dispose();
  }
}
