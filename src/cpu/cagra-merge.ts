import { PAD_ID } from '../kernel-facts.js';

/**
 * CPU twin of shaders/cagra-merge.wgsl: CAGRA's final rows (cuVS kern_merge_graph, without its MST
 * edges), for nodes node0 .. node0 + nodes - 1 of a pruned graph of n nodes, `degree` ids a row.
 *
 * Node A's reverse edges: the keys k * n + s of [offsets[A], offsets[A + 1]) of `edges` (edge
 * s -> A at rank k of s's row: cagra-reverse), the `degree` smallest in key order (by rank, then
 * by source: cuVS appends them rank by rank, in the order its atomics run within a rank), as the
 * sources s. Row A's first h = floor(degree / 2) edges are kept (P); then come the reverse edges
 * not in P (R), then the rest of A's row, without those in R (F); row out0 + r of `out` = the first
 * `degree` ids of P, R, F that are nodes (< n), PAD_ID after them. Where A's row has no padding
 * this is cuVS's row: each reverse edge, last to first, moves (or enters) to place h.
 */
export function cagraMerge(
  graph: Uint32Array,
  offsets: Uint32Array,
  edges: Uint32Array,
  n: number,
  degree: number,
  node0: number,
  nodes: number,
  out: Uint32Array,
  out0: number,
): void {
  const h = Math.floor(degree / 2);
  for (let r = 0; r < nodes; r++) {
    const node = node0 + r;
    const row = Array.from(graph.subarray(node * degree, (node + 1) * degree));
    const keys = Array.from(edges.subarray(offsets[node], offsets[node + 1])).sort((x, y) => x - y);
    const rev = keys.slice(0, degree).map((key) => key % n);
    const protectedSet = new Set(row.slice(0, h));
    const r1 = rev.filter((s) => !protectedSet.has(s));
    const revSet = new Set(rev);
    const f = row.slice(h).filter((t) => !revSet.has(t));
    const merged = [...row.slice(0, h), ...r1, ...f].filter((t) => t < n);
    const o = (out0 + r) * degree;
    for (let q = 0; q < degree; q++) out[o + q] = q < merged.length ? merged[q] : PAD_ID;
  }
}
