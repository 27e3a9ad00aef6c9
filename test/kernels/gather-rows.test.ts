import { afterAll, describe, expect, it } from 'vitest';
import { gatherRows } from '../../src/cpu/gather-rows.js';
import { rng } from '../../src/common/random.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { KernelHarness, POISON } from './harness.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);

describe('cpu gather-rows', () => {
  it('copies the chosen rows, in the order given, from rows0 into out0', () => {
    const x = Uint32Array.from({ length: 12 }, (_, i) => 100 + i); // 4 rows of 3 words
    const out = new Uint32Array(4 * 3).fill(7);
    gatherRows(x, Uint32Array.of(9, 3, 0, 3), 1, 3, 3, out, 1);
    expect(Array.from(out)).toEqual([7, 7, 7, 109, 110, 111, 100, 101, 102, 109, 110, 111]);
  });
});

describe.skipIf(!gpu)('gpu gather-rows vs cpu twin', () => {
  // Words a row: 1 (a 4-bit code row), odd, a float row; up to a dispatch folded into (x, y).
  const shapes: [number, number, number][] = [[1, 1, 1], [50, 3, 17], [300, 33, 250], [5000, 128, 4000]];
  for (const [rows, words, n] of shapes) {
    it(`${n} of ${rows} rows of ${words} words, bit for bit (NaN payloads too)`, async () => {
      const h = new KernelHarness(gpu!);
      const r = rng(rows + words);
      // Arbitrary bits, quiet and signalling NaN patterns included: copied as words, never as floats.
      const x = Uint32Array.from({ length: rows * words }, (_, i) => (i % 7 === 0 ? 0x7fa00001 : Math.floor(r() * 2 ** 32)));
      const pick = Uint32Array.from({ length: n + 2 }, () => Math.floor(r() * rows));
      const out0 = 1;
      const want = new Uint32Array((n + out0) * words).fill(POISON);
      gatherRows(x, pick, 2, n, words, want, out0);
      const xb = h.upload(x);
      const pb = h.upload(pick);
      const ob = h.output((n + out0) * words, POISON);
      const { encodeGatherRows } = await import('../../src/gpu/kernels/gather-rows.js');
      encodeGatherRows(h.kernels, { x: xb, rows: pb, out: ob, n, words, rows0: 2, out0 });
      await h.run();
      expect(Array.from(await h.readU32(ob, (n + out0) * words))).toEqual(Array.from(want));
      h.dispose();
    });
  }
});
