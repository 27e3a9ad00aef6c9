/** Dispatch of shaders/topk-merge.wgsl (CPU twin: src/cpu/topk-merge.ts). */
import type { TopkMergeArgs } from '../../device.js';
import type { Kernels } from './kernels.js';

const WG = 64;

import { MERGE_ROUND } from '../../kernel-facts.js';

/** Most partial lists one merge takes per row (the shader's MAX_SEG). */
export const MERGE_MAX_SEG = MERGE_ROUND;

export function encodeTopkMerge(kernels: Kernels, a: TopkMergeArgs<GPUBuffer>): void {
  if (a.nseg < 1 || a.nseg > MERGE_MAX_SEG) throw new Error(`topk-merge: nseg must be in [1, ${MERGE_MAX_SEG}]; got ${a.nseg}`);
  kernels.recorder.dispatch(
    'topk-merge',
    kernels.pipelines.get('topk-merge', { WG }),
    [a.rows, a.k, a.nseg, a.first ? 1 : 0, a.row0, a.stride ?? a.nseg, a.seg0 ?? 0],
    [a.partS, a.partI, a.runInS, a.runInI, a.runOutS, a.runOutI],
    kernels.fold(a.rows, WG),
  );
}
