/**
 * Picks a backend: WebGPU when asked for or when `auto` finds an adapter (or on the caller's own
 * GPUDevice), else (in a browser) gpu.js, else the CPU. Every device is imported lazily, so that the
 * CPU backend never loads Dawn nor gpu.js.
 */
import { Backend, type BackendKind } from './backend.js';
import type { DeviceTuning } from '../device.js';
import { checkMaxBindingBytes, checkTuning } from '../device.js';
import { type GemmVariantOption, checkGemmVariantOption } from '../gpu/kernels/gemm-variant.js';
import type { GpujsMode } from '../gpujs/gpujs-device.js';
import { platform } from '../platform/platform.js';
import { InvalidArgumentError, WebGpuUnavailableError } from '../errors.js';

export interface BackendOptions {
  /**
   * `auto` (default): WebGPU when an adapter exists; else, in a browser, gpu.js (WebGL2) when it
   * runs; else the CPU, with a warning on stderr (the console in a browser). With `device`, `auto`
   * means `webgpu`. `gpujs`: the CPU device with scoring and norms run through gpu.js (in Node,
   * gpu.js must be installed; see README, "In a browser").
   */
  backend?: 'auto' | BackendKind;
  /** gpu.js's mode for the gpujs backend (default `auto`: gpu.js's own choice; in a browser WebGL2). */
  gpujsMode?: GpujsMode;
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
  if (choice !== 'auto' && choice !== 'webgpu' && choice !== 'gpujs' && choice !== 'cpu') {
    throw new InvalidArgumentError(`backend must be one of auto, webgpu, gpujs, cpu; got ${String(choice)}`);
  }
  const known = ['backend', 'device', 'maxBindingBytes', 'tuning', 'timeKernels', 'dawnFlags', 'gemmVariant', 'gpujsMode', 'warn'];
  const unknown = Object.keys(options).filter((key) => !known.includes(key));
  if (unknown.length > 0) {
    throw new InvalidArgumentError(`createBackend: unknown option ${unknown.join(', ')}; expected ${known.join(', ')} (tile sizes are under tuning)`);
  }
  checkMaxBindingBytes(options.maxBindingBytes);
  checkTuning(options.tuning ?? {});
  checkGemmVariantOption(options.gemmVariant);
  const deviceOptions = { ...options.tuning, maxBindingBytes: options.maxBindingBytes };
  const cpu = async (): Promise<Backend> => {
    const { CpuDevice } = await import('../cpu/cpu-device.js');
    return new Backend(new CpuDevice(deviceOptions));
  };
  const gpujs = async (): Promise<Backend> => {
    const { GpujsDevice } = await import('../gpujs/gpujs-device.js');
    return new Backend(await GpujsDevice.create({ ...deviceOptions, gpujsMode: options.gpujsMode }));
  };
  if (options.device && (choice === 'cpu' || choice === 'gpujs')) {
    throw new InvalidArgumentError(`createBackend: device is a GPUDevice for the webgpu backend; got backend ${choice}`);
  }
  if (choice === 'cpu') return cpu();
  if (choice === 'gpujs') return gpujs();
  // Imported lazily so that the CPU backend never loads Dawn.
  const { GpuDevice } = await import('../gpu/gpu-device.js');
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
  // In a browser without WebGPU, WebGL2 through gpu.js is the next best; Node's auto stays WebGPU
  // or CPU (gpu.js there has no GL, and its WebAssembly kernels are no faster than the twins).
  if (platform.name === 'browser') {
    try {
      const b = await gpujs();
      warn(`webgpu-knn: ${reason}; using the gpujs backend (${b.description})`);
      return b;
    } catch (err) {
      reason += `, and gpu.js did not start (${String((err as Error).message).split('\n')[0]})`;
    }
  }
  warn(`webgpu-knn: ${reason}; using the CPU backend (to get WebGPU, ${SETUP_HINT})`);
  return cpu();
}
