/** What every kernel's encode function needs: where to record, the pipeline cache, the limits. */
import type { GpuContext } from '../context.js';
import { PipelineCache } from '../pipelines.js';
import { Recorder, foldGroups } from '../recorder.js';

export class Kernels {
  readonly pipelines: PipelineCache;
  readonly recorder: Recorder;

  constructor(readonly ctx: GpuContext, pipelines?: PipelineCache) {
    this.pipelines = pipelines ?? new PipelineCache(ctx);
    this.recorder = new Recorder(ctx);
  }

  get maxGroups(): number {
    return this.ctx.limits.maxComputeWorkgroupsPerDimension;
  }

  fold(invocations: number, wg: number): [number, number] {
    return foldGroups(invocations, wg, this.maxGroups);
  }
}
