/**
 * The CPU device (see src/device.ts): buffers are ArrayBuffers and each kernel call runs its twin at
 * once, in call order. Never imports webgpu. It honours the same binding limit as the GPU device
 * (1 GiB unless lowered), so plans split data here exactly as they do on the GPU.
 */
import type { Device, DeviceBuffer, DeviceKind, DeviceLimits, DeviceOptions, DeviceTuning, KernelCall } from '../device.js';
import { checkMaxBindingBytes, checkTuning } from '../device.js';
import { PairList } from '../common/pairs.js';
import type { SearchTimings } from '../types.js';
import { InvalidArgumentError } from '../types.js';
import { gemmScores } from './gemm-scores.js';
import { ivfScan } from './ivf-scan.js';
import { kmeansPartial, kmeansReduce } from './kmeans-update.js';
import { maskScores } from './mask-scores.js';
import { norms } from './norms.js';
import { gatherRows } from './gather-rows.js';
import { pairsThreshold } from './pairs-threshold.js';
import { selectRadix } from './select-radix.js';
import { sqScores } from './sq-scores.js';
import { pqScores } from './pq-scores.js';
import { hammingScores } from './hamming-scores.js';
import { pqTables } from './pq-tables.js';
import { topk } from './topk.js';
import { topkMerge } from './topk-merge.js';
import { platform } from '../platform/platform.js';

/** The CPU has no device limit on k; this bounds memory per search (nq * k pairs). */
export const CPU_MAX_K = 1 << 20;
/** Largest CPU "binding": chunks of stores and tiles stay below it. */
const CPU_MAX_BINDING = 1 << 30;

export class CpuBuffer implements DeviceBuffer {
  readonly f32: Float32Array;
  readonly u32: Uint32Array;
  constructor(
    readonly label: string,
    readonly size: number,
  ) {
    const bytes = new ArrayBuffer(size);
    this.f32 = new Float32Array(bytes);
    this.u32 = new Uint32Array(bytes);
  }
}

/**
 * The host-memory device: every kernel's twin. The gpu.js device (src/gpujs/gpujs-device.ts) is
 * this device with some kernels run through gpu.js instead: it passes its own kind, description
 * and tuning defaults, and overrides `dispatch`.
 */
export class CpuDevice implements Device {
  readonly kind: DeviceKind;
  readonly description: string;
  readonly limits: DeviceLimits;
  readonly tuning: Required<DeviceTuning>;

