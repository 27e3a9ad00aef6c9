/**
 * The WebGPU device (see src/device.ts): buffers from a pool, kernel calls recorded as WGSL
 * dispatches and submitted together at the next read or flush (one submit, one readback per plan
 * step), bind groups cached by the recorder.
 */
import type { Device, DeviceBuffer, DeviceLimits, DeviceOptions, DeviceTuning, KernelCall } from '../device.js';
import { checkMaxBindingBytes, checkTuning } from '../device.js';
import type { SearchTimings } from '../types.js';

import { BufferPool, type PoolStats } from './buffer-pool.js';
import { GpuContext } from './context.js';
import { type GemmChoice, chooseGemmVariant, timeGemmVariants } from './kernel-choice.js';
import { Kernels } from './kernels/kernels.js';
import { GPU_MAX_K, type GemmVariantOption, checkGemmVariantOption, encode, gemmVariants, workgroupTile } from './kernels/registry.js';
import { PipelineCache } from './pipelines.js';
import { Recorder, STORAGE } from './recorder.js';
import { InvalidArgumentError, WebGpuUnavailableError } from '../errors.js';

export interface GpuDeviceOptions extends DeviceOptions {
  /** Time each kernel with GPU timestamp queries, where the adapter has them (default false). */
  timeKernels?: boolean;
  /** Options for Dawn's `create()`, such as `backend=vulkan` or `adapter=NAME`. */
  dawnFlags?: string[];
  /** A GPUDevice the caller made (a page's), used instead of requesting one; dispose() leaves it alive. */
  device?: GPUDevice;
  /** Bytes of released buffers the pool keeps for reuse (default 256 MiB); beyond, they are destroyed. */
  poolIdleBytes?: number;
  /** The gemm-scores variant: `auto` (default) measures once per adapter and caches (src/gpu/kernel-choice.ts). */
  gemmVariant?: GemmVariantOption;
}

class GpuDeviceBuffer implements DeviceBuffer {
  constructor(
    readonly label: string,
    readonly size: number,
    readonly gpu: GPUBuffer,
  ) {}
}

const STAGING = (): number => GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST;

export class GpuDevice implements Device {
  readonly kind = 'webgpu' as const;
  readonly limits: DeviceLimits;
  readonly tuning: Required<DeviceTuning>;
  readonly kernels: Kernels;
  private readonly pool: BufferPool;
  private readonly recorder: Recorder;
  /** Submitted work and allocation checks not yet waited for; `settle` surfaces their errors. */
  private inFlight: Promise<unknown>[] = [];
  /** Released buffers the pool did not keep, to destroy once the calls recorded so far are submitted. */
  private toDestroy: GPUBuffer[] = [];

  private constructor(
    readonly ctx: GpuContext,
    private readonly options: GpuDeviceOptions,
    readonly pipelines: PipelineCache,
    /** The gemm-scores variant this device runs, and how it was chosen. */
    readonly gemm: GemmChoice,
  ) {
    this.pool = new BufferPool(ctx.device, ctx.maxBinding, options.poolIdleBytes);
    this.recorder = new Recorder(ctx, this.pool);
    this.kernels = new Kernels(ctx, this.pipelines, this.recorder, gemm.variant);
    this.limits = {
      maxBindingBytes: Math.min(ctx.maxBinding, options.maxBindingBytes ?? Infinity),
      maxK: GPU_MAX_K,
      maxTileCols: workgroupTile(this.kernels, gemm.variant).cols * this.kernels.maxGroups,
    };
    const fallback = ctx.adapterInfo.isFallbackAdapter;
    this.tuning = {
      tileCols: options.tileCols ?? 16384,
      scoreTileBytes: options.scoreTileBytes ?? 64 << 20,
      queryBatch: options.queryBatch ?? Infinity,
      chunkRows: options.chunkRows ?? Infinity,
      selectInvocations: options.selectInvocations ?? (fallback ? 512 : 65536),
      pairCapacity: options.pairCapacity ?? 1 << 20,
      scanSegments: options.scanSegments ?? 8,
      ivfStrategy: options.ivfStrategy ?? 'auto',
      kmeansBounds: options.kmeansBounds ?? fallback,
      ivfHalfScan: options.ivfHalfScan ?? fallback,
      hostCopy: options.hostCopy ?? !fallback,
      graphTeam: options.graphTeam ?? (fallback ? 1 : 'auto'),
    };
  }

  /** Null when there is no adapter. */
  static async create(options: GpuDeviceOptions = {}): Promise<GpuDevice | null> {
    checkMaxBindingBytes(options.maxBindingBytes);
    checkTuning(options, ['timeKernels', 'dawnFlags', 'device', 'poolIdleBytes', 'gemmVariant']);
    checkGemmVariantOption(options.gemmVariant);
    const ctx = options.device ? GpuContext.adopt(options.device) : await GpuContext.create(options.dawnFlags ?? []);
    if (!ctx) return null;
    // Its pipelines compiled while measuring are the device's.
    const pipelines = new PipelineCache(ctx);
    let gemm: GemmChoice;
    try {
      gemm = await chooseGemmVariant(ctx.adapterInfo, gemmVariants(ctx), options.gemmVariant ?? 'auto', (v) => timeGemmVariants(ctx, pipelines, v));
    } catch (err) {
      ctx.dispose(); // else the process could not exit
      throw err;
    }
    return new GpuDevice(ctx, options, pipelines, gemm);
  }

  get description(): string {
    return this.ctx.describe(`gemm-scores ${this.gemm.variant}, ${this.gemm.source}`);
  }

