/**
 * Dawn bootstrap: one WebGPU instance, adapter and device, with the limits the data needs, adapter
 * information for reports, device-loss handling, and `dispose()` so that the process can exit.
 */
import { WebGpuUnavailableError } from '../types.js';

export interface AdapterSummary {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  /** A CPU-emulated adapter (lavapipe, SwiftShader): few cores, expensive barriers. */
  isFallbackAdapter: boolean;
  /** The native API Dawn uses by default on this platform. */
  backend: string;
}

const DAWN_BACKEND: Record<string, string> = { linux: 'vulkan', darwin: 'metal', win32: 'd3d12' };

export class GpuContext {
  /** Set when the device is lost or destroyed; every later use throws this reason. */
  private lostReason: string | null = null;

  private constructor(
    /**
     * The object returned by `create()` from `webgpu`. It must stay referenced as long as any
     * adapter or device from it is in use: if it is garbage-collected, Dawn's instance is
     * destroyed and the process crashes at the next event poll.
     */
    readonly gpu: GPU,
    readonly adapter: GPUAdapter,
    readonly device: GPUDevice,
    readonly adapterInfo: AdapterSummary,
    readonly hasTimestamps: boolean,
    /** Subgroups are enabled and have at least 8 lanes (what gemm-scores.wgsl needs). */
    readonly hasSubgroups8: boolean,
  ) {
    device.lost.then((info) => {
      // dispose() has already said why; keep that reason.
      if (this.lostReason) return;
      this.lostReason = `the WebGPU device was lost (${info.reason}): ${info.message}`;
      if (info.reason !== 'destroyed') process.stderr.write(`webgpu-knn: ${this.lostReason}\n`);
    });
    device.addEventListener('uncapturederror', (ev) => {
      process.stderr.write(`webgpu-knn: uncaptured WebGPU error: ${(ev as GPUUncapturedErrorEvent).error.message}\n`);
    });
  }

  /** Returns null when no adapter exists (no driver), so callers can fall back or explain. */
  static async create(dawnFlags: string[] = []): Promise<GpuContext | null> {
    // Dawn's Vulkan loader wants a runtime directory; without one it prints warnings.
    if (!process.env.XDG_RUNTIME_DIR) process.env.XDG_RUNTIME_DIR = '/tmp';
    const webgpu = await import('webgpu');
    // The GPUBufferUsage / GPUMapMode / GPUShaderStage enums live on globalThis in browsers.
    if (typeof (globalThis as { GPUBufferUsage?: unknown }).GPUBufferUsage === 'undefined') {
      Object.assign(globalThis, webgpu.globals);
    }
    const gpu = webgpu.create(dawnFlags);
    const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
    if (!adapter) return null;
    const al = adapter.limits;
    const requiredLimits: Record<string, number> = {
      maxStorageBufferBindingSize: al.maxStorageBufferBindingSize,
      maxBufferSize: al.maxBufferSize,
      maxStorageBuffersPerShaderStage: Math.min(al.maxStorageBuffersPerShaderStage, 10),
      maxComputeWorkgroupsPerDimension: al.maxComputeWorkgroupsPerDimension,
    };
    const hasTimestamps = adapter.features.has('timestamp-query');
    const info = adapter.info;
    const subgroupMin = (info as { subgroupMinSize?: number }).subgroupMinSize ?? 0;
    const hasSubgroups8 = adapter.features.has('subgroups') && subgroupMin >= 8;
    const requiredFeatures: GPUFeatureName[] = [];
    if (hasTimestamps) requiredFeatures.push('timestamp-query');
    if (hasSubgroups8) requiredFeatures.push('subgroups' as GPUFeatureName);
    const device = await adapter.requestDevice({ requiredLimits, requiredFeatures });
    const description = info.description ?? '';
    const summary: AdapterSummary = {
      vendor: info.vendor ?? '',
      architecture: info.architecture ?? '',
      device: info.device ?? '',
      description,
      // Dawn reports it in adapter.info; lavapipe's architecture ("software") says it too.
      isFallbackAdapter:
        (info as { isFallbackAdapter?: boolean }).isFallbackAdapter === true ||
        (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter === true ||
        info.architecture === 'software',
      backend: DAWN_BACKEND[process.platform] ?? 'unknown',
    };
    return new GpuContext(gpu, adapter, device, summary, hasTimestamps, hasSubgroups8);
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

  /** Throws if the device is gone; call before encoding work. */
  check(): void {
    if (this.lostReason) throw new WebGpuUnavailableError(this.lostReason);
  }

  dispose(): void {
    if (!this.lostReason) this.lostReason = 'the WebGPU backend was disposed';
    this.device.destroy();
  }
}
