/**
 * The gpu.js device: the CPU device (buffers in host memory, every kernel's twin) with the kernels
 * that carry the arithmetic run through gpu.js instead: `gemm-scores` (the score tile of flat
 * search, of IVF's coarse search and GEMM list scoring, of the self-join, and of k-means
 * assignment, which is flat search at k = 1 against the centroids) and `norms`. Selection (topk,
 * select-radix, merges), masks, the IVF scan, the codecs' kernels and the k-means update stay on
 * the host, as their twins. Where gpu.js has WebGL2 (a browser without WebGPU) those two kernels
 * run as fragment shaders; in Node gpu.js has no GL unless headless-gl (npm `gl`) built, and picks
 * its WebAssembly or plain-JS (`cpu`) kernels instead.
 *
 * Precision: gpu.js's GL and WebAssembly kernels sum in float32, in j order, where the twins sum in
 * float64 and round once; small-integer data (every intermediate exact in f32) gives the twins'
 * scores exactly, float data the twins' within rounding. Its `cpu` mode sums in float64 as the
 * twins do, so there the scores are the twins' bit for bit.
 */
import type { GPU, IKernelRunShortcut } from 'gpu.js';
import { CpuDevice, cpuOf } from '../cpu/cpu-device.js';
import { type CpuTwins, TWINS } from '../cpu/twins.js';
import type { DeviceOptions, GemmScoresArgs, NormsArgs } from '../device.js';
import type { KernelMetric } from '../kernel-facts.js';
import { InvalidArgumentError, WebGpuUnavailableError } from '../errors.js';

/** The gpu.js release this device is written and tested against (package.json pins it). */
export const GPUJS_VERSION = '2.24.1';

/**
 * gpu.js's modes: `auto` is gpu.js's own choice (headless-gl, WebGL2, WebGL, then WebAssembly,
 * then plain JS); the others force one.
 */
export const GPUJS_MODES = ['auto', 'webgl2', 'webgl', 'headlessgl', 'webasm', 'cpu'] as const;
export type GpujsMode = (typeof GPUJS_MODES)[number];

/**
 * Most outputs per side of one gpu.js call: a GL kernel's output is a texture, and WebGL
 * implementations guarantee 4096 texels a side (SwiftShader has 8192). Larger tiles are split.
 */
const MAX_OUT = 4096;

/** gpu.js's kernel class (an export of the package) for each mode. */
const KERNEL_CLASSES: Record<Exclude<GpujsMode, 'auto'>, string> = {
  webgl2: 'WebGL2Kernel',
  webgl: 'WebGLKernel',
  headlessgl: 'HeadlessGLKernel',
  webasm: 'WebAssemblyKernel',
  cpu: 'CPUKernel',
};

export interface GpujsDeviceOptions extends DeviceOptions {
  /** gpu.js's mode (default `auto`). */
  gpujsMode?: GpujsMode;
}

// Kernels are given as source text (gpu.js parses them), so no compiler or bundler rewrites them.
// `dpad` and the metric are constants: one compiled kernel per (dpad, metric), sized per call.
const GEMM_SOURCE = `function (xq, xb, xnorm) {
  let s = 0.0;
  for (let j = 0; j < this.constants.dpad; j++) {
    s += xq[this.thread.y * this.constants.dpad + j] * xb[this.thread.x * this.constants.dpad + j];
  }
  if (this.constants.l2 > 0) {
    return xnorm[this.thread.x] - 2.0 * s;
  }
  return -s;
}`;

const NORMS_SOURCE = `function (x) {
  let s = 0.0;
  for (let j = 0; j < this.constants.dpad; j++) {
    const v = x[this.thread.x * this.constants.dpad + j];
    s += v * v;
  }
  return s;
}`;

export class GpujsDevice extends CpuDevice {
  private readonly kernels: Map<string, IKernelRunShortcut>;

