/**
 * Cases for the selection of a score tile's row with a running list (select-radix): tile scores,
 * running lists (valid entries and padding in any order, as select-radix writes them), the
 * full-sort oracle, and rows sorted by (score, id) for comparing lists whose order is unspecified.
 */
import { PAD_ID } from '../../src/kernel-facts.js';
import { rng } from '../../src/common/random.js';

/**
 * Scores: `ints` small integers (many ties), `floats` distinct random floats, `equal` one value
 * everywhere, `zeros` -0 and +0 mixed with small integers, `inf` small integers and +Infinity.
 */
export type SelectData = 'ints' | 'floats' | 'equal' | 'zeros' | 'inf';

export interface SelectCase {
  rows: number;
  cols: number;
  ldc: number;
  k: number;
  id0: number;
  /** Column c's id is `colIds[id0 + c]`, or `id0 + c` where null. */
  colIds: Uint32Array | null;
  /** `rows * ldc` */
  scores: Float32Array;
  /** `rows * k`, or null (first tile). */
  runS: Float32Array | null;
  runI: Uint32Array | null;
}

function score(data: SelectData, r: () => number): number {
  switch (data) {
    case 'ints':
      return Math.floor(r() * 16) - 8;
    case 'floats':
      return r() * 2 - 1;
    case 'equal':
      return 3;
    case 'zeros':
      return r() < 0.5 ? (r() < 0.5 ? -0 : 0) : Math.floor(r() * 4) - 2;
    case 'inf':
      return r() < 0.3 ? Infinity : Math.floor(r() * 4);
  }
}

/** The (score, id) order, -0 equal to +0. */
const byScoreThenId = (a: [number, number], b: [number, number]): number => a[0] - b[0] || a[1] - b[1];

/**
 * A tile of `rows x cols` (row stride `ldc`, ids from `id0`) and, unless `runValid` is null, a
 * running list per row with `runValid` valid entries and padding, shuffled: the best `runValid` of
 * `seen` entries (as after earlier tiles of `seen` columns in all; at least runValid), with ids
 * spread over the whole u32 range, none in the tile's. With `withIds`, the tile's ids come from
 * an id array and fall as the columns rise.
 */
export function selectCase(
  rows: number,
  cols: number,
  ldc: number,
  k: number,
  id0: number,
  runValid: number | null,
  data: SelectData,
  seed: number,
  seen = 0,
  withIds = false,
): SelectCase {
  const r = rng(seed);
  const scores = new Float32Array(rows * ldc).fill(-1000); // columns past cols must be ignored
  for (let row = 0; row < rows; row++) for (let c = 0; c < cols; c++) scores[row * ldc + c] = score(data, r);
  const colIds = withIds ? Uint32Array.from({ length: id0 + cols }, (_, j) => 0xc0000000 - 7 * j) : null;
  const tileIds = new Set(Array.from({ length: cols }, (_, c) => (colIds ? colIds[id0 + c] : id0 + c)));
  if (runValid === null) return { rows, cols, ldc, k, id0, colIds, scores, runS: null, runI: null };
  const runS = new Float32Array(rows * k);
  const runI = new Uint32Array(rows * k);
  let next = 1;
  for (let row = 0; row < rows; row++) {
    const pool: [number, number][] = [];
    while (pool.length < Math.max(runValid, seen)) {
      // Odd multipliers permute the u32s: distinct ids, every digit exercised.
      const id = Math.imul(next++, 0x9e3779b1) >>> 0;
      if (id !== PAD_ID && !tileIds.has(id)) pool.push([Math.fround(score(data, r)), id]);
    }
    const entries = pool.sort(byScoreThenId).slice(0, runValid);
    while (entries.length < k) entries.push([Infinity, PAD_ID]);
    for (let j = entries.length - 1; j > 0; j--) {
      const t = Math.floor(r() * (j + 1));
      [entries[j], entries[t]] = [entries[t], entries[j]];
    }
    entries.forEach(([s, id], j) => {
      runS[row * k + j] = s;
      runI[row * k + j] = id;
    });
  }
  return { rows, cols, ldc, k, id0, colIds, scores, runS, runI };
}

/** Each row's k best (score, id) of the tile row and the running list, best first, padded: the full-sort oracle. */
export function oracle(c: SelectCase): [number, number][][] {
  const out: [number, number][][] = [];
  for (let row = 0; row < c.rows; row++) {
    const all: [number, number][] = [];
    for (let col = 0; col < c.cols; col++) all.push([c.scores[row * c.ldc + col], c.colIds ? c.colIds[c.id0 + col] : c.id0 + col]);
    for (let j = 0; c.runS && c.runI && j < c.k; j++) {
      if (c.runI[row * c.k + j] !== PAD_ID) all.push([c.runS[row * c.k + j], c.runI[row * c.k + j]]);
    }
    const best = all.sort(byScoreThenId).slice(0, c.k);
    while (best.length < c.k) best.push([Infinity, PAD_ID]);
    out.push(best);
  }
  return out;
}

/**
 * The rows of running lists as select-radix writes them (valid entries in any order, then
 * padding), each sorted by (score, id); throws if a valid entry follows padding.
 */
export function sortedRows(s: Float32Array, ids: Uint32Array, rows: number, k: number): [number, number][][] {
  const out: [number, number][][] = [];
  for (let row = 0; row < rows; row++) {
    const list: [number, number][] = [];
    for (let j = 0; j < k; j++) list.push([s[row * k + j], ids[row * k + j]]);
    const firstPad = list.findIndex((e) => e[1] === PAD_ID);
    if (firstPad >= 0 && list.slice(firstPad).some((e) => e[1] !== PAD_ID || e[0] !== Infinity)) {
      throw new Error(`row ${row}: a valid entry or a wrong padding follows the first padding entry (at ${firstPad})`);
    }
    out.push(list.sort(byScoreThenId));
  }
  return out;
}

/** Throws at the first entry whose score bits or id differ (Object.is tells -0 from +0). */
export function expectSameRows(got: [number, number][][], want: [number, number][][], what: string): void {
  for (let row = 0; row < want.length; row++) {
    for (let j = 0; j < want[row].length; j++) {
      const [gs, gi] = got[row][j];
      const [ws, wi] = want[row][j];
      if (gi !== wi || !Object.is(gs, ws)) throw new Error(`${what}: row ${row} position ${j}: got (${gs}, ${gi}), want (${ws}, ${wi})`);
    }
  }
}
