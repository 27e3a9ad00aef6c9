/** Dispatch of shaders/topk-merge.wgsl (CPU twin: src/cpu/topk-merge.ts). */
import type { Kernels } from './kernels.js';

const WG = 64;

import { MERGE_ROUND } from '../../kernel-facts.js';

/** Most partial lists one merge takes per row (the shader's MAX_SEG). */
export const MERGE_MAX_SEG = MERGE_ROUND;

export interface TopkMergeArgs {
  partS: GPUBuffer;
  partI: GPUBuffer;
  /** Running lists in; ignored when `first` (there is none yet), but must still be bound. */
  runInS: GPUBuffer;
  runInI: GPUBuffer;
  runOutS: GPUBuffer;
  runOutI: GPUBuffer;
  rows: number;
  k: number;
  nseg: number;
  first: boolean;
  /** First row of the running lists. */
  row0: number;
  /** Partial lists per row in partS/partI (default nseg) and the first one to merge (default 0). */
  stride?: number;
  seg0?: number;
}

export function encodeTopkMerge(kernels: Kernels, a: TopkMergeArgs): void {
  if (a.nseg < 1 || a.nseg > MERGE_MAX_SEG) throw new Error(`topk-merge: nseg must be in [1, ${MERGE_MAX_SEG}]; got ${a.nseg}`);
  kernels.recorder.dispatch(
    'topk-merge',
    kernels.pipelines.get('topk-merge', { WG }),
    [a.rows, a.k, a.nseg, a.first ? 1 : 0, a.row0, a.stride ?? a.nseg, a.seg0 ?? 0],
    [a.partS, a.partI, a.runInS, a.runInI, a.runOutS, a.runOutI],
    kernels.fold(a.rows, WG),
  );
}
