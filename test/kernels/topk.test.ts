import { afterAll, describe, expect, it } from 'vitest';
import { topk } from '../../src/cpu/topk.js';
import { topkMerge } from '../../src/cpu/topk-merge.js';
import { TOPK_MAX_K, encodeTopk } from '../../src/gpu/kernels/topk.js';
import { encodeTopkMerge } from '../../src/gpu/kernels/topk-merge.js';
import { rng } from '../../src/random.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { KernelHarness, POISON } from './harness.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);

/** Scores with many exact ties (integers) or distinct floats. */
function scoresFor(len: number, seed: number, ties: boolean): Float32Array {
  const r = rng(seed);
  const out = new Float32Array(len);
  for (let i = 0; i < len; i++) out[i] = ties ? Math.floor(r() * 16) - 8 : r() * 2 - 1;
  return out;
}

// [rows, cols, ldc, k, nseg]: k = 1, k = max, k > segment (padding), one segment, uneven segments.
const shapes: number[][] = [
  [1, 1, 1, 1, 1],
  [3, 50, 53, 1, 4],
  [4, 100, 100, 10, 3],
  [2, 33, 40, 50, 2],
  [5, 700, 700, 64, 5],
  [2, 2100, 2100, TOPK_MAX_K, 2],
];

describe.skipIf(!gpu)('gpu topk and topk-merge vs cpu twins', () => {
  for (const [rows, cols, ldc, k, nseg] of shapes) {
    for (const ties of [true, false]) {
      for (const withBound of [false, true]) {
        it(`rows=${rows} cols=${cols} k=${k} nseg=${nseg} ${ties ? 'ties' : 'floats'}${withBound ? ', bounded by a running list' : ''}`, async () => {
          const h = new KernelHarness(gpu!);
          const scores = scoresFor(rows * ldc, rows * cols + k, ties);
          const segLen = Math.ceil(cols / nseg);
          const id0 = 1000;
          const len = rows * nseg * k;
          // A running list from an earlier tile (ids below id0), for the bound and the merge.
          const prevS = new Float32Array(rows * k);
          const prevI = new Uint32Array(rows * k);
          const prevScores = scoresFor(rows * 3 * k, 99, ties);
          const prevPart = { s: new Float32Array(rows * k), i: new Uint32Array(rows * k) };
          topk(prevScores, 3 * k, rows, 3 * k, 0, k, 1, 3 * k, prevPart.s, prevPart.i);
          topkMerge(prevPart.s, prevPart.i, rows, 1, k, null, null, prevS, prevI);
          const prevSBuf = h.upload(prevS);
          const prevIBuf = h.upload(prevI);
          const partS = h.output(len, POISON);
          const partI = h.output(len, POISON);
          encodeTopk(h.kernels, {
            scores: h.upload(scores), outS: partS, outI: partI, rows, cols, ldc, k, nseg, segLen, id0,
            bound: withBound ? { s: prevSBuf, i: prevIBuf, row0: 0 } : null,
          });
          const runOutS = h.output(rows * k, POISON);
          const runOutI = h.output(rows * k, POISON);
          encodeTopkMerge(h.kernels, {
            partS, partI, runInS: prevSBuf, runInI: prevIBuf, runOutS, runOutI, rows, k, nseg, first: false, row0: 0,
          });
          await h.run();
          const wantS = new Float32Array(len);
          const wantI = new Uint32Array(len);
          topk(scores, ldc, rows, cols, id0, k, nseg, segLen, wantS, wantI, withBound ? { s: prevS, i: prevI, row0: 0 } : null);
          expect(Array.from(await h.readU32(partI, len)), 'topk ids').toEqual(Array.from(wantI));
          expect(Array.from(await h.readF32(partS, len)), 'topk scores').toEqual(Array.from(wantS));
          // The merged result never depends on the bound: compare with the unbounded twin.
          const fullS = new Float32Array(len);
          const fullI = new Uint32Array(len);
          topk(scores, ldc, rows, cols, id0, k, nseg, segLen, fullS, fullI);
          const mergedS = new Float32Array(rows * k);
          const mergedI = new Uint32Array(rows * k);
          topkMerge(fullS, fullI, rows, nseg, k, prevS, prevI, mergedS, mergedI);
          expect(Array.from(await h.readU32(runOutI, rows * k)), 'merge ids').toEqual(Array.from(mergedI));
          expect(Array.from(await h.readF32(runOutS, rows * k)), 'merge scores').toEqual(Array.from(mergedS));
          h.dispose();
        });
      }
    }
  }

  it('merge with first = true ignores the running list', async () => {
    const h = new KernelHarness(gpu!);
    const k = 4;
    const partS = new Float32Array([3, 5, Infinity, Infinity, 1, 3, 4, 9]);
    const partI = new Uint32Array([7, 2, 0xffffffff, 0xffffffff, 8, 9, 1, 3]);
    const outS = h.output(k, POISON);
    const outI = h.output(k, POISON);
    const junk = h.upload(new Float32Array(k).fill(-100));
    encodeTopkMerge(h.kernels, {
      partS: h.upload(partS), partI: h.upload(partI), runInS: junk, runInI: h.upload(new Uint32Array(k)),
      runOutS: outS, runOutI: outI, rows: 1, k, nseg: 2, first: true, row0: 0,
    });
    await h.run();
    expect(Array.from(await h.readF32(outS, k))).toEqual([1, 3, 3, 4]);
    expect(Array.from(await h.readU32(outI, k))).toEqual([8, 7, 9, 1]);
    h.dispose();
  });
});
