/** Runs one GPU kernel on host arrays: upload, encode, submit, read back. */
import type { GpuBackend } from '../../src/gpu/gpu-backend.js';
import { Kernels } from '../../src/gpu/kernels/kernels.js';
import { STORAGE, createBuffer, readBuffer } from '../../src/gpu/recorder.js';

export class KernelHarness {
  readonly kernels: Kernels;
  private readonly buffers: GPUBuffer[] = [];

  constructor(readonly backend: GpuBackend) {
    this.kernels = new Kernels(backend.ctx, backend.pipelines);
  }

  upload(data: Float32Array | Uint32Array, label = 'in'): GPUBuffer {
    const b = createBuffer(this.backend.ctx.device, label, data.byteLength, STORAGE(), data);
    this.buffers.push(b);
    return b;
  }

  /** A buffer of `len` 32-bit words filled with `fill` (a poison value, to catch unwritten output). */
  output(len: number, fill: number): GPUBuffer {
    return this.upload(new Uint32Array(Math.max(1, len)).fill(fill), 'out');
  }

  async run(): Promise<void> {
    await this.kernels.recorder.submit();
  }

  async readF32(b: GPUBuffer, len: number): Promise<Float32Array> {
    return new Float32Array(await readBuffer(this.backend.ctx, b, 0, len * 4));
  }

  async readU32(b: GPUBuffer, len: number): Promise<Uint32Array> {
    return new Uint32Array(await readBuffer(this.backend.ctx, b, 0, len * 4));
  }

  dispose(): void {
    for (const b of this.buffers.splice(0)) b.destroy();
  }
}

/** 0x7fc00000: a NaN bit pattern no kernel produces, so unwritten outputs show up. */
export const POISON = 0x7fc00000;
