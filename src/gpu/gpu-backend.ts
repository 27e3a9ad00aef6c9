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
import type { Backend, BaseStore, BaseStoreOptions, KMeansWorkspace, SelfJoinOptions } from '../backend.js';
import { type KernelMetric, PAD_ID } from '../kernel-facts.js';
import type { IvfLists } from '../ivf-lists.js';
import { norms as cpuNorms } from '../cpu/norms.js';
import { finalizeResults } from '../results.js';
import type { SearchResult, SearchTimings } from '../types.js';
import { InvalidArgumentError, WebGpuUnavailableError } from '../types.js';
import { GpuContext } from './context.js';
import { encodeGemmScores } from './kernels/gemm-scores.js';
import { encodePairsThreshold } from './kernels/pairs-threshold.js';
import { DEFAULT_MAX_CANDIDATES, sortTilePairs, tooManyCandidates } from '../pairs.js';
import { encodeIvfScan } from './kernels/ivf-scan.js';
import { Kernels } from './kernels/kernels.js';
import { encodeNorms } from './kernels/norms.js';
import { TOPK_MAX_K, encodeTopk } from './kernels/topk.js';
import { MERGE_MAX_SEG, encodeTopkMerge } from './kernels/topk-merge.js';
import { PipelineCache } from './pipelines.js';
import { RowBuffer } from '../row-buffer.js';
import { STORAGE, createBuffer, readBuffer } from './recorder.js';

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
  /** Candidate pairs the self-join's append buffer holds before a tile is re-run (default 2^20). */
  pairCapacity?: number;
  /**
   * Most bytes bound at once (default: the device's limit). Lower it to drive, on small data, the
   * splits that large data needs (chunks, query batches, self-join tiles).
   */
  maxBindingBytes?: number;
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

/** Per-row lists of (score, id) on the device: `s` f32 and `i` u32, row r at `r * k`. */
export interface RunLists {
  s: GPUBuffer;
  i: GPUBuffer;
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
  /** The host copy of the rows (see BaseStore.rows), unless the store was made without one. */
  private readonly host: RowBuffer | null;

  constructor(
    private readonly backend: GpuBackend,
    readonly d: number,
    options: BaseStoreOptions = {},
  ) {
    this.dpad = paddedDim(d);
    this.host = options.hostCopy === false ? null : new RowBuffer(d);
    const fit = Math.floor(backend.maxBinding / (this.dpad * 4));
    this.chunkRows = Math.max(1, Math.min(fit, backend.options.chunkRows ?? fit));
  }

  /** Rows stored: the chunks' rows, the one count of them. */
  get ntotal(): number {
    let n = 0;
    for (const c of this.chunks) n += c.rows;
    return n;
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
    // The host copy first: if it cannot grow, nothing has changed yet.
    const hostRows = this.host?.n ?? 0;
    try {
      this.host?.append(x, n);
    } catch (err) {
      for (const c of replaced.values()) {
        c.xb.destroy();
        c.xnorm.destroy();
      }
      throw err;
    }
    // Commit: copy grown chunks' old rows over, write the new rows, compute their norms. A grown
    // chunk holds the old rows too, so it stays in place if a later step fails; only the new rows'
    // counts are rolled back.
    const chunkCount = this.chunks.length;
    const lastRows = chunkCount > 0 ? this.chunks[chunkCount - 1].rows : 0;
    try {
      await this.commit(x, n, plan, replaced);
    } catch (err) {
      this.host?.truncate(hostRows);
      for (const c of replaced.values()) {
        if (this.chunks.includes(c)) continue; // swapped in: holds the old rows
        c.xb.destroy();
        c.xnorm.destroy();
      }
      if (chunkCount > 0) this.chunks[chunkCount - 1].rows = lastRows;
      for (const c of this.chunks.splice(chunkCount)) {
        c.xb.destroy();
        c.xnorm.destroy();
      }
      throw err;
    }
  }

