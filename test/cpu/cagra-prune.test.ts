import { describe, expect, it } from 'vitest';
import { cagraPrune } from '../../src/cpu/cagra-prune.js';
import { PAD_ID } from '../../src/kernel-facts.js';
import { clusteredKnn, geometricKnn, randomKnn } from '../helpers/cagra.js';

/**
 * cuVS's rank-based pruning written plainly: for each node A, each edge j of its row, each edge
 * i < j and each entry of D = row[i]'s row equal to row[j], one detour. An entry is an edge when it
 * is a node, not A, and not an earlier entry's id. Keeps the `degree` edges of fewest detours, ties
 * by rank, in that order.
 */
function bruteForce(knn: Uint32Array, n: number, kin: number, degree: number): { out: Uint32Array; detours: Uint32Array } {
  const out = new Uint32Array(n * degree).fill(PAD_ID);
  const detours = new Uint32Array(n * kin).fill(PAD_ID);
  for (let A = 0; A < n; A++) {
    const at = (j: number) => knn[A * kin + j];
    const edge: boolean[] = [];
    for (let j = 0; j < kin; j++) {
      let repeat = false;
      for (let i = 0; i < j; i++) if (at(i) === at(j)) repeat = true;
      edge.push(at(j) < n && at(j) !== A && !repeat);
    }
    for (let j = 0; j < kin; j++) {
      if (!edge[j]) continue;
      let count = 0;
      for (let i = 0; i < j; i++) {
        if (!edge[i]) continue;
        for (let l = 0; l < kin; l++) if (knn[at(i) * kin + l] === at(j)) count++;
      }
      detours[A * kin + j] = count;
    }
    const taken = new Array<boolean>(kin).fill(false);
    for (let p = 0; p < degree; p++) {
      let best = -1;
      for (let j = 0; j < kin; j++) {
        if (!edge[j] || taken[j]) continue;
        if (best < 0 || detours[A * kin + j] < detours[A * kin + best]) best = j;
      }
      if (best < 0) break;
      taken[best] = true;
      out[A * degree + p] = at(best);
    }
  }
  return { out, detours };
}

/** The twin over all n nodes in one call. */
function prune(knn: Uint32Array, n: number, kin: number, degree: number): { out: Uint32Array; detours: Uint32Array } {
  const out = new Uint32Array(n * degree).fill(7);
  const detours = new Uint32Array(n * kin).fill(7);
  cagraPrune(knn, 0, knn, 0, n, n, kin, degree, 0, n, true, true, detours, out, 0);
  return { out, detours };
}

/** Nodes whose kept edges include two with equal detour counts (the rank breaks the tie). */
function tiedNodes(out: Uint32Array, detours: Uint32Array, knn: Uint32Array, n: number, kin: number, degree: number): number {
  let tied = 0;
  for (let a = 0; a < n; a++) {
    const counts: number[] = [];
    for (let p = 0; p < degree; p++) {
      const id = out[a * degree + p];
      if (id === PAD_ID) break;
      for (let j = 0; j < kin; j++) if (knn[a * kin + j] === id) counts.push(detours[a * kin + j]);
    }
    if (new Set(counts).size < counts.length) tied++;
  }
  return tied;
}

