import { PAD_ID } from '../kernel-facts.js';

/**
 * CPU twin of shaders/cagra-prune.wgsl: CAGRA's rank-based pruning (cuVS kern_fused_prune) of
 * nodes node0 .. node0 + nodes - 1 of an intermediate kNN graph of n nodes, `kin` ids a row, best
 * first, PAD_ID after the last neighbour.
 *
 * Node A's row is `a[(a0 + r) * kin ..]` (A = node0 + r). Its entry j is an edge when its id is a
 * node (< n), not A, and not already at an earlier rank of the row. The detours of edge j (A -> B):
 * the edges D at ranks i < j whose own rows hold B at any rank (D -> B at any rank; cuVS's kernel
 * has its `kDB < kAB` test commented out), each occurrence counted. Row D is `d[(D - d0) * kin ..]`
 * when d0 <= D < d0 + drows; a D outside is counted by another call (over another chunk of rows).
 * Counts accumulate in `detours[r * kin + j]`: zeroed first when `first`, added to by every call.
 *
 * With `last`, node A keeps its `degree` edges with the fewest detours, ties by the smaller rank,
 * written in that order (fewest detours first) to `out[(out0 + r) * degree ..]`, PAD_ID after
 * the last edge; and detours of entries that are not edges become PAD_ID.
 *
 * Computed in O(kin^2) a node: for each edge D (rank i) and each id E of D's row, E's rank j in A's
 * row (a Map, as the shader's hash in workgroup memory) gains a detour when j > i.
 */
export function cagraPrune(
  a: Uint32Array,
  a0: number,
  d: Uint32Array,
  d0: number,
  drows: number,
  n: number,
  kin: number,
  degree: number,
  node0: number,
  nodes: number,
  first: boolean,
  last: boolean,
  detours: Uint32Array,
  out: Uint32Array,
  out0: number,
): void {
  for (let r = 0; r < nodes; r++) {
    const node = node0 + r;
    const row = a.subarray((a0 + r) * kin, (a0 + r + 1) * kin);
    const det = detours.subarray(r * kin, (r + 1) * kin);
    if (first) det.fill(0);
    // Each edge's rank, by id (the first rank of an id that repeats).
    const rankOf = new Map<number, number>();
    for (let j = 0; j < kin; j++) {
      const id = row[j];
      if (id < n && id !== node && !rankOf.has(id)) rankOf.set(id, j);
    }
    const isEdge = (j: number) => rankOf.get(row[j]) === j;
    for (let i = 0; i < kin - 1; i++) {
      const D = row[i];
      if (!isEdge(i) || D < d0 || D >= d0 + drows) continue;
      for (let l = 0; l < kin; l++) {
        const E = d[(D - d0) * kin + l];
        if (E >= n) continue;
        const j = rankOf.get(E);
        if (j !== undefined && j > i) det[j]++;
      }
    }
    if (!last) continue;
    const kept: number[] = [];
    for (let j = 0; j < kin; j++) {
      if (isEdge(j)) kept.push(j);
      else det[j] = PAD_ID;
    }
    kept.sort((x, y) => det[x] - det[y] || x - y);
    const o = (out0 + r) * degree;
    for (let p = 0; p < degree; p++) out[o + p] = p < kept.length ? row[kept[p]] : PAD_ID;
  }
}
