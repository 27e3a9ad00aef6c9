/**
 * CPU twin of shaders/norms.wgsl: squared L2 norm of each row.
 * `x` is `n * d` row-major; writes `out[i] = sum_j x[i*d + j]^2` (accumulated in float64, rounded
 * once to float32; the GPU accumulates in four float32 lanes, so float data agrees within rounding
 * and small-integer data exactly).
 */
export function norms(x: Float32Array, n: number, d: number, out: Float32Array = new Float32Array(n)): Float32Array {
  for (let i = 0, off = 0; i < n; i++, off += d) {
    let s = 0;
    for (let j = 0; j < d; j++) {
      const v = x[off + j];
      s += v * v;
    }
    out[i] = s;
  }
  return out;
}
