import { describe, expect, it } from 'vitest';
import { cagraMerge } from '../../src/cpu/cagra-merge.js';
import { cagraOffsets } from '../../src/cpu/cagra-offsets.js';
import { cagraPrune } from '../../src/cpu/cagra-prune.js';
import { cagraReverse } from '../../src/cpu/cagra-reverse.js';
import { PAD_ID } from '../../src/kernel-facts.js';
import { clusteredKnn, geometricKnn, randomKnn, rowIds } from '../helpers/cagra.js';

/**
 * cuVS's reverse graph and merge (graph_core.cuh: kern_make_rev_graph_k, kern_merge_graph without
 * MST edges) written as cuVS runs them: reverse edges appended rank by rank (sources ascending
 * within a rank, our order for its atomics), at most `degree` kept per target; then each row's
 * reverse edges, last to first, moved (or entered, the row's last entry dropped) to place
 * degree / 2 by shifting the entries between one place right.
 */
function cuvsMerge(pruned: Uint32Array, n: number, degree: number): Uint32Array {
  const rev: number[][] = Array.from({ length: n }, () => []);
  const count = new Array<number>(n).fill(0);
  for (let k = 0; k < degree; k++) {
    for (let s = 0; s < n; s++) {
      const t = pruned[s * degree + k];
      if (t >= n) continue;
      if (count[t]++ < degree) rev[t].push(s);
    }
  }
  const out = pruned.slice();
  const h = Math.floor(degree / 2);
  for (let a = 0; a < n; a++) {
    const row = out.subarray(a * degree, (a + 1) * degree);
    for (let kr = Math.min(count[a], degree) - 1; kr >= 0; kr--) {
      const v = rev[a][kr];
      let pos = row.indexOf(v);
      if (pos < 0) pos = degree;
      if (pos < h) continue;
      const shift = pos >= degree ? degree - h - 1 : pos - h;
      for (let q = h + shift; q > h; q--) row[q] = row[q - 1];
      row[h] = v;
    }
  }
  return out;
}

/** The twins as a plan runs them: count, offsets, scatter (in tiles), merge. */
function twinsMerge(pruned: Uint32Array, n: number, degree: number, tile = n): { out: Uint32Array; offsets: Uint32Array; edges: Uint32Array } {
  const counts = new Uint32Array(n);
  const offsets = new Uint32Array(n + 1);
  const edges = new Uint32Array(Math.max(1, n * degree)).fill(PAD_ID);
  for (let s = 0; s < n; s += tile) cagraReverse(pruned, n, degree, s, Math.min(tile, n - s), false, counts, offsets, edges);
  cagraOffsets(counts, n, offsets);
  for (let s = 0; s < n; s += tile) cagraReverse(pruned, n, degree, s, Math.min(tile, n - s), true, counts, offsets, edges);
  expect(Array.from(counts).every((c) => c === 0)).toBe(true);
  const out = new Uint32Array(n * degree).fill(7);
  for (let a = 0; a < n; a += tile) cagraMerge(pruned, offsets, edges, n, degree, a, Math.min(tile, n - a), out, a);
  return { out, offsets, edges };
}

function pruneAll(knn: Uint32Array, n: number, kin: number, degree: number): Uint32Array {
  const out = new Uint32Array(n * degree);
  cagraPrune(knn, 0, knn, 0, n, n, kin, degree, 0, n, true, true, new Uint32Array(n * kin), out, 0);
  return out;
}

/** A row with its PAD_ID entries moved to its end. */
function padLast(row: ArrayLike<number>): number[] {
  const ids = Array.from(row).filter((v) => v !== PAD_ID);
  return [...ids, ...new Array<number>(row.length - ids.length).fill(PAD_ID)];
}

/** What every merged graph must be. */
function checkRows(merged: Uint32Array, pruned: Uint32Array, n: number, degree: number): void {
  const h = Math.floor(degree / 2);
  for (let a = 0; a < n; a++) {
    const row = Array.from(merged.subarray(a * degree, (a + 1) * degree));
    const ids = rowIds(merged, degree, a);
    expect(row, `row ${a}: padding last`).toEqual(padLast(row));
    expect(new Set(ids).size, `row ${a}: no repeats`).toBe(ids.length);
    expect(ids.every((v) => v < n && v !== a), `row ${a}: nodes, no self edge`).toBe(true);
    // The first h entries of the pruned row stay, in place.
    const kept = Array.from(pruned.subarray(a * degree, a * degree + h)).filter((v) => v !== PAD_ID);
    expect(ids.slice(0, kept.length), `row ${a}: forward edges kept`).toEqual(kept);
    // Full wherever the pruned row is.
    if (rowIds(pruned, degree, a).length === degree) expect(ids.length, `row ${a}: full`).toBe(degree);
  }
}

