import { afterAll, describe, expect, it } from 'vitest';
import { maskScores } from '../../src/cpu/mask-scores.js';
import { selectRadix } from '../../src/cpu/select-radix.js';
import { topk } from '../../src/cpu/topk.js';
import { topkMerge } from '../../src/cpu/topk-merge.js';
import { encodeMaskScores } from '../../src/gpu/kernels/mask-scores.js';
import { encodeSelectRadix } from '../../src/gpu/kernels/select-radix.js';
import { encodeTopk } from '../../src/gpu/kernels/topk.js';
import { encodeTopkMerge } from '../../src/gpu/kernels/topk-merge.js';
import { rng } from '../../src/common/random.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { MASK_DENSITIES, MASK_SHAPES, type MaskCase, maskCase, maskOf, maskedReference, randomAllow } from '../helpers/mask.js';
import { expectSameRows, oracle, sortedRows } from '../helpers/select.js';
import { KernelHarness, POISON } from './harness.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);

/** Runs mask-scores on the GPU; returns the whole buffer's bits. */
async function maskOnGpu(c: MaskCase): Promise<Uint32Array> {
  const h = new KernelHarness(gpu!);
  const scores = h.upload(c.scores);
  encodeMaskScores(h.kernels, { scores, mask: h.upload(c.mask), rows: c.rows, cols: c.cols, ldc: c.ldc, bit0: c.bit0 });
  await h.run();
  const got = await h.readU32(scores, c.scores.length);
  h.dispose();
  return got;
}

/** The index of the first word where a and b differ, or -1. */
function firstDifference(a: Uint32Array, b: Uint32Array): number {
  if (a.length !== b.length) return 0;
  return a.findIndex((v, j) => v !== b[j]);
}

describe.skipIf(!gpu)('gpu mask-scores vs cpu twin', () => {
  let seed = 1;
  for (const [rows, cols, ldc, bit0] of MASK_SHAPES) {
    for (const density of MASK_DENSITIES) {
      const caseSeed = seed++;
      it(`rows=${rows} cols=${cols} ldc=${ldc} bit0=${bit0}, ${density * 100}% allowed (seed ${caseSeed})`, async () => {
        const c = maskCase(rows, cols, ldc, bit0, density, rng(caseSeed));
        const got = await maskOnGpu(c);
        const want = c.scores.slice();
        maskScores(want, ldc, rows, cols, c.mask, bit0);
        expect(firstDifference(got, new Uint32Array(want.buffer)), 'gpu vs twin').toBe(-1);
        // The twin is checked against the definition in test/cpu; here the GPU is too, cheaply.
        expect(firstDifference(got, new Uint32Array(maskedReference(c).buffer)), 'gpu vs definition').toBe(-1);
      });
    }
  }

  // One row of more columns than a dispatch has workgroups per dimension: the dispatch folds.
  const maxGroups = gpu?.device.kernels.maxGroups ?? Infinity;
  it.skipIf(maxGroups > 1 << 16)(`folds past ${maxGroups} workgroups per dimension`, async () => {
    const cols = maxGroups * 64 + 100;
    const c = maskCase(1, cols, cols, 3, 0.5, rng(99));
    const got = await maskOnGpu(c);
    expect(firstDifference(got, new Uint32Array(maskedReference(c).buffer)), 'gpu vs definition').toBe(-1);
  });
});

// What a masked column becomes, +Infinity with a real id, must rank after every finite score and
// before padding, in the (score, id) order, in every selection kernel: two tiles of a search, each
// masked, then topk + topk-merge (a running list with such entries bounds the second tile) or
// select-radix (the same running list fed back). The finite entries come first, in (score, id)
// order, and GPU and twins agree exactly. [rows, cols, ldc, k, share allowed]
const selectShapes: [number, number, number, number, number][] = [
  [3, 1000, 1003, 16, 0.05],
  [2, 700, 700, 300, 0.05],
  [2, 500, 512, 40, 0],
];

