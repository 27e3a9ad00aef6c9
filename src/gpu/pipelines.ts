/**
 * Compute pipelines cached by shader name plus specialisation constants (never by data shape).
 */
import type { GpuContext } from './context.js';
import { specialize } from './shaders.js';

export class PipelineCache {
  private readonly cache = new Map<string, GPUComputePipeline>();

  constructor(private readonly ctx: GpuContext) {}

  get(name: string, constants: Record<string, number> = {}): GPUComputePipeline {
    const key = `${name}|${Object.keys(constants)
      .sort()
      .map((k) => `${k}=${constants[k]}`)
      .join(',')}`;
    let pipeline = this.cache.get(key);
    if (!pipeline) {
      const { code, overrides } = specialize(name, constants);
      const module = this.ctx.device.createShaderModule({ label: name, code });
      pipeline = this.ctx.device.createComputePipeline({
        label: key,
        layout: 'auto',
        compute: { module, entryPoint: 'main', constants: overrides },
      });
      this.cache.set(key, pipeline);
    }
    return pipeline;
  }
}
