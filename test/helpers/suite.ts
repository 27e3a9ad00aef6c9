/**
 * What the index suites set up the same way: both backends (the GPU's null where there is no
 * adapter and none is required, see gpu.ts), and a temporary folder removed after the file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import { cpuBackend } from './cpu.js';
import { type GpuBackend, disposeGpuBackends, gpuBackend } from './gpu.js';

/** A CPU and a GPU backend with the same small binding limit (so tests drive the splits), and both as [name, backend] pairs. */
export async function suiteBackends(maxBindingBytes = 64 * 1024): Promise<{ cpu: Backend; gpu: GpuBackend | null; backends: readonly (readonly [string, Backend | null])[] }> {
  const gpu = await gpuBackend({ maxBindingBytes });
  const cpu = cpuBackend({ maxBindingBytes });
  afterAll(disposeGpuBackends);
  return { cpu, gpu, backends: [['cpu', cpu], ['webgpu', gpu]] as const };
}

/** A new temporary folder, removed after the test file. */
export function suiteDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
