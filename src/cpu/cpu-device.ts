/**
 * The CPU device (see src/device.ts): buffers are ArrayBuffers and each kernel call runs its twin at
 * once, in call order. Never imports webgpu. It honours the same binding limit as the GPU device
 * (1 GiB unless lowered), so plans split data here exactly as they do on the GPU.
 */
import type { Device, DeviceBuffer, DeviceKind, DeviceLimits, DeviceOptions, DeviceTuning, KernelCall } from '../device.js';
import { checkMaxBindingBytes, checkTuning } from '../device.js';
import type { SearchTimings } from '../types.js';

import { type CpuTwins, TWINS, runTwin } from './twins.js';
import { platform } from '../platform/platform.js';
import { InvalidArgumentError } from '../errors.js';

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
 * and tuning defaults, and overrides `twins` (src/cpu/twins.ts).
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
      // The twin scores in float64, in one order: there is no team.
      graphTeam: t.graphTeam ?? 1,
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
    runTwin(this.twins, c, f32Of, u32Of);
    this.busyMs += performance.now() - t0;
  }

  /** What each kernel call runs on the buffers' host memory: every kernel's twin here. */
  protected readonly twins: CpuTwins = TWINS;

  /** Milliseconds the kernels ran since the last read or flush (what `read` reports as compute). */
  protected busyMs = 0;

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

function f32Of(buffer: DeviceBuffer): Float32Array {
  return (buffer as CpuBuffer).f32;
}

function u32Of(buffer: DeviceBuffer): Uint32Array {
  return (buffer as CpuBuffer).u32;
}