describe('cpu cagra-offsets', () => {
  it('exclusive prefix sums, the total last', () => {
    const offsets = new Uint32Array(6).fill(9);
    cagraOffsets(Uint32Array.of(3, 0, 2, 5, 1), 5, offsets);
    expect(Array.from(offsets)).toEqual([0, 3, 3, 5, 10, 11]);
  });
});

describe('cpu cagra-reverse', () => {
  it("stores each edge s -> t at rank k as k * n + s in t's range", () => {
    const [n, degree] = [70, 6];
    const pruned = pruneAll(randomKnn(n, 12, 3), n, 12, degree);
    const { offsets, edges } = twinsMerge(pruned, n, degree, 16);
    for (let t = 0; t < n; t++) {
      const want: number[] = [];
      for (let s = 0; s < n; s++) for (let k = 0; k < degree; k++) if (pruned[s * degree + k] === t) want.push(k * n + s);
      const got = Array.from(edges.subarray(offsets[t], offsets[t + 1])).sort((x, y) => x - y);
      expect(got, `target ${t}`).toEqual(want.sort((x, y) => x - y));
    }
  });
});

describe('cpu cagra-merge', () => {
  it('by hand: reverse edges by (rank, source) after the protected half', () => {
    // Node 0 (degree 2, h = 1) keeps 1; its reverse edges by rank, then source: 3, 4, 5 (rank 0),
    // 1, 2 (rank 1); the first two are 3, 4, so 3 takes place 1 (2 goes, as in cuVS).
    const pruned = Uint32Array.of(1, 2, 2, 0, 1, 0, 0, 4, 0, 5, 0, 3);
    const { out } = twinsMerge(pruned, 6, 2);
    expect(Array.from(out.subarray(0, 2))).toEqual([1, 3]);
    expect(Array.from(out)).toEqual(Array.from(cuvsMerge(pruned, 6, 2)));
  });

  // [n, kin, degree, graph]: degree 1 (nothing protected), odd, even; rows that cannot fill.
  const cases: [number, number, number, 'geometric' | 'random' | 'clustered'][] = [
    [1, 8, 4, 'geometric'],
    [3, 8, 4, 'geometric'],
    [40, 8, 1, 'geometric'],
    [60, 16, 8, 'geometric'],
    [90, 12, 5, 'clustered'],
    [120, 32, 16, 'geometric'],
    [150, 24, 12, 'random'],
    [200, 32, 16, 'clustered'],
    [200, 16, 16, 'geometric'],
  ];
  let seed = 1;
  for (const [n, kin, degree, kind] of cases) {
    const caseSeed = 100 + seed++;
    it(`${kind} n=${n} kin=${kin} degree=${degree}: cuVS's merge, rows complete and distinct`, () => {
      const knn =
        kind === 'geometric' ? geometricKnn(n, kin, caseSeed) : kind === 'random' ? randomKnn(n, kin, caseSeed) : clusteredKnn(n, kin, caseSeed, kin + 8);
      const pruned = pruneAll(knn, n, kin, degree);
      const { out } = twinsMerge(pruned, n, degree);
      checkRows(out, pruned, n, degree);
      // cuVS's row, padding last, wherever the protected half holds no padding.
      const want = cuvsMerge(pruned, n, degree);
      const h = Math.floor(degree / 2);
      let compared = 0;
      for (let a = 0; a < n; a++) {
        if (rowIds(pruned, degree, a).length < h) continue;
        compared++;
        expect(Array.from(out.subarray(a * degree, (a + 1) * degree)), `row ${a}`).toEqual(padLast(want.subarray(a * degree, (a + 1) * degree)));
      }
      if (kind !== 'random' && n - 1 >= h) expect(compared).toBe(n);
      // Tiles give the same graph.
      expect(Array.from(twinsMerge(pruned, n, degree, 7).out)).toEqual(Array.from(out));
    });
  }
});
