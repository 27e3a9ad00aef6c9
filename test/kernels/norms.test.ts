import { afterAll, describe, expect, it } from 'vitest';
import { norms } from '../../src/cpu/norms.js';
import { padRows, paddedDim } from '../../src/device.js';
import { randomFloats, randomSmallInts } from '../../src/common/random.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { KernelHarness, POISON } from './harness.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);

describe.skipIf(!gpu)('gpu norms vs cpu twin', () => {
  const shapes: [number, number][] = [[1, 1], [5, 3], [64, 4], [130, 17], [1000, 128]];
  for (const [n, d] of shapes) {
    for (const kind of ['int', 'float'] as const) {
      it(`n=${n} d=${d} ${kind}`, async () => {
        const h = new KernelHarness(gpu!);
        const x = kind === 'int' ? randomSmallInts(n * d, n + d) : randomFloats(n * d, n * d);
        const dpad = paddedDim(d);
        // Rows 2.. of the buffer, written from element 1 of the output: offsets are exercised too.
        const row0 = Math.min(2, n - 1);
        const rows = n - row0;
        const xBuf = h.upload(padRows(x, n, d, dpad));
        const out = h.output(rows + 1, POISON);
        const { encodeNorms } = await import('../../src/gpu/kernels/norms.js');
        encodeNorms(h.kernels, { x: xBuf, out, n: rows, dpad, row0, out0: 1 });
        await h.run();
        const got = await h.readF32(out, rows + 1);
        const want = norms(x.subarray(row0 * d), rows, d);
        expect(Number.isNaN(got[0]), 'element before out0 untouched').toBe(true);
        for (let i = 0; i < rows; i++) {
          if (kind === 'int') expect(got[1 + i]).toBe(want[i]);
          else expect(Math.abs(got[1 + i] - want[i])).toBeLessThanOrEqual(1e-5 * want[i] + 1e-6);
        }
        h.dispose();
      });
    }
  }
});

describe.skipIf(!gpu)('dispatches of one pipeline on the same buffers', () => {
  it('share one bind group, each reading its own parameters (a dynamic uniform offset)', async () => {
    const h = new KernelHarness(gpu!);
    const n = 40;
    const d = 8;
    const x = randomSmallInts(n * d, 11);
    const xBuf = h.upload(padRows(x, n, d, paddedDim(d)));
    const out = h.output(n, POISON);
    const { encodeNorms } = await import('../../src/gpu/kernels/norms.js');
    // Warm: the pipeline and its first bind group exist before counting.
    encodeNorms(h.kernels, { x: xBuf, out, n: 1, dpad: paddedDim(d), row0: 0, out0: 0 });
    await h.run();
    const before = gpu!.device.poolStats().bindGroups;
    // Ten dispatches in one submit, each its own four rows (its own uniform slot): at most one new
    // bind group (the uniform buffer grows to ten slots), where a group a slot made ten.
    for (let b = 0; b < 10; b++) encodeNorms(h.kernels, { x: xBuf, out, n: 4, dpad: paddedDim(d), row0: 4 * b, out0: 4 * b });
    await h.run();
    expect(gpu!.device.poolStats().bindGroups - before).toBeLessThanOrEqual(1);
    expect(Array.from(await h.readF32(out, n))).toEqual(Array.from(norms(x, n, d)));
    h.dispose();
  });
});
