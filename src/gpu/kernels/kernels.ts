/** What every kernel's encode function needs: where to record, the pipeline cache, the limits. */
import type { GpuContext } from '../context.js';
import type { PipelineCache } from '../pipelines.js';
import { type Recorder, foldGroups } from '../recorder.js';
import type { GemmVariant } from './gemm-variant.js';

export class Kernels {
  constructor(
    readonly ctx: GpuContext,
    readonly pipelines: PipelineCache,
    readonly recorder: Recorder,
    /** The gemm-scores variant dispatched unless a caller names one (see src/gpu/kernel-choice.ts). */
    readonly gemmVariant: GemmVariant,
  ) {}

  get maxGroups(): number {
    return this.ctx.limits.maxComputeWorkgroupsPerDimension;
  }

  fold(invocations: number, wg: number): [number, number] {
    return foldGroups(invocations, wg, this.maxGroups);
  }
}
