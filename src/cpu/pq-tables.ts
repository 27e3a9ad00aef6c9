import type { KernelMetric } from '../kernel-facts.js';

/**
 * CPU twin of shaders/pq-tables.wgsl: the product quantiser's lookup tables of a block of queries.
 * For r < rows, m < M, j < ksub:
 *   luts[(r * M + m) * ksub + j] = l2: sum_{t < dsub} (x_t - c_t)^2,  ip: -sum_{t < dsub} x_t c_t
 * with x_t = xq[(q0 + r) * dpad + m * dsub + t] and c_t = codebook[(m * ksub + j) * dsub + t].
 * Each step in float32 (Math.fround), in the kernel's order (t ascending), so the tables equal the
 * kernel's wherever the device does not fuse a multiply and an add.
 */
export function pqTables(
  metric: KernelMetric,
  xq: Float32Array,
  codebook: Float32Array,
  luts: Float32Array,
  q0: number,
  rows: number,
  M: number,
  ksub: number,
  dsub: number,
  dpad: number,
): void {
  const f = Math.fround;
  const l2 = metric === 'l2';
  for (let r = 0; r < rows; r++) {
    for (let m = 0; m < M; m++) {
      const x0 = (q0 + r) * dpad + m * dsub;
      const out = (r * M + m) * ksub;
      for (let j = 0; j < ksub; j++) {
        const c0 = (m * ksub + j) * dsub;
        let s = 0;
        if (l2) {
          for (let t = 0; t < dsub; t++) {
            const diff = f(xq[x0 + t] - codebook[c0 + t]);
            s = f(s + f(diff * diff));
          }
        } else {
          for (let t = 0; t < dsub; t++) s = f(s + f(xq[x0 + t] * codebook[c0 + t]));
          s = -s;
        }
        luts[out + j] = s;
      }
    }
  }
}
