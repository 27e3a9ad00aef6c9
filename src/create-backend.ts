/**
 * Picks a backend: WebGPU when asked for or when `auto` finds an adapter (or on the caller's own
 * GPUDevice), else the CPU. Both devices are imported lazily, so that the CPU backend never loads
 * Dawn.
 */
import { Backend, type BackendKind } from './backend.js';
import type { DeviceTuning } from './device.js';
import { checkMaxBindingBytes, checkTuning } from './device.js';
import { type GemmVariantOption, checkGemmVariantOption } from './gpu/kernel-choice.js';
import { platform } from './platform/platform.js';
import { InvalidArgumentError, WebGpuUnavailableError } from './types.js';

export interface BackendOptions {
  /**
   * `auto` (default): WebGPU when an adapter exists, else the CPU with a warning on stderr (the
   * console in a browser). With `device`, `auto` means `webgpu`.
   */
  backend?: 'auto' | BackendKind;
  /**
   * A GPUDevice of the caller's (in a browser, one the page requested from navigator.gpu) to run
   * on instead of requesting one. Its features and limits are used as they are; `dispose()` leaves
   * it alive.
   */
  device?: GPUDevice;
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
  /** Where `auto`'s warning goes; defaults to stderr (the console in a browser). */
  warn?: (message: string) => void;
}

/** What to do when WebGPU is missing (in Node: install lavapipe; in a browser: enable WebGPU). */
export const SETUP_HINT = platform.setupHint;

export async function createBackend(options: BackendOptions = {}): Promise<Backend> {
  const choice = options.backend ?? 'auto';
  if (choice !== 'auto' && choice !== 'webgpu' && choice !== 'cpu') {
    throw new InvalidArgumentError(`backend must be one of auto, webgpu, cpu; got ${String(choice)}`);
  }
  const known = ['backend', 'device', 'maxBindingBytes', 'tuning', 'timeKernels', 'dawnFlags', 'gemmVariant', 'warn'];
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
  if (choice === 'cpu') {
    if (options.device) throw new InvalidArgumentError('createBackend: device is a GPUDevice for the webgpu backend; got backend cpu');
    return cpu();
  }
  // Imported lazily so that the CPU backend never loads Dawn.
  const { GpuDevice } = await import('./gpu/gpu-device.js');
  let reason: string;
  try {
    const gpu = await GpuDevice.create({ ...deviceOptions, timeKernels: options.timeKernels, dawnFlags: options.dawnFlags, device: options.device, gemmVariant: options.gemmVariant });
    if (gpu) return new Backend(gpu);
    reason = 'no WebGPU adapter was found';
  } catch (err) {
    // Dawn's messages span lines (a list of adapters); the first says what went wrong.
    reason = `WebGPU could not start: ${String((err as Error).message).split('\n')[0].trim()}`;
  }
  if (choice === 'webgpu' || options.device) throw new WebGpuUnavailableError(`${reason}; ${SETUP_HINT}`);
  const warn = options.warn ?? platform.warn;
  warn(`webgpu-knn: ${reason}; using the CPU backend (to get WebGPU, ${SETUP_HINT})`);
  return cpu();
}