describe('cpu cagra-prune', () => {
  it('counts detours by hand and keeps the fewest, ties by rank', () => {
    // Node 0's row [1, 2, 3]: 1 -> 2 is a detour of 0 -> 2 (1 at rank 0 < 1), 2 -> 1 is not one of
    // 0 -> 1 (2 ranks below 1); 3 is on neither row. Detours [0, 1, 0]: keep 1, then 3 (rank 2).
    const knn = Uint32Array.of(1, 2, 3, 2, 0, PAD_ID, 1, 0, PAD_ID, 0, 1, 2);
    const { out, detours } = prune(knn, 4, 3, 2);
    expect(Array.from(detours.subarray(0, 3))).toEqual([0, 1, 0]);
    expect(Array.from(out.subarray(0, 2))).toEqual([1, 3]);
    // Node 2's row [1, 0, pad]: 1 -> 0 makes a detour of 2 -> 0; the padding is no edge.
    expect(Array.from(detours.subarray(6, 9))).toEqual([0, 1, PAD_ID]);
    expect(Array.from(out.subarray(4, 6))).toEqual([1, 0]);
    expect(bruteForce(knn, 4, 3, 2)).toEqual({ out, detours });
  });

  it('counts a repeated id, the node itself and ids past n as no edge, and D -> B at any rank of D', () => {
    // Node 0: [1, 1, 0, 9, 2]: the second 1, the self edge 0 and 9 (>= n) are not edges. Node 1's
    // row holds 2 at its last rank, still a detour of 0 -> 2 (cuVS counts B anywhere in D's row).
    const kin = 5;
    const knn = Uint32Array.of(1, 1, 0, 9, 2, 0, 3, PAD_ID, PAD_ID, 2, 3, 0, PAD_ID, PAD_ID, PAD_ID, 2, PAD_ID, PAD_ID, PAD_ID, PAD_ID);
    const { out, detours } = prune(knn, 4, kin, 3);
    expect(Array.from(detours.subarray(0, 5))).toEqual([0, PAD_ID, PAD_ID, PAD_ID, 1]);
    expect(Array.from(out.subarray(0, 3))).toEqual([1, 2, PAD_ID]);
    expect(bruteForce(knn, 4, kin, 3)).toEqual({ out, detours });
  });

  // [n, kin, degree, graph]: padding where n - 1 < kin, degree = kin (nothing pruned), degree = 1.
  const cases: [number, number, number, 'geometric' | 'random' | 'clustered'][] = [
    [1, 8, 4, 'geometric'],
    [2, 8, 8, 'random'],
    [20, 32, 16, 'geometric'],
    [30, 32, 5, 'random'],
    [60, 8, 4, 'geometric'],
    [100, 16, 1, 'clustered'],
    [120, 16, 16, 'geometric'],
    [150, 24, 10, 'random'],
    [200, 32, 16, 'geometric'],
    [200, 32, 32, 'clustered'],
    [180, 12, 7, 'clustered'],
  ];
  let seed = 1;
  for (const [n, kin, degree, kind] of cases) {
    const caseSeed = seed++;
    it(`${kind} n=${n} kin=${kin} degree=${degree}: the brute force's detours and edges`, () => {
      const knn =
        kind === 'geometric' ? geometricKnn(n, kin, caseSeed) : kind === 'random' ? randomKnn(n, kin, caseSeed) : clusteredKnn(n, kin, caseSeed, kin + 4);
      const got = prune(knn, n, kin, degree);
      const want = bruteForce(knn, n, kin, degree);
      expect(Array.from(got.detours)).toEqual(Array.from(want.detours));
      expect(Array.from(got.out)).toEqual(Array.from(want.out));
      if (n > 50 && degree > 1) expect(tiedNodes(got.out, got.detours, knn, n, kin, degree)).toBeGreaterThan(0);
      if (degree === kin) {
        // Nothing pruned: each row keeps all its edges, reordered.
        for (let a = 0; a < n; a++) {
          const row = Array.from(knn.subarray(a * kin, (a + 1) * kin)).filter((v) => v !== PAD_ID).sort((x, y) => x - y);
          const kept = Array.from(got.out.subarray(a * degree, (a + 1) * degree)).filter((v) => v !== PAD_ID).sort((x, y) => x - y);
          expect(kept).toEqual(row);
        }
      }
    });
  }

  it('tiles of nodes and chunks of detour rows add up to one call', () => {
    const [n, kin, degree] = [90, 16, 8];
    const knn = geometricKnn(n, kin, 42);
    const want = prune(knn, n, kin, degree);
    const out = new Uint32Array(n * degree).fill(7);
    const chunk = 25; // rows of the graph a binding would hold
    for (let node0 = 0; node0 < n; node0 += 17) {
      const nodes = Math.min(17, n - node0);
      const detours = new Uint32Array(nodes * kin).fill(7);
      // The tile's own rows come from a copy starting 3 rows before it (a0 = 3).
      const from = Math.max(0, node0 - 3);
      const a = knn.slice(from * kin, (node0 + nodes) * kin);
      const chunks = Math.ceil(n / chunk);
      for (let c = 0; c < chunks; c++) {
        const d0 = c * chunk;
        const drows = Math.min(chunk, n - d0);
        cagraPrune(a, node0 - from, knn.slice(d0 * kin, (d0 + drows) * kin), d0, drows, n, kin, degree, node0, nodes, c === 0, c === chunks - 1, detours, out, node0);
      }
      expect(Array.from(detours)).toEqual(Array.from(want.detours.subarray(node0 * kin, (node0 + nodes) * kin)));
    }
    expect(Array.from(out)).toEqual(Array.from(want.out));
  });
});
