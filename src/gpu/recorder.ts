/**
 * Records a sequence of kernel dispatches and buffer copies, then encodes them into one command
 * buffer and submits it once. Each dispatch's parameters (a few u32s) go into one shared uniform
 * buffer at aligned offsets, so a search with hundreds of dispatches creates one uniform buffer.
 * Where the device has timestamp queries and timing is asked for, each dispatch gets its own pass
 * with begin/end timestamps, summed per kernel name.
 */
import type { BufferPool } from './buffer-pool.js';
import type { GpuContext } from './context.js';

interface DispatchOp {
  kind: 'dispatch';
  kernel: string;
  pipeline: GPUComputePipeline;
  params: number[];
  buffers: GPUBuffer[];
  groups: [number, number];
}

interface ClearOp {
  kind: 'clear';
  buffer: GPUBuffer;
}

interface CopyOp {
  kind: 'copy';
  src: GPUBuffer;
  srcOffset: number;
  dst: GPUBuffer;
  dstOffset: number;
  size: number;
}

/** WebGPU allows at most 4096 queries per query set: two per timed dispatch. */
const MAX_TIMED_DISPATCHES = 2048;

export class Recorder {
  private readonly ops: (DispatchOp | CopyOp | ClearOp)[] = [];
  /**
   * Bind groups by pipeline, uniform buffer and buffers; the dispatch's uniform slot is a dynamic
   * offset (src/gpu/pipelines.ts), so the dispatches of a loop over the same pooled buffers share
   * one, and a repeated search creates none after warm-up. Cleared when large (entries may name
   * buffers since destroyed; they are never looked up again). Each bind group is a descriptor set
   * to the driver (on lavapipe, a memory map of its own) until the garbage collector frees its
   * wrapper, so creating one per dispatch is what to avoid.
   */
  private readonly bindGroups = new Map<string, GPUBindGroup>();
  /** Bind groups created so far (a warm search creates none). */
  bindGroupsCreated = 0;
  /**
   * The dispatches' parameters, one 256-byte slot each. One buffer, kept and grown, so bind groups
   * stay valid from submit to submit. Rewriting it for the next submit is safe: queue writes are
   * ordered after the command buffers submitted before them.
   */
  private uniforms: GPUBuffer | null = null;

  constructor(
    private readonly ctx: GpuContext,
    private readonly pool: BufferPool,
  ) {}

  /** Whether anything is recorded and not yet submitted. */
  get pending(): boolean {
    return this.ops.length > 0;
  }

  /** Drops everything recorded and not submitted (a plan that failed while recording). */
  discard(): void {
    this.ops.length = 0;
  }

  /** Records a dispatch: binding 0 is the uniform `params` (u32s), bindings 1.. are `buffers`. */
  dispatch(kernel: string, pipeline: GPUComputePipeline, params: number[], buffers: GPUBuffer[], groups: [number, number]): void {
    if (groups[0] === 0 || groups[1] === 0) return;
    this.ops.push({ kind: 'dispatch', kernel, pipeline, params, buffers, groups });
  }

  /** Records zero-filling all of `buffer`. */
  clear(buffer: GPUBuffer): void {
    this.ops.push({ kind: 'clear', buffer });
  }

  copy(src: GPUBuffer, srcOffset: number, dst: GPUBuffer, dstOffset: number, size: number): void {
    if (size > 0) this.ops.push({ kind: 'copy', src, srcOffset, dst, dstOffset, size });
  }

