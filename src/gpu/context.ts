/**
 * One WebGPU instance, adapter and device (from Dawn in Node, navigator.gpu in a browser: see
 * src/platform/), with the limits the data needs, adapter information for reports, device-loss
 * handling, and `dispose()` so that the process can exit. Or a device the caller made (adopt).
 */
import { platform } from '../platform/platform.js';
import { WebGpuUnavailableError } from '../errors.js';

export interface AdapterSummary {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  /** A CPU-emulated adapter (lavapipe, SwiftShader): few cores, expensive barriers. */
  isFallbackAdapter: boolean;
  /** The native API Dawn uses by default on this platform; `navigator.gpu` in a browser. */
  backend: string;
}

/**
 * Sleeps between two polls while waiting for a software adapter (GpuContext.wait): a quarter of the
 * time waited so far (SLEEP_SHARE), so the answer is seen at most about a quarter late, from
 * SLEEP_MIN_MS up to SLEEP_MAX_MS.
 */
const SLEEP_MIN_MS = 0.05;
const SLEEP_MAX_MS = 1;
const SLEEP_SHARE = 0.25;

/** How long GpuContext.wait sleeps after `waitedMs` of waiting without an answer (see above). */
export function pollSleepMs(waitedMs: number): number {
  return Math.min(SLEEP_MAX_MS, Math.max(SLEEP_MIN_MS, SLEEP_SHARE * waitedMs));
}
const SLEEPER = typeof SharedArrayBuffer === 'function' ? new Int32Array(new SharedArrayBuffer(4)) : null;
let sleepAllowed: boolean | null = null;

/** Whether this thread may block in Atomics.wait (Node's main thread may; a browser's may not). */
function canSleep(): boolean {
  if (sleepAllowed === null) {
    try {
      Atomics.wait(SLEEPER!, 0, 0, 0);
      sleepAllowed = true;
    } catch {
      sleepAllowed = false;
    }
  }
  return sleepAllowed;
}

export class GpuContext {
  /** Set when the device is lost or destroyed; every later use throws this reason. */
  private lostReason: string | null = null;

  private constructor(
    /**
     * The object returned by `create()` from `webgpu` (or navigator.gpu). It must stay referenced
     * as long as any adapter or device from it is in use: if it is garbage-collected, Dawn's
     * instance is destroyed and the process crashes at the next event poll. Null for an adopted device.
     */
    readonly gpu: GPU | null,
    readonly device: GPUDevice,
    readonly adapterInfo: AdapterSummary,
    readonly hasTimestamps: boolean,
    /** Subgroups are enabled and have at least 8 lanes (what gemm-scores.wgsl needs). */
    readonly hasSubgroups8: boolean,
    /** Promises of this device settle only by polling on the event loop (Dawn in Node; see wait). */
    private readonly polled: boolean,
    /** Whether dispose() destroys the device (not when it was adopted: its owner does). */
    private readonly owned: boolean,
  ) {
    device.lost.then((info) => {
      // dispose() has already said why; keep that reason.
      if (this.lostReason) return;
      this.lostReason = `the WebGPU device was lost (${info.reason}): ${info.message}`;
      if (info.reason !== 'destroyed') platform.warn(`webgpu-knn: ${this.lostReason}`);
    });
    device.addEventListener('uncapturederror', (ev) => {
      platform.warn(`webgpu-knn: uncaptured WebGPU error: ${(ev as GPUUncapturedErrorEvent).error.message}`);
    });
  }

