/**
 * CPU twin of shaders/cagra-reverse.wgsl: the reverse edges of a pruned CAGRA graph (n nodes,
 * `degree` ids a row, PAD_ID after the last edge), for sources node0 .. node0 + nodes - 1.
 *
 * Without `scatter`: counts[t] += 1 for every edge s -> t (t < n). With `scatter`: the edge s -> t
 * at rank k of s's row is stored as the key k * n + s in slot offsets[t] + (counts[t] - 1) of
 * `edges`, counts[t] counted down by one (the shader takes the same slots in whatever order its
 * atomics run; each range [offsets[t], offsets[t + 1]) holds the same keys either way).
 */
export function cagraReverse(
  graph: Uint32Array,
  n: number,
  degree: number,
  node0: number,
  nodes: number,
  scatter: boolean,
  counts: Uint32Array,
  offsets: Uint32Array,
  edges: Uint32Array,
): void {
  for (let s = node0; s < node0 + nodes; s++) {
    for (let k = 0; k < degree; k++) {
      const t = graph[s * degree + k];
      if (t >= n) continue;
      if (!scatter) {
        counts[t]++;
      } else {
        counts[t]--;
        edges[offsets[t] + counts[t]] = k * n + s;
      }
    }
  }
}
