/**
 * CPU twin of shaders/cagra-offsets.wgsl: exclusive prefix sums of `n` counts,
 * offsets[i] = counts[0] + .. + counts[i - 1] for i <= n (offsets[n]: the total), in u32.
 */
export function cagraOffsets(counts: Uint32Array, n: number, offsets: Uint32Array): void {
  let sum = 0;
  for (let i = 0; i < n; i++) {
    offsets[i] = sum;
    sum = (sum + counts[i]) >>> 0;
  }
  offsets[n] = sum;
}
