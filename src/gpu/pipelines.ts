/**
 * Compute pipelines cached by shader name plus specialisation constants (never by data shape).
 * Each has an explicit layout read from its WGSL (bindingsOf): binding 0, the uniform parameters,
 * takes a dynamic offset, so one bind group serves every dispatch of the same pipeline and
 * buffers whatever its slot in the recorder's uniform buffer (src/gpu/recorder.ts).
 */
import type { GpuContext } from './context.js';
import { specialize } from './shaders.js';

/** A binding of group 0 as a shader declares it. */
export interface ShaderBinding {
  binding: number;
  type: GPUBufferBindingType;
}

/**
 * The group-0 bindings a kernel's WGSL declares (`@group(0) @binding(N) var<uniform> ...`,
 * `var<storage, read>` or `var<storage>`: read-only, `var<storage, read_write>`), in binding
 * order. Throws on one of another group or kind (textures, samplers: no kernel has them), a
 * number given twice, a declaration not written that way, and a binding 0 that is not the uniform
 * parameters, naming the kernel.
 */
export function bindingsOf(code: string, name: string): ShaderBinding[] {
  const out: ShaderBinding[] = [];
  for (const m of code.matchAll(/^\s*@group\((\d+)\)\s*@binding\((\d+)\)\s*var(<[^>]*>)?/gm)) {
    const [line, group, binding, space] = m;
    const kind = (space ?? '').replace(/[<>\s]/g, '').split(',');
    const type: GPUBufferBindingType | null =
      kind[0] === 'uniform' ? 'uniform'
        : kind[0] === 'storage' ? (kind[1] === 'read_write' ? 'storage' : kind[1] === undefined || kind[1] === 'read' ? 'read-only-storage' : null)
          : null;
    if (group !== '0' || type === null) throw new Error(`${name}: a kernel binds uniform or storage buffers of group 0 only; got ${line.trim()}`);
    if (out.some((b) => b.binding === Number(binding))) throw new Error(`${name}: binding ${binding} is declared twice`);
    out.push({ binding: Number(binding), type });
  }
  // A declaration this reading misses (attributes in another order, after other text) would leave
  // the layout short and fail later, less clearly: refuse it here.
  const declared = code.split('\n').filter((l) => /@binding\(/.test(l.replace(/\/\/.*$/, ''))).length;
  if (declared !== out.length) throw new Error(`${name}: ${declared} binding declarations, ${out.length} of them as @group(0) @binding(N) var<...> at a line's start`);
  out.sort((a, b) => a.binding - b.binding);
  if (out.length && (out[0].binding !== 0 || out[0].type !== 'uniform')) throw new Error(`${name}: binding 0 must be the uniform parameters (the recorder binds them there)`);
  return out;
}

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
      const { device } = this.ctx;
      const module = device.createShaderModule({ label: name, code });
      const group = device.createBindGroupLayout({
        label: key,
        entries: bindingsOf(code, name).map(({ binding, type }) => ({
          binding,
          visibility: GPUShaderStage.COMPUTE,
          buffer: { type, hasDynamicOffset: binding === 0 && type === 'uniform' },
        })),
      });
      pipeline = device.createComputePipeline({
        label: key,
        layout: device.createPipelineLayout({ label: key, bindGroupLayouts: [group] }),
        compute: { module, entryPoint: 'main', constants: overrides },
      });
      this.cache.set(key, pipeline);
    }
    return pipeline;
  }
}
