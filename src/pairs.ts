/** Pair lists [i0, j0, i1, j1, ...] as the self-join produces them. */

/** Sorts pairs by (i, j) (returns a new array). */
export function sortPairs(pairs: Uint32Array): Uint32Array {
  const n = pairs.length / 2;
  const order = Array.from({ length: n }, (_, p) => p).sort((a, b) => pairs[2 * a] - pairs[2 * b] || pairs[2 * a + 1] - pairs[2 * b + 1]);
  const out = new Uint32Array(pairs.length);
  order.forEach((p, k) => {
    out[2 * k] = pairs[2 * p];
    out[2 * k + 1] = pairs[2 * p + 1];
  });
  return out;
}