  constructor(
    options: DeviceOptions = {},
    who: { kind: DeviceKind; description: string; defaults?: DeviceTuning } = { kind: 'cpu', description: 'cpu (TypeScript twins, single thread)' },
  ) {
    checkMaxBindingBytes(options.maxBindingBytes);
    checkTuning(options);
    this.kind = who.kind;
    this.description = who.description;
    this.limits = { maxBindingBytes: Math.min(CPU_MAX_BINDING, options.maxBindingBytes ?? Infinity), maxK: CPU_MAX_K, maxTileCols: Infinity };
    // Small tiles: a 64 x 4096 score tile (1 MiB) stays in cache.
    const t: DeviceTuning = { ...who.defaults, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) };
    this.tuning = {
      tileCols: t.tileCols ?? 4096,
      scoreTileBytes: t.scoreTileBytes ?? 1 << 20,
      queryBatch: t.queryBatch ?? Infinity,
      chunkRows: t.chunkRows ?? Infinity,
      selectInvocations: t.selectInvocations ?? 1,
      pairCapacity: t.pairCapacity ?? 1 << 20,
      scanSegments: t.scanSegments ?? 1,
      ivfStrategy: t.ivfStrategy ?? 'auto',
      kmeansBounds: t.kmeansBounds ?? true,
      ivfHalfScan: t.ivfHalfScan ?? false,
      // Rows are read in place: there is never a copy to keep.
      hostCopy: t.hostCopy ?? false,
    };
  }

  buffer(label: string, bytes: number): DeviceBuffer {
    if (bytes > this.limits.maxBindingBytes) {
      throw new InvalidArgumentError(`${label}: ${bytes} bytes exceed one binding (${this.limits.maxBindingBytes}); a plan must split it`);
    }
    return new CpuBuffer(label, Math.max(16, Math.ceil(bytes / 4) * 4));
  }

  hostView(buffer: DeviceBuffer): Float32Array {
    return cpuOf(buffer).f32;
  }

  release(): void {}

  upload(buffer: DeviceBuffer, byteOffset: number, data: ArrayBufferView): void {
    new Uint8Array(cpuOf(buffer).f32.buffer, byteOffset, data.byteLength).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  }

  clear(buffer: DeviceBuffer): void {
    cpuOf(buffer).u32.fill(0);
  }

  copy(src: DeviceBuffer, srcOffset: number, dst: DeviceBuffer, dstOffset: number, bytes: number): void {
    new Uint8Array(cpuOf(dst).f32.buffer, dstOffset, bytes).set(new Uint8Array(cpuOf(src).f32.buffer, srcOffset, bytes));
  }

  dispatch(c: KernelCall): void {
    const t0 = performance.now();
    this.runTwin(c);
    this.busyMs += performance.now() - t0;
  }

  /** Milliseconds the kernels ran since the last read or flush (what `read` reports as compute). */
  protected busyMs = 0;

  /** Runs one call's CPU twin on the buffers' host memory. */
  protected runTwin(c: KernelCall): void {
    const f = (b: DeviceBuffer): Float32Array => cpuOf(b).f32;
    const u = (b: DeviceBuffer): Uint32Array => cpuOf(b).u32;
    switch (c.kernel) {
      case 'norms':
        norms(f(c.x).subarray(c.row0 * c.dpad), c.n, c.dpad, f(c.out).subarray(c.out0));
        return;
      case 'gather-rows':
        gatherRows(u(c.x), u(c.rows), c.rows0, c.n, c.words, u(c.out), c.out0);
        return;
      case 'gemm-scores':
        gemmScores(c.metric, f(c.xq), c.q0, c.rows, f(c.xb), f(c.xnorm), c.col0, c.cols, c.dpad, f(c.scores), c.ldc);
        return;
      case 'topk':
        topk(f(c.scores), c.ldc, c.rows, c.cols, c.id0, c.k, c.nseg, c.segLen, f(c.outS), u(c.outI),
          c.bound ? { s: f(c.bound.s), i: u(c.bound.i), row0: c.bound.row0 } : null);
        return;
      case 'topk-merge': {
        const at = c.row0 * c.k;
        const len = c.rows * c.k;
        topkMerge(f(c.partS), u(c.partI), c.rows, c.nseg, c.k,
          c.first ? null : f(c.runInS).subarray(at, at + len), c.first ? null : u(c.runInI).subarray(at, at + len),
          f(c.runOutS).subarray(at, at + len), u(c.runOutI).subarray(at, at + len), c.stride ?? c.nseg, c.seg0 ?? 0);
        return;
      }
      case 'select-radix': {
        const at = c.row0 * c.k;
        const len = c.rows * c.k;
        selectRadix(f(c.scores), c.ldc, c.rows, c.cols, c.id0, c.ids ? u(c.ids) : null, c.k,
          c.first ? null : f(c.runInS).subarray(at, at + len), c.first ? null : u(c.runInI).subarray(at, at + len),
          f(c.runOutS).subarray(at, at + len), u(c.runOutI).subarray(at, at + len));
        return;
      }
      case 'ivf-scan':
        ivfScan(c.metric, f(c.xq), c.q0, c.rows, u(c.lists), c.probe0, c.nprobe, c.nseg, f(c.xb), c.xh ? u(c.xh) : null, f(c.xnorm), u(c.ids),
          c.mask ? u(c.mask) : null, c.maskBit0, c.dpad, c.k, f(c.outS), u(c.outI));
        return;
      case 'pairs-threshold': {
        const found = new PairList();
        pairsThreshold(c.metric, c.allPairs, f(c.scores), c.ldc, c.rows, c.cols, c.q0, c.id0, f(c.xnormQ).subarray(c.qn0), f(c.xnormB).subarray(c.cn0),
          c.limit, c.rel, found);
        // As the shader: the count goes on past capacity; pairs beyond it are dropped.
        const count = u(c.count);
        const pairs = u(c.pairs);
        const list = found.view();
        for (let p = 0; p < found.length; p++, count[0]++) {
          if (count[0] < c.capacity) {
            pairs[2 * count[0]] = list[2 * p];
            pairs[2 * count[0] + 1] = list[2 * p + 1];
          }
        }
        return;
      }
      case 'sq-scores':
        sqScores(c.metric, c.kind, f(c.xq), f(c.qbias), c.q0, c.rows, u(c.codes), f(c.xnorm), c.col0, c.cols, c.dpad, c.codeWords, f(c.scores), c.ldc);
        return;
      case 'pq-tables':
        pqTables(c.metric, f(c.xq), f(c.codebook), f(c.luts), c.q0, c.rows, c.M, c.ksub, c.dsub, c.dpad);
        return;
      case 'pq-scores':
        pqScores(f(c.luts), f(c.qbias), c.q0, c.rows, u(c.codes), c.col0, c.cols, c.M, c.nbits, c.codeWords, f(c.scores), c.ldc);
        return;
      case 'hamming-scores':
        hammingScores(u(c.xq), c.q0, c.rows, u(c.codes), c.col0, c.cols, c.codeWords, f(c.scores), c.ldc);
        return;
      case 'mask-scores':
        maskScores(f(c.scores), c.ldc, c.rows, c.cols, u(c.mask), c.bit0);
        return;
      case 'kmeans-partial':
        kmeansPartial(f(c.x), f(c.xnorm), f(c.score), u(c.label), c.n, c.p0, c.dpad, c.nc, c.block, f(c.sums), u(c.counts), f(c.obj));
        return;
      case 'kmeans-reduce':
        kmeansReduce(f(c.sums), u(c.counts), c.nc, c.dpad, c.nblocks, f(c.centroids), u(c.outCounts));
        return;
    }
  }

  async read(ranges: { buffer: DeviceBuffer; offset: number; bytes: number }[], timings?: SearchTimings): Promise<ArrayBuffer[]> {
    // The calls already ran, at dispatch: their time is the compute; there is nothing to read back.
    if (timings) timings.computeMs += this.busyMs;
    this.busyMs = 0;
    await platform.yieldToEvents();
    return ranges.map((r) => (cpuOf(r.buffer).f32.buffer as ArrayBuffer).slice(r.offset, r.offset + r.bytes));
  }

  async flush(): Promise<void> {
    this.busyMs = 0;
    await platform.yieldToEvents();
  }

  /** The calls already ran: nothing waits to be dropped. */
  discard(): void {}

  dispose(): void {}
}

/** The host memory of a CPU (or gpu.js) device's buffer. */
export function cpuOf(buffer: DeviceBuffer): CpuBuffer {
  return buffer as CpuBuffer;
}

