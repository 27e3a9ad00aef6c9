/**
 * The GPU suites' backend: one per call, on whatever adapter exists, announced once.
 * Without an adapter the suites are skipped, unless WEBGPU_REQUIRED=1 (CI), which makes it a failure.
 */
import { Backend } from '../../src/backend/backend.js';
import { GpuDevice, type GpuDeviceOptions } from '../../src/gpu/gpu-device.js';

export const WEBGPU_REQUIRED = process.env.WEBGPU_REQUIRED === '1';

const opened: Backend[] = [];

/** A WebGPU backend whose device is a GpuDevice (for tests that reach the context or the pool). */
export type GpuBackend = Backend & { device: GpuDevice };

/** Returns a backend, or null (suite skips) when there is no adapter and none is required. */
export async function gpuBackend(options: GpuDeviceOptions = {}): Promise<GpuBackend | null> {
  let device: GpuDevice | null = null;
  let reason = 'no WebGPU adapter was found';
  try {
    device = await GpuDevice.create(options);
  } catch (err) {
    reason = `WebGPU failed to start: ${(err as Error).message}`;
  }
  if (!device) {
    if (WEBGPU_REQUIRED) throw new Error(`WEBGPU_REQUIRED=1 but ${reason}; run scripts/setup-webgpu.sh`);
    console.warn(`[gpu] skipping GPU suite: ${reason}`);
    return null;
  }
  const backend = new Backend(device) as GpuBackend;
  if (opened.length === 0) console.log(`[gpu] adapter: ${backend.description}`);
  opened.push(backend);
  return backend;
}

export function disposeGpuBackends(): void {
  for (const b of opened.splice(0)) b.dispose();
}
