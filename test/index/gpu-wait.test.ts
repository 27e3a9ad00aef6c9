/**
 * GpuContext.wait: on a software adapter it sleeps between polls instead of spinning; whatever the
 * adapter, it must hand back exactly what the awaited work resolves or rejects with, including work
 * that settles at once, after several polls, or after the first sleep.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { pollSleepMs } from '../../src/gpu/context.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);

const later = <T>(ms: number, value: T): Promise<T> => new Promise((resolve) => setTimeout(() => resolve(value), ms));

describe('pollSleepMs', () => {
  it('sleeps a quarter of the time waited, from 50 us up to 1 ms', () => {
    expect(pollSleepMs(0)).toBe(0.05);
    expect(pollSleepMs(0.1)).toBe(0.05);
    expect(pollSleepMs(0.4)).toBeCloseTo(0.1, 12);
    expect(pollSleepMs(2)).toBe(0.5);
    expect(pollSleepMs(4)).toBe(1);
    expect(pollSleepMs(1000)).toBe(1);
  });
});

describe.skipIf(!gpu)('GpuContext.wait', () => {
  it('resolves with the work value, settled at once or later', async () => {
    const ctx = gpu!.device.ctx;
    expect(await ctx.wait(Promise.resolve(7))).toBe(7);
    expect(await ctx.wait(later(0, 'soon'))).toBe('soon');
    expect(await ctx.wait(later(15, [1, 2]))).toEqual([1, 2]);
  });

  it('rejects with the work error', async () => {
    const ctx = gpu!.device.ctx;
    await expect(ctx.wait(Promise.reject(new Error('at once')))).rejects.toThrow('at once');
    await expect(ctx.wait(later(5, null).then(() => Promise.reject(new Error('after a sleep'))))).rejects.toThrow('after a sleep');
  });

  it('waits for a real readback', async () => {
    const device = gpu!.device;
    const b = device.buffer('wait-test', 16);
    device.upload(b, 0, new Uint32Array([1, 2, 3, 4]));
    const [bytes] = await device.read([{ buffer: b, offset: 0, bytes: 16 }]);
    device.release(b);
    expect([...new Uint32Array(bytes)]).toEqual([1, 2, 3, 4]);
  });
});
