import { describe, expect, it } from 'vitest';
import { orderKey, selectRadix } from '../../src/cpu/select-radix.js';
import { HEAP_MAX_K, PAD_ID } from '../../src/kernel-facts.js';
import { type SelectCase, type SelectData, expectSameRows, oracle, selectCase, sortedRows } from '../helpers/select.js';

const PAD: [number, number] = [Infinity, PAD_ID];

function run(c: SelectCase): { s: Float32Array; i: Uint32Array } {
  const s = new Float32Array(c.rows * c.k);
  const i = new Uint32Array(c.rows * c.k);
  selectRadix(c.scores, c.ldc, c.rows, c.cols, c.id0, c.colIds, c.k, c.runS, c.runI, s, i);
  return { s, i };
}

function pairs(s: Float32Array, i: Uint32Array): [number, number][] {
  return Array.from(i, (id, j) => [s[j], id]);
}

describe('cpu select-radix', () => {
  it('orders keys as the floats, with -0 equal to +0', () => {
    const floats = [-Infinity, -3e38, -1, -1e-40, -0, 0, 1e-40, 1e-30, 1, 2, 3e38, Infinity];
    const bits = new Uint32Array(new Float32Array(floats).buffer);
    const keys = Array.from(bits, orderKey);
    for (let j = 1; j < keys.length; j++) {
      if (floats[j] === floats[j - 1]) expect(keys[j], `${floats[j]}`).toBe(keys[j - 1]);
      else expect(keys[j], `${floats[j - 1]} < ${floats[j]}`).toBeGreaterThan(keys[j - 1]);
    }
  });

  it('selects by hand: ties on the smaller id, the running list, padding, input order out', () => {
    // Tile [2, 1, 2, 1] with ids 10..13; running list (1, 5), padding, (3, 2).
    const c: SelectCase = {
      rows: 1, cols: 4, ldc: 4, k: 3, id0: 10, colIds: null, scores: new Float32Array([2, 1, 2, 1]),
      runS: new Float32Array([1, Infinity, 3]), runI: new Uint32Array([5, PAD_ID, 2]),
    };
    const out = run(c);
    expect(pairs(out.s, out.i)).toEqual([[1, 11], [1, 13], [1, 5]]);
    // k = 5: (2, 10) and (2, 12) join; both ties at 2 are needed, none cut.
    const wide = run({ ...c, k: 5, runS: new Float32Array([1, Infinity, 3, Infinity, Infinity]), runI: new Uint32Array([5, PAD_ID, 2, PAD_ID, PAD_ID]) });
    expect(pairs(wide.s, wide.i)).toEqual([[2, 10], [1, 11], [2, 12], [1, 13], [1, 5]]);
    // More room than entries: all of them, then padding.
    const all = run({ ...c, k: 7, runS: null, runI: null });
    expect(pairs(all.s, all.i)).toEqual([[2, 10], [1, 11], [2, 12], [1, 13], PAD, PAD, PAD]);
    // Ids from an array (columns 1..4 of it: 9, 5, 7, 3): of the ties at 1, the smaller ids 3 and 4.
    const given = run({ ...c, k: 2, id0: 1, colIds: new Uint32Array([0, 9, 5, 7, 3]), runS: new Float32Array([1, 3]), runI: new Uint32Array([4, 2]) });
    expect(pairs(given.s, given.i)).toEqual([[1, 3], [1, 4]]);
  });

  it('cuts ties at the k-th score by id, keeping each score as given (-0 stays -0)', () => {
    // Scores 0, -0, 0, -0, -1 with ids 0..4: -1 first, then the zeros by id.
    const c: SelectCase = { rows: 1, cols: 5, ldc: 5, k: 3, id0: 0, colIds: null, scores: new Float32Array([0, -0, 0, -0, -1]), runS: null, runI: null };
    const out = run(c);
    expect(pairs(out.s, out.i)).toEqual([[0, 0], [-0, 1], [-1, 4]]);
    expect(Object.is(out.s[1], -0)).toBe(true);
    // Every score equal: the k smallest ids, across the tile and the running list.
    const eq = run({
      rows: 1, cols: 4, ldc: 4, k: 3, id0: 100, colIds: null, scores: new Float32Array(4).fill(7),
      runS: new Float32Array([7, 7, 7]), runI: new Uint32Array([0xfffffffe, 101 + 0x1000000, 99]),
    });
    expect(pairs(eq.s, eq.i)).toEqual([[7, 100], [7, 101], [7, 99]]);
  });

  it('equals a full sort over a table of shapes and data', () => {
    // [rows, cols, ldc, k, id0, valid entries per running list (null: first tile), entries they
    // are the best of, tile ids from an array]
    const shapes: [number, number, number, number, number, number | null, number, boolean][] = [
      [3, 1, 1, 1, 0, null, 0, false],
      [3, 300, 303, 1, 7, 1, 0, false],
      [3, 300, 303, 1, 7, 1, 10_000, false],
      [2, 1000, 1000, HEAP_MAX_K + 1, 0x7fffff00, HEAP_MAX_K + 1, 0, false],
      [2, 1000, 1000, HEAP_MAX_K + 1, 5, HEAP_MAX_K + 1, 8000, true],
      [2, 1000, 1000, HEAP_MAX_K + 1, 50, 100, 0, false],
      [2, 100, 100, 300, 0, null, 0, true],
      [2, 100, 100, 300, 0, 150, 0, false],
      [1, 5000, 5001, 4096, 1 << 24, 4096, 0, false],
      [2, 777, 777, 500, 3, 0, 0, false],
    ];
    const kinds: SelectData[] = ['ints', 'floats', 'equal', 'zeros', 'inf'];
    let seed = 1;
    for (const [rows, cols, ldc, k, id0, valid, seen, withIds] of shapes) {
      for (const data of kinds) {
        const c = selectCase(rows, cols, ldc, k, id0, valid, data, seed++, seen, withIds);
        const out = run(c);
        expectSameRows(sortedRows(out.s, out.i, rows, k), oracle(c), `cols ${cols} k ${k} valid ${valid} ${data} (seed ${seed - 1})`);
      }
    }
  });
});