  private constructor(
    options: DeviceOptions,
    private readonly gpu: GPU,
    readonly gpujsMode: string,
    renderer: string | null,
    built: Map<string, IKernelRunShortcut>,
  ) {
    super(options, {
      kind: 'gpujs',
      description: `gpujs (gpu.js ${GPUJS_VERSION}, ${gpujsMode}${renderer ? `: ${renderer}` : ''}; selection on the host)`,
      // Wide tiles (each call's fixed cost is an upload and a readback), within MAX_OUT a side; IVF
      // lists are scored by GEMM, which runs on gpu.js, not by the scan, which is a twin. No k-means
      // bounds: their margin assumes float32 rounding, which GL does not promise.
      defaults: { tileCols: MAX_OUT, scoreTileBytes: 16 << 20, ivfStrategy: 'gemm', kmeansBounds: false, ivfHalfScan: false },
    });
    this.kernels = built;
  }

  /**
   * Loads gpu.js, picks its mode, and checks that a kernel builds and computes there (so that
   * `auto` can fall back when it does not). Throws WebGpuUnavailableError when gpu.js is missing or
   * its mode does not work.
   */
  static async create(options: GpujsDeviceOptions = {}): Promise<GpujsDevice> {
    const { gpujsMode = 'auto', ...deviceOptions } = options;
    if (!(GPUJS_MODES as readonly string[]).includes(gpujsMode)) {
      throw new InvalidArgumentError(`gpujsMode must be one of ${GPUJS_MODES.join(', ')}; got ${String(gpujsMode)}`);
    }
    type GpujsModule = { GPU?: typeof GPU } & Record<string, unknown>;
    let mod: GpujsModule & { default?: GpujsModule };
    try {
      mod = (await import('gpu.js')) as typeof mod;
    } catch (err) {
      throw new WebGpuUnavailableError(`the gpujs backend needs gpu.js ${GPUJS_VERSION} (npm install gpu.js@${GPUJS_VERSION}): ${(err as Error).message}`);
    }
    const lib: GpujsModule = mod.GPU ? mod : (mod.default ?? mod);
    const GPUClass = lib.GPU;
    if (!GPUClass) throw new WebGpuUnavailableError('gpu.js loaded but exports no GPU class');
    let gpu: GPU;
    try {
      gpu = new GPUClass(gpujsMode === 'auto' ? {} : { mode: gpujsMode });
    } catch (err) {
      throw new WebGpuUnavailableError(`gpu.js mode ${gpujsMode} is not available here: ${(err as Error).message}`);
    }
    // gpu.js's GL kernels all call their mode `gpu`: name the one chosen by its class.
    const chosen = (gpu as unknown as { Kernel?: { mode?: string } }).Kernel;
    const mode = Object.entries(KERNEL_CLASSES).find(([, name]) => chosen !== undefined && lib[name] === chosen)?.[0] ?? chosen?.mode ?? gpu.mode;
    // One tiny norms call: gpu.js compiles lazily, and a mode that cannot build or read back a float
    // kernel should fail here, not in the middle of a search.
    const built = new Map<string, IKernelRunShortcut>();
    let got: Float32Array;
    try {
      got = normsOn(kernelOf(gpu, built, 'norms', 4, null), new Float32Array([1, 2, 3, 4, 5, 6, 7, 8]), 2, 4);
    } catch (err) {
      void gpu.destroy().catch(() => {});
      throw new WebGpuUnavailableError(`gpu.js (${mode}) could not run a kernel: ${String((err as Error).message).split('\n')[0]}`);
    }
    if (got[0] !== 30 || got[1] !== 174) {
      void gpu.destroy().catch(() => {});
      throw new WebGpuUnavailableError(`gpu.js (${mode}) computed wrong norms (${got[0]}, ${got[1]}; want 30, 174)`);
    }
    return new GpujsDevice(deviceOptions, gpu, mode, glRenderer(built.values().next().value), built);
  }

  /** The CPU device's twins, but for the two kernels gpu.js runs. */
  protected override readonly twins: CpuTwins = {
    ...TWINS,
    'gemm-scores': (c) => this.gemmScores(c),
    'norms': (c) => this.norms(c),
  };

