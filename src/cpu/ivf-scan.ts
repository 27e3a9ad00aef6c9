import type { KernelMetric } from '../kernel-facts.js';
import { PAD_ID } from '../kernel-facts.js';
import { maskAllows } from './mask-scores.js';
import { heapOffer, heapSortAndPad } from './topk.js';
import { halfToFloat } from '../common/fp16.js';
import { halfRowWords } from '../device.js';

/**
 * CPU twin of shaders/ivf-scan.wgsl: for each query row r, probed list p and segment g of that
 * list, the k best (score, id) of the list's vectors, best first.
 *
 * `lists[probe0 + r * nprobe + p]` is the list (PAD_ID: none); list L's vectors are
 * `xb[lists[2L] .. lists[2L + 1])` (rows of `d`), with norms `xnorm` and ids `ids` at the same
 * positions; segment g of a list of length len covers `[g * ceil(len / nseg), ...)`.
 * With a `mask`, position v is skipped (never offered) unless bit `maskBit0 + v` is set (maskAllows).
 * Scores: l2 `||x||^2 - 2 q.x`, ip `-q.x` (q = xq row q0 + r), dot products in float64; with `xh`
 * (the rows as halves: src/stores/half-rows.ts), x is row v's halves, as the shader's HALF scores.
 * Output list (r, p, g) at `((r * nprobe + p) * nseg + g) * k`, padded with (+Infinity, PAD_ID).
 */
export function ivfScan(
  metric: KernelMetric,
  xq: Float32Array,
  q0: number,
  rows: number,
  lists: Uint32Array,
  probe0: number,
  nprobe: number,
  nseg: number,
  xb: Float32Array,
  xh: Uint32Array | null,
  xnorm: Float32Array,
  ids: Uint32Array,
  mask: Uint32Array | null,
  maskBit0: number,
  d: number,
  k: number,
  outS: Float32Array,
  outI: Uint32Array,
): void {
  const hw = halfRowWords(d);
  for (let r = 0; r < rows; r++) {
    const qb = (q0 + r) * d;
    for (let p = 0; p < nprobe; p++) {
      const list = lists[probe0 + r * nprobe + p];
      for (let g = 0; g < nseg; g++) {
        const off = ((r * nprobe + p) * nseg + g) * k;
        let m = 0;
        if (list !== PAD_ID) {
          const start = lists[2 * list];
          const len = lists[2 * list + 1] - start;
          const segLen = Math.ceil(len / nseg);
          const end = start + Math.min(len, (g + 1) * segLen);
          for (let v = start + Math.min(len, g * segLen); v < end; v++) {
            if (mask && !maskAllows(mask, maskBit0 + v)) continue;
            let dot = 0;
            if (xh) for (let j = 0; j < d; j++) dot += xq[qb + j] * halfToFloat((xh[v * hw + (j >>> 1)] >>> (16 * (j & 1))) & 0xffff);
            else for (let j = 0; j < d; j++) dot += xq[qb + j] * xb[v * d + j];
            const s = Math.fround(metric === 'l2' ? xnorm[v] - 2 * dot : -dot);
            m = heapOffer(outS, outI, off, m, k, s, ids[v]);
          }
        }
        heapSortAndPad(outS, outI, off, m, k);
      }
    }
  }
}
