import { afterAll, describe, expect, it } from 'vitest';
import { selectRadix } from '../../src/cpu/select-radix.js';
import { encodeSelectRadix } from '../../src/gpu/kernels/select-radix.js';
import { HEAP_MAX_K } from '../../src/kernel-facts.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { type SelectData, expectSameRows, oracle, selectCase, sortedRows } from '../helpers/select.js';
import { KernelHarness, POISON } from './harness.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);

// [rows, cols, ldc, k, id0, valid entries per running list (null: first tile), entries they are
// the best of, extra data kinds]: k = 1, k = HEAP_MAX_K + 1, k = 4096 and the GPU's largest, k >
// cols (padding), cols not a multiple of the workgroup (256), first tile or a running list in
// (full, or part padding). A running list that is the best of many entries passes few tile entries
// (the kernel keeps them in workgroup memory, up to 1536: none, some, too many), one that is not
// passes most (the kernel reads the tile in every pass). Tile ids are positions, or from an id
// array (falling as the columns rise) where the id0 is written `ids + N`.
const shapes: [number, number, number, number, number | `ids + ${number}`, number | null, number, SelectData[]][] = [
  [3, 1000, 1003, 1, 0, 1, 0, ['equal']],
  [3, 1000, 1003, 1, 0, 1, 100_000, []],
  [2, 1, 1, 1, 5, null, 0, []],
  [4, 3000, 3000, HEAP_MAX_K + 1, 0x7fffff00, HEAP_MAX_K + 1, 0, ['equal', 'zeros']],
  [4, 3000, 3000, HEAP_MAX_K + 1, 0x7fffff00, HEAP_MAX_K + 1, 12_000, ['zeros']],
  [4, 3000, 3000, HEAP_MAX_K + 1, 'ids + 5', HEAP_MAX_K + 1, 12_000, ['equal']],
  [4, 777, 800, HEAP_MAX_K + 1, 9, 100, 0, ['inf']],
  [4, 777, 800, HEAP_MAX_K + 1, 'ids + 0', 100, 0, []],
  [3, 100, 100, 300, 0, null, 0, []],
  [3, 100, 100, 300, 0, 150, 0, ['inf']],
  [2, 5000, 5003, 4096, 1 << 24, null, 0, []],
  [2, 5000, 5000, 4096, 17, 4096, 0, ['equal']],
  [2, 5000, 5000, 4096, 17, 4096, 20_000, []],
  [2, 2000, 2000, 4096, 17, 3000, 0, ['zeros']],
  [1, 9000, 9000, 8192, 3, 8000, 0, []],
  [1, 9000, 9000, 8192, 3, 8192, 60_000, []],
];

describe.skipIf(!gpu)('gpu select-radix vs cpu twin (rows sorted by (score, id))', () => {
  let seed = 1;
  for (const [rows, cols, ldc, k, id0Of, valid, seen, extra] of shapes) {
    const withIds = typeof id0Of === 'string';
    const id0 = withIds ? Number(id0Of.slice('ids + '.length)) : id0Of;
    for (const data of ['ints', 'floats', ...extra] as SelectData[]) {
      const caseSeed = seed++;
      it(`rows=${rows} cols=${cols} k=${k} ${valid === null ? 'first tile' : `running list of ${valid}${seen ? ` (best of ${seen})` : ''}`}${withIds ? ', ids from an array' : ''}, ${data} (seed ${caseSeed})`, async () => {
        const c = selectCase(rows, cols, ldc, k, id0, valid, data, caseSeed, seen, withIds);
        const h = new KernelHarness(gpu!);
        const len = rows * k;
        // Rows 0 .. of the running lists sit at row0 = 1 in buffers one row longer.
        const row0 = 1;
        const runS = new Float32Array(len + k).fill(-5);
        const runI = new Uint32Array(len + k).fill(POISON);
        if (c.runS && c.runI) {
          runS.set(c.runS, k);
          runI.set(c.runI, k);
        }
        const outS = h.output(len + k, POISON);
        const outI = h.output(len + k, POISON);
        encodeSelectRadix(h.kernels, {
          scores: h.upload(c.scores), ids: c.colIds ? h.upload(c.colIds) : null, runInS: h.upload(runS), runInI: h.upload(runI), runOutS: outS, runOutI: outI,
          rows, cols, ldc, k, id0, first: valid === null, row0,
        });
        await h.run();
        const allS = await h.readU32(outS, len + k);
        const allI = await h.readU32(outI, len + k);
        h.dispose();
        expect(allS.subarray(0, k).every((v) => v === POISON) && allI.subarray(0, k).every((v) => v === POISON), 'rows outside the dispatch untouched').toBe(true);
        const gotS = new Float32Array(allS.buffer, k * 4);
        const gotI = allI.subarray(k);
        const wantS = new Float32Array(len);
        const wantI = new Uint32Array(len);
        selectRadix(c.scores, ldc, rows, cols, id0, c.colIds, k, c.runS, c.runI, wantS, wantI);
        const want = sortedRows(wantS, wantI, rows, k);
        expectSameRows(sortedRows(gotS, gotI, rows, k), want, 'gpu vs twin');
        // The twin is checked against a full sort in test/cpu; here the GPU is too, cheaply.
        expectSameRows(want, oracle(c), 'twin vs full sort');
      });
    }
  }
});
