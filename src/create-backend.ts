/**
 * Picks a backend: WebGPU when asked for or when `auto` finds an adapter, else the CPU. Both
 * backends are imported lazily, so that the CPU backend never loads Dawn.
 */
import type { Backend, BackendKind } from './backend.js';
import type { GpuBackendOptions } from './gpu/gpu-backend.js';
import { InvalidArgumentError, WebGpuUnavailableError } from './types.js';

export interface BackendOptions {
  /** `auto` (default): WebGPU when an adapter exists, else the CPU with a warning on stderr. */
  backend?: 'auto' | BackendKind;
  /** Tuning and testing knobs of the WebGPU backend (see GpuBackendOptions). */
  gpu?: GpuBackendOptions;
  /** Where `auto`'s warning goes; defaults to stderr. */
  warn?: (message: string) => void;
}

export const SETUP_HINT =
  'run scripts/setup-webgpu.sh (on Debian/Ubuntu as root it installs the Vulkan loader and Mesa\'s ' +
  'lavapipe driver, so WebGPU runs even without a GPU)';

export async function createBackend(options: BackendOptions = {}): Promise<Backend> {
  const choice = options.backend ?? 'auto';
  if (choice !== 'auto' && choice !== 'webgpu' && choice !== 'cpu') {
    throw new InvalidArgumentError(`backend must be one of auto, webgpu, cpu; got ${String(choice)}`);
  }
  if (choice === 'cpu') {
    const { CpuBackend } = await import('./cpu/cpu-backend.js');
    return new CpuBackend();
  }
  // Imported lazily so that the CPU backend never loads Dawn.
  const { GpuBackend } = await import('./gpu/gpu-backend.js');
  let reason: string;
  try {
    const gpu = await GpuBackend.create(options.gpu);
    if (gpu) return gpu;
    reason = 'no WebGPU adapter was found';
  } catch (err) {
    // Dawn's messages span lines (a list of adapters); the first says what went wrong.
    reason = `WebGPU could not start: ${String((err as Error).message).split('\n')[0].trim()}`;
  }
  if (choice === 'webgpu') throw new WebGpuUnavailableError(`${reason}; ${SETUP_HINT}`);
  const warn = options.warn ?? ((m: string) => process.stderr.write(`${m}\n`));
  warn(`webgpu-knn: ${reason}; using the CPU backend (to get WebGPU, ${SETUP_HINT})`);
  const { CpuBackend } = await import('./cpu/cpu-backend.js');
  return new CpuBackend();
}
