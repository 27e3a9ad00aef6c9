/** Dispatch of shaders/select-radix.wgsl (CPU twin: src/cpu/select-radix.ts). */
import type { SelectRadixArgs } from '../../device.js';
import type { Kernels } from './kernels.js';

/**
 * Largest k (and nprobe) the GPU's searches take (its limits.maxK). select-radix holds nothing per
 * k in workgroup memory, so this bounds a search's lists (nq x k pairs), not the kernel; it leaves
 * k = 4096 its re-score margin (candidatesFor asks for 8192).
 */
export const GPU_MAX_K = 8192;

/** Invocations per workgroup (one workgroup per row): WebGPU's default limit. */
const WG = 256;

export function encodeSelectRadix(kernels: Kernels, a: SelectRadixArgs<GPUBuffer>): void {
  kernels.recorder.dispatch(
    'select-radix',
    kernels.pipelines.get('select-radix', { WG }),
    [a.rows, a.cols, a.ldc, a.k, a.first ? 1 : 0, a.row0, a.id0, a.ids ? 1 : 0],
    // Without ids the shader reads nothing from col_ids; any buffer satisfies the layout.
    [a.scores, a.ids ?? a.scores, a.runInS, a.runInI, a.runOutS, a.runOutI],
    kernels.fold(a.rows * WG, WG),
  );
}
