/**
 * The GPU suites' backend: one per test file, on whatever adapter exists, announced once.
 * Without an adapter the suites are skipped, unless WEBGPU_REQUIRED=1 (CI), which makes it a failure.
 */
import { GpuBackend, type GpuBackendOptions } from '../../src/gpu/gpu-backend.js';

export const WEBGPU_REQUIRED = process.env.WEBGPU_REQUIRED === '1';

const opened: GpuBackend[] = [];

/** Returns a backend, or null (suite skips) when there is no adapter and none is required. */
export async function gpuBackend(options: GpuBackendOptions = {}): Promise<GpuBackend | null> {
  let backend: GpuBackend | null = null;
  let reason = 'no WebGPU adapter was found';
  try {
    backend = await GpuBackend.create(options);
  } catch (err) {
    reason = `WebGPU failed to start: ${(err as Error).message}`;
  }
  if (!backend) {
    if (WEBGPU_REQUIRED) throw new Error(`WEBGPU_REQUIRED=1 but ${reason}; run scripts/setup-webgpu.sh`);
    console.warn(`[gpu] skipping GPU suite: ${reason}`);
    return null;
  }
  if (opened.length === 0) console.log(`[gpu] adapter: ${backend.description}`);
  opened.push(backend);
  return backend;
}

export function disposeGpuBackends(): void {
  for (const b of opened.splice(0)) b.dispose();
}