  private async commit(x: Float32Array, n: number, plan: { index: number; start: number; rows: number }[], replaced: Map<number, Chunk>): Promise<void> {
    const { ctx } = this.backend;
    const device = ctx.device;
    const rowBytes = this.dpad * 4;
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
  }

  rows(): Float32Array {
    if (!this.host) throw new Error('this store was made without a host copy (hostCopy: false)');
    return this.host.view();
  }

  reset(): void {
    for (const c of this.chunks) {
      c.xb.destroy();
      c.xnorm.destroy();
    }
    this.chunks = [];
    this.host?.clear();
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
    const m = options.maxBindingBytes;
    if (m !== undefined && !(Number.isInteger(m) && m >= 256)) {
      throw new InvalidArgumentError(`maxBindingBytes must be an integer >= 256; got ${String(m)}`);
    }
    const ctx = await GpuContext.create(options.dawnFlags ?? []);
    return ctx ? new GpuBackend(ctx, options) : null;
  }

  get description(): string {
    return this.ctx.describe();
  }

  /** The largest binding this backend uses, in bytes: the device's, or lower (GpuBackendOptions.maxBindingBytes). */
  get maxBinding(): number {
    return Math.min(this.ctx.maxBinding, this.options.maxBindingBytes ?? Infinity);
  }