  /**
   * Encodes and submits everything recorded (the submit itself happens before this returns, so
   * queue writes made afterwards are ordered after it); the promise settles when the GPU has
   * finished. With `timed` and timestamp support, resolves to GPU milliseconds per kernel name;
   * otherwise to null.
   */
  async submit(timed = false): Promise<Record<string, number> | null> {
    const { device } = this.ctx;
    this.ctx.check();
    if (this.ops.length === 0) return null;
    const dispatches = this.ops.filter((op): op is DispatchOp => op.kind === 'dispatch');
    const stride = Math.max(256, device.limits.minUniformBufferOffsetAlignment);
    const paramBytes = 64;
    const uniformBytes = Math.max(stride, dispatches.length * stride);
    const uniforms = this.uniformBuffer(uniformBytes);
    const data = new Uint32Array(uniformBytes / 4);
    dispatches.forEach((op, i) => {
      if (op.params.length * 4 > paramBytes) throw new Error(`${op.kernel}: too many parameters`);
      data.set(op.params, (i * stride) / 4);
    });
    device.queue.writeBuffer(uniforms, 0, data);

    // Validation errors (an invalid pipeline, a bad binding) become an exception of this submit.
    device.pushErrorScope('validation');
    const timestamps = timed && this.ctx.hasTimestamps;
    const nTimed = timestamps ? Math.min(dispatches.length, MAX_TIMED_DISPATCHES) : 0;
    const querySet = nTimed > 0 ? device.createQuerySet({ type: 'timestamp', count: 2 * nTimed }) : null;
    const encoder = device.createCommandEncoder();
    let pass: GPUComputePassEncoder | null = null;
    let di = 0;
    for (const op of this.ops) {
      if (op.kind === 'copy' || op.kind === 'clear') {
        pass?.end();
        pass = null;
        if (op.kind === 'copy') encoder.copyBufferToBuffer(op.src, op.srcOffset, op.dst, op.dstOffset, op.size);
        else encoder.clearBuffer(op.buffer);
        continue;
      }
      const bindGroup = this.bindGroup(op, uniforms, paramBytes);
      if (querySet && di < nTimed) {
        pass?.end();
        pass = encoder.beginComputePass({
          timestampWrites: { querySet, beginningOfPassWriteIndex: 2 * di, endOfPassWriteIndex: 2 * di + 1 },
        });
      } else if (!pass) {
        pass = encoder.beginComputePass();
      }
      pass.setPipeline(op.pipeline);
      pass.setBindGroup(0, bindGroup, [di * stride]);
      pass.dispatchWorkgroups(op.groups[0], op.groups[1]);
      if (querySet && di < nTimed) {
        pass.end();
        pass = null;
      }
      di++;
    }
    pass?.end();

    let resolve: GPUBuffer | null = null;
    let staging: GPUBuffer | null = null;
    if (querySet) {
      const bytes = 16 * nTimed;
      resolve = device.createBuffer({ size: bytes, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
      staging = device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      encoder.resolveQuerySet(querySet, 0, 2 * nTimed, resolve, 0);
      encoder.copyBufferToBuffer(resolve, 0, staging, 0, bytes);
    }
    device.queue.submit([encoder.finish()]);
    this.ops.length = 0;
    const invalid = device.popErrorScope();
    try {
      const error = await this.ctx.wait(invalid);
      if (error) throw new Error(`WebGPU rejected the commands: ${error.message}`);
      await this.ctx.wait(device.queue.onSubmittedWorkDone());
      this.ctx.check();
      if (!staging) return null;
      await this.ctx.wait(staging.mapAsync(GPUMapMode.READ));
      const ticks = new BigUint64Array(staging.getMappedRange().slice(0));
      staging.unmap();
      const perKernel: Record<string, number> = {};
      for (let i = 0; i < nTimed; i++) {
        const ns = Number(ticks[2 * i + 1] - ticks[2 * i]);
        const name = dispatches[i].kernel;
        perKernel[name] = (perKernel[name] ?? 0) + ns / 1e6;
      }
      return perKernel;
    } finally {
      querySet?.destroy();
      resolve?.destroy();
      staging?.destroy();
    }
  }

  private uniformBuffer(bytes: number): GPUBuffer {
    if (!this.uniforms || this.uniforms.size < bytes) {
      // Only submitted work reads the old one, and destroying keeps it alive until that work is done.
      if (this.uniforms) this.pool.releaseNow(this.uniforms);
      this.uniforms = this.pool.acquire('params', bytes, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
    }
    return this.uniforms;
  }

  private bindGroup(op: DispatchOp, uniforms: GPUBuffer, size: number): GPUBindGroup {
    const key = `${objectId(op.pipeline)}|${objectId(uniforms)}|${op.buffers.map(objectId).join(',')}`;
    let group = this.bindGroups.get(key);
    if (!group) {
      if (this.bindGroups.size >= MAX_BIND_GROUPS) this.bindGroups.clear();
      group = this.ctx.device.createBindGroup({
        layout: op.pipeline.getBindGroupLayout(0),
        entries: [
          { binding: 0, resource: { buffer: uniforms, offset: 0, size } },
          ...op.buffers.map((buffer, j) => ({ binding: j + 1, resource: { buffer } })),
        ],
      });
      this.bindGroups.set(key, group);
      this.bindGroupsCreated++;
    }
    return group;
  }
}

const MAX_BIND_GROUPS = 4096;
const ids = new WeakMap<object, number>();
let nextId = 1;

/** A number per object, for cache keys (never reused). */
function objectId(o: object): number {
  let id = ids.get(o);
  if (id === undefined) ids.set(o, (id = nextId++));
  return id;
}

/**
 * Workgroup counts for `invocations` 1-D invocations of `wg` each, folded into (x, y) when more than
 * `maxPerDim` workgroups are needed. Shaders rebuild the index as gid.x + gid.y * nwg.x * wg, and
 * must bounds-check it (the fold may round up).
 */
export function foldGroups(invocations: number, wg: number, maxPerDim: number): [number, number] {
  const groups = Math.ceil(invocations / wg);
  if (groups <= maxPerDim) return [groups, 1];
  const y = Math.ceil(groups / maxPerDim);
  return [Math.ceil(groups / y), y];
}

/** Creates a buffer; `data`, when given, is copied in at creation. */
export function createBuffer(device: GPUDevice, label: string, size: number, usage: number, data?: ArrayBufferView): GPUBuffer {
  const padded = Math.max(16, Math.ceil(size / 4) * 4);
  const buffer = device.createBuffer({ label, size: padded, usage, mappedAtCreation: data !== undefined });
  if (data) {
    new Uint8Array(buffer.getMappedRange()).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    buffer.unmap();
  }
  return buffer;
}

export const STORAGE = (): number => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