  /**
   * Returns null when no adapter exists (no driver), so callers can fall back or explain; throws
   * when there is no WebGPU at all (a browser without navigator.gpu).
   */
  static async create(dawnFlags: string[] = []): Promise<GpuContext | null> {
    const { gpu, backend, polled } = await platform.requestGpu(dawnFlags);
    const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
    if (!adapter) return null;
    const al = adapter.limits;
    const requiredLimits: Record<string, number> = {
      maxStorageBufferBindingSize: al.maxStorageBufferBindingSize,
      maxBufferSize: al.maxBufferSize,
      // No maxStorageBuffersPerShaderStage: every kernel binds at most the default 8, and asking for
      // no more keeps our devices like those callers make (test/index/default-limits.test.ts).
      maxComputeWorkgroupsPerDimension: al.maxComputeWorkgroupsPerDimension,
      // pq-scores holds a product quantiser's table in workgroup memory where it fits.
      maxComputeWorkgroupStorageSize: al.maxComputeWorkgroupStorageSize,
    };
    const hasTimestamps = adapter.features.has('timestamp-query');
    const info = adapter.info;
    const subgroupMin = (info as { subgroupMinSize?: number }).subgroupMinSize ?? 0;
    const hasSubgroups8 = adapter.features.has('subgroups') && subgroupMin >= 8;
    const requiredFeatures: GPUFeatureName[] = [];
    if (hasTimestamps) requiredFeatures.push('timestamp-query');
    if (hasSubgroups8) requiredFeatures.push('subgroups' as GPUFeatureName);
    const device = await adapter.requestDevice({ requiredLimits, requiredFeatures });
    const fallback = (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter === true;
    return new GpuContext(gpu, device, summarize(info, backend, fallback), hasTimestamps, hasSubgroups8, polled, true);
  }

  /**
   * A context on a device the caller made (a page's GPUDevice), with the features and limits it was
   * made with; dispose() leaves it to its owner. Subgroup kernels run only when the device has the
   * `subgroups` feature and its adapter reports subgroups of at least 8 lanes.
   */
  static adopt(device: GPUDevice): GpuContext {
    const info = (device as { adapterInfo?: GPUAdapterInfo }).adapterInfo ?? ({} as GPUAdapterInfo);
    const subgroupMin = (info as { subgroupMinSize?: number }).subgroupMinSize ?? 0;
    const hasSubgroups8 = device.features.has('subgroups') && subgroupMin >= 8;
    const polled = platform.name === 'node';
    return new GpuContext(null, device, summarize(info, polled ? 'adopted' : 'navigator.gpu', false), device.features.has('timestamp-query'), hasSubgroups8, polled, false);
  }

  get limits(): GPUSupportedLimits {
    return this.device.limits;
  }

  /** The largest binding a storage buffer may have on this device, in bytes. */
  get maxBinding(): number {
    return Math.min(this.device.limits.maxStorageBufferBindingSize, this.device.limits.maxBufferSize);
  }

  /** One line: the backend and the adapter, then `extra` (such as the kernels chosen for it). */
  describe(...extra: string[]): string {
    const a = this.adapterInfo;
    const parts = [a.vendor, a.architecture, a.device].filter(Boolean).join(' ');
    const more = [a.description, a.isFallbackAdapter ? 'software adapter' : '', ...extra].filter(Boolean);
    return `webgpu (${a.backend}: ${parts}${more.map((m) => `; ${m}`).join('')})`;
  }

  /**
   * Waits for `work` (a mapAsync, onSubmittedWorkDone or popErrorScope of this device). Dawn's Node
   * bindings settle such promises by polling on every turn of the event loop (setImmediate), so an
   * `await` keeps one CPU core busy until the GPU is done. On a software adapter those cores are the
   * GPU's: on lavapipe with two cores the polling took 65 - 70% of one, and a 1000 x 16384 x 128
   * score tile ran at 12.9 - 16.4 GFLOP/s with the thread asleep between polls, 9.7 - 10.0 without
   * (README, "Waiting for a software adapter"). So there the thread sleeps (Atomics.wait) between
   * turns of the event loop, each time a quarter of the time waited so far (50 us to 1 ms): a sleep
   * that doubled instead saw a short search's answer up to twice as late as it came, and searches
   * of 10 queries took 10 - 16% longer at the median. A real GPU is awaited as is.
   */
  async wait<T>(work: Promise<T>): Promise<T> {
    if (!this.polled || !this.adapterInfo.isFallbackAdapter || !canSleep()) return work;
    let settled = false;
    work.then(
      () => (settled = true),
      () => (settled = true),
    );
    const t0 = performance.now();
    for (;;) {
      await platform.yieldToEvents();
      if (settled) return work;
      Atomics.wait(SLEEPER!, 0, 0, pollSleepMs(performance.now() - t0));
    }
  }

  /** Throws if the device is gone; call before encoding work. */
  check(): void {
    if (this.lostReason) throw new WebGpuUnavailableError(this.lostReason);
  }

  dispose(): void {
    if (!this.lostReason) this.lostReason = 'the WebGPU backend was disposed';
    if (this.owned) this.device.destroy();
  }
}

/** An adapter's report for describe() and the kernel-choice cache's key. */
function summarize(info: GPUAdapterInfo, backend: string, isFallbackAdapter: boolean): AdapterSummary {
  return {
    vendor: info.vendor ?? '',
    architecture: info.architecture ?? '',
    device: info.device ?? '',
    description: info.description ?? '',
    // Dawn reports it in adapter.info; lavapipe's architecture ("software") and Chromium's
    // SwiftShader ("swiftshader") say it too.
    isFallbackAdapter:
      isFallbackAdapter || (info as { isFallbackAdapter?: boolean }).isFallbackAdapter === true ||
      info.architecture === 'software' || info.architecture === 'swiftshader',
    backend,
  };
}