  /** Buffers created and reused, and bind groups created, so far (for tests and benchmarks of the pool). */
  poolStats(): PoolStats & { bindGroups: number } {
    return { ...this.pool.snapshot(), bindGroups: this.recorder.bindGroupsCreated };
  }

  buffer(label: string, bytes: number): DeviceBuffer {
    this.ctx.check();
    if (bytes > this.limits.maxBindingBytes) {
      throw new InvalidArgumentError(`${label}: ${bytes} bytes exceed one binding (${this.limits.maxBindingBytes}); a plan must split it`);
    }
    const reused = this.pool.reuse(label, bytes, STORAGE());
    if (reused) return new GpuDeviceBuffer(label, reused.size, reused);
    // A new buffer: out-of-memory surfaces at the next flush or read (Dawn reports it asynchronously).
    const { device } = this.ctx;
    device.pushErrorScope('out-of-memory');
    const gpu = this.pool.create(label, bytes, STORAGE());
    this.track(
      device.popErrorScope().then((e) => {
        if (!e) return;
        this.pool.discard(gpu); // never handed out again
        throw new WebGpuUnavailableError(`allocating ${bytes} bytes for ${label} ran out of GPU memory: ${e.message}`);
      }),
    );
    return new GpuDeviceBuffer(label, gpu.size, gpu);
  }

  /** GPU memory is not the host's: stores keep a host copy or read back. */
  hostView(): null {
    return null;
  }

  release(buffer: DeviceBuffer): void {
    const gpu = gpuOf(buffer);
    if (this.pool.release(gpu)) return; // reused by later calls, which run after the recorded ones
    // Not kept: destroy it, but not before the calls already recorded that use it are submitted.
    if (this.recorder.pending) this.toDestroy.push(gpu);
    else this.pool.discard(gpu);
  }

  discard(): void {
    this.recorder.discard();
    this.destroyReleased();
  }

  upload(buffer: DeviceBuffer, byteOffset: number, data: ArrayBufferView): void {
    // Queue writes run before commands not yet submitted: submit what was called before.
    this.submitPending();
    this.ctx.device.queue.writeBuffer(gpuOf(buffer), byteOffset, data.buffer, data.byteOffset, data.byteLength);
  }

  clear(buffer: DeviceBuffer): void {
    this.recorder.clear(gpuOf(buffer));
  }

  copy(src: DeviceBuffer, srcOffset: number, dst: DeviceBuffer, dstOffset: number, bytes: number): void {
    this.recorder.copy(gpuOf(src), srcOffset, gpuOf(dst), dstOffset, bytes);
  }

  dispatch(call: KernelCall): void {
    encode(this.kernels, call, gpuOf);
  }

  async read(ranges: { buffer: DeviceBuffer; offset: number; bytes: number }[], timings?: SearchTimings): Promise<ArrayBuffer[]> {
    const padded = ranges.map((r) => Math.ceil(r.bytes / 4) * 4);
    const total = padded.reduce((a, b) => a + b, 0);
    const staging = this.pool.acquire('readback', Math.max(16, total), STAGING());
    try {
      let at = 0;
      ranges.forEach((r, i) => {
        this.recorder.copy(gpuOf(r.buffer), r.offset, staging, at, padded[i]);
        at += padded[i];
      });
      const t1 = performance.now();
      const done = this.submitPending(Boolean(timings) && this.options.timeKernels === true);
      await this.settle(); // throws the submit's error too, and leaves nothing behind for the next read
      const kernelMs = await done;
      const t2 = performance.now();
      await this.ctx.wait(staging.mapAsync(GPUMapMode.READ, 0, Math.max(16, total)));
      this.ctx.check();
      const bytes = staging.getMappedRange(0, Math.max(16, total)).slice(0);
      staging.unmap();
      if (timings) {
        timings.computeMs += t2 - t1;
        timings.readbackMs += performance.now() - t2;
        if (kernelMs) {
          timings.kernelMs ??= {};
          for (const [name, ms] of Object.entries(kernelMs)) timings.kernelMs[name] = (timings.kernelMs[name] ?? 0) + ms;
        }
      }
      at = 0;
      return ranges.map((r, i) => {
        const out = bytes.slice(at, at + r.bytes);
        at += padded[i];
        return out;
      });
    } finally {
      this.pool.releaseNow(staging); // its copy has run
    }
  }

  async flush(): Promise<void> {
    this.submitPending();
    await this.settle();
  }

  dispose(): void {
    this.pool.destroyAll();
    this.ctx.dispose();
  }

  /** Submits what is recorded (if anything); the promise settles when the GPU has run it. */
  private submitPending(timed = false): Promise<Record<string, number> | null> {
    if (!this.recorder.pending) return Promise.resolve(null);
    const done = this.recorder.submit(timed);
    this.track(done);
    this.destroyReleased();
    return done;
  }

  /** Destroys released buffers once nothing recorded and unsubmitted uses them (submitted work keeps them alive). */
  private destroyReleased(): void {
    for (const b of this.toDestroy.splice(0)) this.pool.discard(b);
  }

  private track(p: Promise<unknown>): void {
    p.catch(() => {}); // reported by settle(), not as an unhandled rejection
    this.inFlight.push(p);
  }

  /** Waits for everything submitted; throws the first error among them. */
  private async settle(): Promise<void> {
    const all = this.inFlight;
    this.inFlight = [];
    const results = await Promise.allSettled(all);
    for (const r of results) if (r.status === 'rejected') throw r.reason;
  }
}

function gpuOf(buffer: DeviceBuffer): GPUBuffer {
  return (buffer as GpuDeviceBuffer).gpu;
}