describe.skipIf(!gpu)('selection of masked tiles (+Infinity with real ids)', () => {
  for (const [rows, cols, ldc, k, density] of selectShapes) {
    for (const ties of [true, false]) {
      it(`rows=${rows} cols=${cols} k=${k}, ${density * 100}% allowed, ${ties ? 'ties' : 'floats'}`, async () => {
        const r = rng(cols + k);
        const id0 = 5;
        const bit0 = 37;
        const nseg = 4;
        const segLen = Math.ceil(cols / nseg);
        // Two tiles of `cols` columns, ids id0 + t * cols + c, mask bits bit0 + t * cols + c; columns past cols hold -1000.
        const allow = randomAllow(2 * cols, density, r);
        const mask = maskOf(allow, bit0, r);
        const tiles = [0, 1].map(() => {
          const s = new Float32Array(rows * ldc).fill(-1000);
          for (let row = 0; row < rows; row++) for (let c = 0; c < cols; c++) s[row * ldc + c] = ties ? Math.floor(r() * 8) : r();
          return s;
        });

        const h = new KernelHarness(gpu!);
        const maskBuf = h.upload(mask);
        const tileBufs = tiles.map((s) => h.upload(s));
        const part = { s: h.output(rows * nseg * k, POISON), i: h.output(rows * nseg * k, POISON) };
        const runs = [0, 1].map(() => ({ s: h.output(rows * k, POISON), i: h.output(rows * k, POISON) }));
        const radix = [0, 1].map(() => ({ s: h.output(rows * k, POISON), i: h.output(rows * k, POISON) }));
        for (const t of [0, 1]) {
          const [prev, run] = [runs[1 - t], runs[t]];
          encodeMaskScores(h.kernels, { scores: tileBufs[t], mask: maskBuf, rows, cols, ldc, bit0: bit0 + t * cols });
          encodeTopk(h.kernels, {
            scores: tileBufs[t], outS: part.s, outI: part.i, rows, cols, ldc, k, nseg, segLen, id0: id0 + t * cols,
            bound: t === 0 ? null : { s: prev.s, i: prev.i, row0: 0 },
          });
          encodeTopkMerge(h.kernels, {
            partS: part.s, partI: part.i, runInS: prev.s, runInI: prev.i, runOutS: run.s, runOutI: run.i, rows, k, nseg, first: t === 0, row0: 0,
          });
          encodeSelectRadix(h.kernels, {
            scores: tileBufs[t], ids: null, runInS: radix[1 - t].s, runInI: radix[1 - t].i, runOutS: radix[t].s, runOutI: radix[t].i,
            rows, cols, ldc, k, id0: id0 + t * cols, first: t === 0, row0: 0,
          });
        }
        await h.run();
        const got = {
          tiles: await Promise.all(tileBufs.map((b) => h.readU32(b, rows * ldc))),
          topk: sortedRows(await h.readF32(runs[1].s, rows * k), await h.readU32(runs[1].i, rows * k), rows, k),
          topkRaw: [await h.readU32(runs[1].s, rows * k), await h.readU32(runs[1].i, rows * k)],
          radix: sortedRows(await h.readF32(radix[1].s, rows * k), await h.readU32(radix[1].i, rows * k), rows, k),
        };
        h.dispose();

        // The twins, step by step as on the GPU.
        const cpuPart = { s: new Float32Array(rows * nseg * k), i: new Uint32Array(rows * nseg * k) };
        const cpuRuns = [0, 1].map(() => ({ s: new Float32Array(rows * k), i: new Uint32Array(rows * k) }));
        const cpuRadix = [0, 1].map(() => ({ s: new Float32Array(rows * k), i: new Uint32Array(rows * k) }));
        for (const t of [0, 1]) {
          const [prev, run] = [cpuRuns[1 - t], cpuRuns[t]];
          maskScores(tiles[t], ldc, rows, cols, mask, bit0 + t * cols);
          topk(tiles[t], ldc, rows, cols, id0 + t * cols, k, nseg, segLen, cpuPart.s, cpuPart.i, t === 0 ? null : { s: prev.s, i: prev.i, row0: 0 });
          topkMerge(cpuPart.s, cpuPart.i, rows, nseg, k, t === 0 ? null : prev.s, t === 0 ? null : prev.i, run.s, run.i);
          const radixIn = t === 0 ? null : cpuRadix[0];
          selectRadix(tiles[t], ldc, rows, cols, id0 + t * cols, null, k, radixIn?.s ?? null, radixIn?.i ?? null, cpuRadix[t].s, cpuRadix[t].i);
        }
        for (const t of [0, 1]) expect(firstDifference(got.tiles[t], new Uint32Array(tiles[t].buffer)), `masked tile ${t}: gpu vs twin`).toBe(-1);
        expect(firstDifference(got.topkRaw[0], new Uint32Array(cpuRuns[1].s.buffer)), 'topk-merge scores: gpu vs twin').toBe(-1);
        expect(firstDifference(got.topkRaw[1], cpuRuns[1].i), 'topk-merge ids: gpu vs twin').toBe(-1);
        expectSameRows(got.radix, sortedRows(cpuRadix[1].s, cpuRadix[1].i, rows, k), 'select-radix: gpu vs twin');

        // Both against a full sort of the two masked tiles as one.
        const both = new Float32Array(rows * 2 * cols);
        for (let row = 0; row < rows; row++) {
          for (const t of [0, 1]) both.set(tiles[t].subarray(row * ldc, row * ldc + cols), row * 2 * cols + t * cols);
        }
        const want = oracle({ rows, cols: 2 * cols, ldc: 2 * cols, k, id0, colIds: null, scores: both, runS: null, runI: null });
        expectSameRows(got.topk, want, 'topk + topk-merge vs full sort');
        expectSameRows(got.radix, want, 'select-radix vs full sort');
        // The finite entries, one per allowed column up to k, come first; masked ones follow.
        const allowed = allow.filter(Boolean).length;
        for (const row of want) expect(row.findIndex(([s]) => s === Infinity), 'finite entries first').toBe(allowed >= k ? -1 : allowed);
      });
    }
  }
});
