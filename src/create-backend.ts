/**
 * Picks a backend: WebGPU when asked for or when `auto` finds an adapter, else the CPU. Both
 * devices are imported lazily, so that the CPU backend never loads Dawn.
 */
import { Backend, type BackendKind } from './backend.js';
import type { DeviceTuning } from './device.js';
import { checkMaxBindingBytes, checkTuning } from './device.js';
import { type GemmVariantOption, checkGemmVariantOption } from './gpu/kernel-choice.js';
import { InvalidArgumentError, WebGpuUnavailableError } from './types.js';

export interface BackendOptions {
  /** `auto` (default): WebGPU when an adapter exists, else the CPU with a warning on stderr. */
  backend?: 'auto' | BackendKind;
  /**
   * Most bytes bound at once, on either backend (default: the device's limit; the CPU's is 1 GiB).
   * Lower it to run, on small data, the splits that large data needs; `backend.maxBindingBytes`
   * reports the limit in force.
   */
  maxBindingBytes?: number;
  /** How plans tile work (see DeviceTuning); results never depend on it. */
  tuning?: DeviceTuning;
  /** Time each kernel with GPU timestamp queries, where the adapter has them (default false). */
  timeKernels?: boolean;
  /** Options for Dawn's `create()`, such as `backend=vulkan` or `adapter=NAME`. */
  dawnFlags?: string[];
  /**
   * WebGPU's gemm-scores kernel: `auto` (default) measures the variants once per adapter and caches
   * the fastest; `subgroup`, `portable` or `tiled` forces one (see README, "Scoring kernels").
   */
  gemmVariant?: GemmVariantOption;
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
  const known = ['backend', 'maxBindingBytes', 'tuning', 'timeKernels', 'dawnFlags', 'gemmVariant', 'warn'];
  const unknown = Object.keys(options).filter((key) => !known.includes(key));
  if (unknown.length > 0) {
    throw new InvalidArgumentError(`createBackend: unknown option ${unknown.join(', ')}; expected ${known.join(', ')} (tile sizes are under tuning)`);
  }
  checkMaxBindingBytes(options.maxBindingBytes);
  checkTuning(options.tuning ?? {});
  checkGemmVariantOption(options.gemmVariant);
  const deviceOptions = { ...options.tuning, maxBindingBytes: options.maxBindingBytes };
  const cpu = async (): Promise<Backend> => {
    const { CpuDevice } = await import('./cpu/cpu-device.js');
    return new Backend(new CpuDevice(deviceOptions));
  };
  if (choice === 'cpu') return cpu();
  // Imported lazily so that the CPU backend never loads Dawn.
  const { GpuDevice } = await import('./gpu/gpu-device.js');
  let reason: string;
  try {
    const gpu = await GpuDevice.create({ ...deviceOptions, timeKernels: options.timeKernels, dawnFlags: options.dawnFlags, gemmVariant: options.gemmVariant });
    if (gpu) return new Backend(gpu);
    reason = 'no WebGPU adapter was found';
  } catch (err) {
    // Dawn's messages span lines (a list of adapters); the first says what went wrong.
    reason = `WebGPU could not start: ${String((err as Error).message).split('\n')[0].trim()}`;
  }
  if (choice === 'webgpu') throw new WebGpuUnavailableError(`${reason}; ${SETUP_HINT}`);
  const warn = options.warn ?? ((m: string) => process.stderr.write(`${m}\n`));
  warn(`webgpu-knn: ${reason}; using the CPU backend (to get WebGPU, ${SETUP_HINT})`);
  return cpu();
}