  private gemmScores(c: GemmScoresArgs): void {
    const xq = cpuOf(c.xq).f32;
    const xb = cpuOf(c.xb).f32;
    const xnorm = cpuOf(c.xnorm).f32;
    const scores = cpuOf(c.scores).f32;
    const { dpad, ldc } = c;
    for (let r0 = 0; r0 < c.rows; r0 += MAX_OUT) {
      const rows = Math.min(MAX_OUT, c.rows - r0);
      const q = c.q0 + r0;
      const xqBlock = xq.subarray(q * dpad, (q + rows) * dpad);
      for (let c0 = 0; c0 < c.cols; c0 += MAX_OUT) {
        const cols = Math.min(MAX_OUT, c.cols - c0);
        const b = c.col0 + c0;
        const k = this.kernel('gemm', dpad, c.metric);
        k.setOutput([cols, rows]);
        const out = k(xqBlock, xb.subarray(b * dpad, (b + cols) * dpad), xnorm.subarray(b, b + cols)) as unknown;
        forEachRow(out, rows, (r, row) => scores.set(row.subarray(0, cols), (r0 + r) * ldc + c0));
      }
    }
  }

  private norms(c: NormsArgs): void {
    const out = cpuOf(c.out).f32;
    out.set(normsOn(this.kernel('norms', c.dpad, null), cpuOf(c.x).f32.subarray(c.row0 * c.dpad, (c.row0 + c.n) * c.dpad), c.n, c.dpad), c.out0);
  }

  private kernel(name: KernelKind, dpad: number, metric: KernelMetric | null): IKernelRunShortcut {
    return kernelOf(this.gpu, this.kernels, name, dpad, metric);
  }

  override dispose(): void {
    for (const k of this.kernels.values()) k.destroy?.();
    this.kernels.clear();
    void this.gpu.destroy().catch(() => {});
    super.dispose();
  }
}

type KernelKind = 'gemm' | 'norms';

/** One compiled kernel per (name, dpad, metric) in `built`, sized per call. */
function kernelOf(gpu: GPU, built: Map<string, IKernelRunShortcut>, name: KernelKind, dpad: number, metric: KernelMetric | null): IKernelRunShortcut {
  const key = `${name}:${dpad}:${metric ?? ''}`;
  let k = built.get(key);
  if (!k) {
    k = gpu.createKernel(name === 'gemm' ? GEMM_SOURCE : NORMS_SOURCE, {
      constants: { dpad, l2: metric === 'l2' ? 1 : 0 },
      output: [1],
      dynamicOutput: true,
      dynamicArguments: true,
      precision: 'single',
      tactic: 'precision',
    });
    built.set(key, k);
  }
  return k;
}

/** Squared norms of `n` rows of `dpad` floats through a norms kernel, in blocks of at most MAX_OUT^2 rows. */
function normsOn(k: IKernelRunShortcut, x: Float32Array, n: number, dpad: number): Float32Array {
  const out = new Float32Array(n);
  const block = MAX_OUT * MAX_OUT;
  for (let i0 = 0; i0 < n; i0 += block) {
    const m = Math.min(block, n - i0);
    k.setOutput([m]);
    out.set((k(x.subarray(i0 * dpad, (i0 + m) * dpad)) as Float32Array).subarray(0, m), i0);
  }
  return out;
}

/** Calls `fn` with each row of a gpu.js result (an array of Float32Array rows, or one row). */
function forEachRow(out: unknown, rows: number, fn: (r: number, row: Float32Array) => void): void {
  if (out instanceof Float32Array) {
    if (rows !== 1) throw new Error(`gpu.js returned one row for ${rows}`);
    fn(0, out);
    return;
  }
  const list = out as ArrayLike<Float32Array>;
  for (let r = 0; r < rows; r++) fn(r, list[r] instanceof Float32Array ? list[r] : Float32Array.from(list[r]));
}

/** The GL renderer a gpu.js kernel runs on (unmasked where the browser allows), or null off GL. */
function glRenderer(k: IKernelRunShortcut | undefined): string | null {
  type Gl = { RENDERER: number; getParameter(p: number): unknown; getExtension(name: string): { UNMASKED_RENDERER_WEBGL: number } | null };
  const gl = (k as unknown as { kernel?: { context?: Gl } } | undefined)?.kernel?.context;
  if (!gl || typeof gl.getParameter !== 'function') return null;
  try {
    const info = gl.getExtension('WEBGL_debug_renderer_info');
    return String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
  } catch {
    return null;
  }
}
