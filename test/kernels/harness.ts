/** Runs one GPU kernel on host arrays: upload, encode, submit, read back. */
import { type MockInstance, vi } from 'vitest';
import type { Kernels } from '../../src/gpu/kernels/kernels.js';
import { STORAGE, createBuffer } from '../../src/gpu/recorder.js';
import type { GpuBackend } from '../helpers/gpu.js';

export class KernelHarness {
  readonly kernels: Kernels;
  private readonly buffers: GPUBuffer[] = [];

  constructor(readonly backend: GpuBackend) {
    this.kernels = backend.device.kernels;
  }

  upload(data: Float32Array | Uint32Array, label = 'in'): GPUBuffer {
    const b = createBuffer(this.backend.device.ctx.device, label, data.byteLength, STORAGE(), data);
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
    return new Float32Array(await this.read(b, len * 4));
  }

  async readU32(b: GPUBuffer, len: number): Promise<Uint32Array> {
    return new Uint32Array(await this.read(b, len * 4));
  }

  private async read(src: GPUBuffer, size: number): Promise<ArrayBuffer> {
    const { device } = this.backend.device.ctx;
    const bytes = Math.max(16, Math.ceil(size / 4) * 4);
    const staging = device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    try {
      const enc = device.createCommandEncoder();
      enc.copyBufferToBuffer(src, 0, staging, 0, Math.ceil(size / 4) * 4);
      device.queue.submit([enc.finish()]);
      await staging.mapAsync(GPUMapMode.READ);
      return staging.getMappedRange().slice(0, size);
    } finally {
      staging.destroy();
    }
  }

  dispose(): void {
    for (const b of this.buffers.splice(0)) b.destroy();
  }
}

/** 0x7fc00000: a NaN bit pattern no kernel produces, so unwritten outputs show up. */
export const POISON = 0x7fc00000;

/**
 * Runs `fn` with a harness on a device that claims at most `max` workgroups per dimension (every
 * other limit as the adapter's), and a spy on the recorder's dispatches: how a kernel's encoder
 * splits a tile too wide for one dispatch.
 */
export async function withWorkgroupLimit(backend: GpuBackend, max: number, fn: (h: KernelHarness, dispatch: MockInstance<Kernels['recorder']['dispatch']>) => Promise<void>): Promise<void> {
  const { ctx } = backend.device;
  const real = ctx.limits as unknown as Record<string, unknown>;
  const names = Object.keys(Object.getOwnPropertyDescriptors(Object.getPrototypeOf(real)));
  const limits = { ...Object.fromEntries(names.map((k) => [k, real[k]])), maxComputeWorkgroupsPerDimension: max };
  const spy = vi.spyOn(ctx, 'limits', 'get').mockReturnValue(limits as unknown as GPUSupportedLimits);
  const h = new KernelHarness(backend);
  const dispatch = vi.spyOn(h.kernels.recorder, 'dispatch');
  try {
    await fn(h, dispatch);
  } finally {
    dispatch.mockRestore();
    spy.mockRestore();
    h.dispose();
  }
}