  createBaseStore(d: number, options?: BaseStoreOptions): BaseStore {
    return new GpuBaseStore(this, d, options);
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
    const runI = new Uint32Array(nq * k).fill(PAD_ID);
    if (timings) Object.assign(timings, { uploadMs: 0, computeMs: 0, readbackMs: 0, kernelMs: undefined });
    if (base.ntotal > 0) {
      // Query batches: each fits one binding for the queries and for the running lists.
      const maxBinding = this.maxBinding;
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
    const xqBuf = await this.uploadQueries(base, xq, nq, timings);
    const temps: GPUBuffer[] = [xqBuf];
    try {
      const kernels = new Kernels(this.ctx, this.pipelines);
      const final = this.encodeFlatSearch(kernels, base, xqBuf, nq, k, metric, temps);
      return await this.readLists(kernels, final, nq * k, timings);
    } finally {
      for (const b of temps) b.destroy();
    }
  }

  /** Uploads queries padded to base.dpad; with `timings`, waits for the upload and times it. */
  private async uploadQueries(base: GpuBaseStore, xq: Float32Array, nq: number, timings?: SearchTimings): Promise<GPUBuffer> {
    const t0 = performance.now();
    const buf = createBuffer(this.ctx.device, 'xq', nq * base.dpad * 4, STORAGE(), padRows(xq, nq, base.d, base.dpad));
    if (timings) {
      await this.ctx.device.queue.onSubmittedWorkDone();
      timings.uploadMs += performance.now() - t0;
    }
    return buf;
  }

  /**
   * Score tiles for `base`: `tileCols` base rows by `queryTile` query rows, within the score
   * buffer's budget; no wider than the data, so a small base (centroids) leaves room for more rows.
   */
  private scoreTiles(base: GpuBaseStore, nq: number): { tileCols: number; queryTile: number } {
    const tileCols = Math.max(4, Math.min(this.options.tileCols ?? DEFAULT_TILE_COLS, base.chunkRows, Math.ceil(base.ntotal / 4) * 4));
    const scoreBytes = Math.min(this.maxBinding, this.options.scoreTileBytes ?? DEFAULT_SCORE_TILE_BYTES);
    // At most 65535 rows: the pairs-threshold dispatch has one workgroup row per query row.
    return { tileCols, queryTile: Math.max(1, Math.min(nq, 65535, Math.floor(scoreBytes / (tileCols * 4)))) };
  }

  /**
   * Records a flat search of `nq` queries (rows of `xqBuf`, padded to base.dpad) against `base`
   * and returns the buffers holding each query's k best (score, id), best first, `nq * k`.
   * Scratch buffers it creates are pushed to `temps`, for the caller to destroy after submitting.
   */
  encodeFlatSearch(
    kernels: Kernels,
    base: GpuBaseStore,
    xqBuf: GPUBuffer,
    nq: number,
    k: number,
    metric: KernelMetric,
    temps: GPUBuffer[],
  ): RunLists {
    const { device } = this.ctx;
    const { dpad } = base;
    const { tileCols, queryTile } = this.scoreTiles(base, nq);
    // Segments per tile row: enough parallel work in total, but each segment costs a heap of k, so
    // no more than needed; few enough lists for large k.
    const nseg = Math.max(1, Math.min(MERGE_MAX_SEG, Math.ceil(this.selectInvocations / queryTile), Math.floor(tileCols / Math.max(256, 4 * k))));
    const segLen = Math.ceil(tileCols / nseg);
    const scores = createBuffer(device, 'scores', queryTile * tileCols * 4, STORAGE());
    const partS = createBuffer(device, 'part_s', queryTile * nseg * k * 4, STORAGE());
    const partI = createBuffer(device, 'part_i', queryTile * nseg * k * 4, STORAGE());
    const run = [this.runLists(nq * k), this.runLists(nq * k)];
    temps.push(scores, partS, partI, ...run.flatMap((r) => [r.s, r.i]));
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
    return run[tiles % 2];
  }

  /** A pair of buffers for `len` (score, id) entries. */
  runLists(len: number): RunLists {
    const { device } = this.ctx;
    return { s: createBuffer(device, 'run_s', len * 4, STORAGE()), i: createBuffer(device, 'run_i', len * 4, STORAGE()) };
  }

  /** Selection invocations to aim for per dispatch (see GpuBackendOptions.selectInvocations). */
  get selectInvocations(): number {
    return this.options.selectInvocations ?? (this.ctx.adapterInfo.isFallbackAdapter ? 512 : 65536);
  }

  /**
   * Submits what `kernels` recorded plus a copy of `lists` (`len` entries) to a staging buffer, and
   * reads them back: one submit, one readback. Fills compute / readback / kernel times.
   */
  async readLists(
    kernels: Kernels,
    lists: RunLists,
    len: number,
    timings?: SearchTimings,
    /** Entries to copy from `s` and from `i`, when fewer than `len`. */
    parts: [number, number] = [len, len],
  ): Promise<{ scores: Float32Array; ids: Uint32Array }> {
    const staging = createBuffer(this.ctx.device, 'readback', 2 * len * 4, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);
    try {
      const t1 = performance.now();
      kernels.recorder.copy(lists.s, 0, staging, 0, parts[0] * 4);
      kernels.recorder.copy(lists.i, 0, staging, len * 4, parts[1] * 4);
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
      return { scores: new Float32Array(bytes, 0, len), ids: new Uint32Array(bytes, len * 4, len) };
    } finally {
      staging.destroy();
    }
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
    for (const [name, v] of [['k', k], ['nprobe', nprobe]] as const) {
      if (v > this.maxK) throw new InvalidArgumentError(`${name} must be an integer in [1, ${this.maxK}] on the WebGPU backend; got ${v}`);
    }
    this.ctx.check();
    const { device } = this.ctx;
    const base = coarse as GpuBaseStore;
    const { d, dpad } = base;
    if (timings) Object.assign(timings, { uploadMs: 0, computeMs: 0, readbackMs: 0, kernelMs: undefined });
    const dev = this.ivfDeviceLists(lists, dpad);
    const xqBuf = await this.uploadQueries(base, xq, nq, timings);
    const temps: GPUBuffer[] = [xqBuf];
    try {
      const kernels = new Kernels(this.ctx, this.pipelines);
      const probes = this.encodeFlatSearch(kernels, base, xqBuf, nq, nprobe, metric, temps);
      // Query tiles: each tile's partial lists (rows x nprobe x nseg x k) fit the score budget.
      const budget = Math.min(this.maxBinding, this.options.scoreTileBytes ?? DEFAULT_SCORE_TILE_BYTES);
      const rowsPerTile = Math.max(1, Math.min(nq, Math.floor(budget / (nprobe * k * 4))));
      const nseg = Math.max(1, Math.min(8, Math.ceil(this.selectInvocations / (rowsPerTile * nprobe)), Math.floor(budget / (rowsPerTile * nprobe * k * 4))));
      const nlists = nprobe * nseg;
      const partS = createBuffer(device, 'part_s', rowsPerTile * nlists * k * 4, STORAGE());
      const partI = createBuffer(device, 'part_i', rowsPerTile * nlists * k * 4, STORAGE());
      const run = [this.runLists(nq * k), this.runLists(nq * k)];
      temps.push(partS, partI, ...run.flatMap((r) => [r.s, r.i]));
      let rounds = 0;
      for (let q0 = 0; q0 < nq; q0 += rowsPerTile) {
        const rows = Math.min(rowsPerTile, nq - q0);
        encodeIvfScan(kernels, {
          metric, xq: xqBuf, probes: probes.i, offsets: dev.offsets, xb: dev.xb, xnorm: dev.xnorm, ids: dev.ids,
          outS: partS, outI: partI, rows, k, nprobe, nseg, dpad, q0, row0: q0,
        });
        rounds = 0;
        for (let seg0 = 0; seg0 < nlists; seg0 += MERGE_MAX_SEG, rounds++) {
          const [src, dst] = rounds % 2 === 0 ? [run[0], run[1]] : [run[1], run[0]];
          encodeTopkMerge(kernels, {
            partS, partI, runInS: src.s, runInI: src.i, runOutS: dst.s, runOutI: dst.i,
            rows, k, nseg: Math.min(MERGE_MAX_SEG, nlists - seg0), first: seg0 === 0, row0: q0, stride: nlists, seg0,
          });
        }
      }
      const out = await this.readLists(kernels, run[rounds % 2], nq * k, timings);
      return finalizeResults(metric, out.scores, out.ids, nq, k, metric === 'l2' ? cpuNorms(xq, nq, d) : null);
    } finally {
      for (const b of temps) b.destroy();
    }
  }

  /** Device copies of IVF lists in CSR layout, re-uploaded when the lists have changed. */
  private readonly ivfCache = new WeakMap<IvfLists, { version: number; xb: GPUBuffer; xnorm: GPUBuffer; ids: GPUBuffer; offsets: GPUBuffer }>();

  private ivfDeviceLists(lists: IvfLists, dpad: number): { xb: GPUBuffer; xnorm: GPUBuffer; ids: GPUBuffer; offsets: GPUBuffer } {
    const hit = this.ivfCache.get(lists);
    if (hit && hit.version === lists.version) return hit;
    if (hit) for (const b of [hit.xb, hit.xnorm, hit.ids, hit.offsets]) b.destroy();
    const csr = lists.csr(dpad);
    if (csr.xb.byteLength > this.maxBinding) {
      throw new WebGpuUnavailableError(
        `the IVF lists hold ${csr.xb.byteLength} bytes of vectors; this device binds at most ${this.maxBinding} bytes at once`,
      );
    }
    const { device } = this.ctx;
    const entry = {
      version: lists.version,
      xb: createBuffer(device, 'ivf_xb', csr.xb.byteLength, STORAGE(), csr.xb),
      xnorm: createBuffer(device, 'ivf_xnorm', csr.xnorm.byteLength, STORAGE(), csr.xnorm),
      ids: createBuffer(device, 'ivf_ids', csr.ids.byteLength, STORAGE(), csr.ids),
      offsets: createBuffer(device, 'ivf_offsets', csr.offsets.byteLength, STORAGE(), csr.offsets),
    };
    this.ivfCache.set(lists, entry);
    return entry;
  }

  async selfJoinCandidates(store: BaseStore, metric: KernelMetric, limit: number, rel: number, options: SelfJoinOptions): Promise<number> {
    this.ctx.check();
    const { device } = this.ctx;
    const base = store as GpuBaseStore;
    const ntotal = base.ntotal;
    const maxCandidates = options.maxCandidates ?? DEFAULT_MAX_CANDIDATES;
    // Pairs a tile may append: one binding's worth.
    const maxTilePairs = Math.floor(this.maxBinding / 8);
    const { tileCols, queryTile } = this.scoreTiles(base, ntotal);
    const scores = createBuffer(device, 'scores', queryTile * tileCols * 4, STORAGE());
    const count = createBuffer(device, 'pair_count', 4, STORAGE());
    let capacity = Math.min(maxTilePairs, Math.max(16, this.options.pairCapacity ?? 1 << 20));
    let pairs = createBuffer(device, 'pairs', capacity * 8, STORAGE());
    let total = 0;
    let rowsDone = 0;
    try {
      // Chunk starts, as global ids.
      const starts: number[] = [];
      base.chunks.reduce((id, c) => (starts.push(id), id + c.rows), 0);
      for (let a = 0; a < base.chunks.length; a++) {
        const A = base.chunks[a];
        // Rows per tile: queryTile, halved while a tile has more pairs than one binding holds.
        let step = queryTile;
        for (let r0 = 0; r0 < A.rows; ) {
          let rows: number;
          const q0 = starts[a] + r0;
          // Run the query tile; on overflow, run it again with room for every pair it has, or with
          // fewer rows when they would not fit one binding.
          let block: Uint32Array;
          for (;;) {
            rows = Math.min(step, A.rows - r0);
            const kernels = new Kernels(this.ctx, this.pipelines);
            kernels.recorder.clear(count);
            for (let b = a; b < base.chunks.length; b++) {
              const B = base.chunks[b];
              for (let col0 = 0; col0 < B.rows; col0 += tileCols) {
                const cols = Math.min(tileCols, B.rows - col0);
                if (starts[b] + col0 + cols <= q0 + 1) continue; // entirely left of the diagonal
                encodeGemmScores(kernels, { metric, xq: A.xb, xb: B.xb, xnorm: B.xnorm, scores, q0: r0, rows, col0, cols, dpad: base.dpad, ldc: tileCols });
                encodePairsThreshold(kernels, {
                  metric, scores, xnormQ: A.xnorm, xnormB: B.xnorm, count, pairs, rows, cols, ldc: tileCols,
                  q0, id0: starts[b] + col0, limit, rel, capacity, qn0: r0, cn0: col0,
                });
              }
            }
            await kernels.recorder.submit();
            const n = new Uint32Array(await readBuffer(this.ctx, count, 0, 4))[0];
            // The count is exact even past capacity: an explosion is reported before any buffer grows.
            if (total + n > maxCandidates) throw tooManyCandidates(maxCandidates, q0, ntotal);
            if (n > maxTilePairs) {
              if (rows === 1) {
                throw new InvalidArgumentError(
                  `row ${q0} alone has ${n} candidate pairs, more than one binding holds (${maxTilePairs}); use a stricter threshold`,
                );
              }
              step = Math.max(1, Math.floor(rows / 2));
              continue;
            }
            if (n <= capacity) {
              block = n > 0 ? new Uint32Array(await readBuffer(this.ctx, pairs, 0, n * 8)) : new Uint32Array(0);
              total += n;
              break;
            }
            pairs.destroy();
            capacity = n;
            pairs = createBuffer(device, 'pairs', capacity * 8, STORAGE());
          }
          rowsDone += rows;
          r0 += rows;
          step = Math.min(queryTile, 2 * step); // back towards full tiles after a dense region
          // Appended in whatever order the invocations ran: sort this tile's pairs only.
          options.onPairs(sortTilePairs(block, q0, rows, false), rowsDone);
        }
      }
    } finally {
      scores.destroy();
      count.destroy();
      pairs.destroy();
    }
    return total;
  }

  async createKMeansWorkspace(x: Float32Array, n: number, d: number, nc: number): Promise<KMeansWorkspace> {
    const { GpuKMeansWorkspace } = await import('./kmeans-workspace.js');
    return GpuKMeansWorkspace.create(this, x, n, d, nc);
  }

  dispose(): void {
    this.ctx.dispose();
  }
}
