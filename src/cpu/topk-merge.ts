import { PAD_ID } from '../kernel-facts.js';
import { better } from './topk.js';

/**
 * CPU twin of shaders/topk-merge.wgsl: merges, for each row, `nseg` sorted partial lists (the output
 * of topk) and the row's running list into a new running list of the k best, best first, in the
 * (score, id) order of topk.ts.
 *
 * `partS/partI`: list (r, g), g < nseg, at `(r * stride + seg0 + g) * k` (stride defaults to nseg,
 * seg0 to 0: merging many lists in rounds of at most 32, as the GPU does).
 * `runInS/runInI`: `rows * k` (row r at `r * k`), or null for "no running list yet".
 * `runOutS/runOutI`: `rows * k`; must not alias the inputs.
 * Every list holds exactly k entries (padding included), so k picks never exhaust a list.
 */
export function topkMerge(
  partS: Float32Array,
  partI: Uint32Array,
  rows: number,
  nseg: number,
  k: number,
  runInS: Float32Array | null,
  runInI: Uint32Array | null,
  runOutS: Float32Array,
  runOutI: Uint32Array,
  stride = nseg,
  seg0 = 0,
): void {
  const heads = new Int32Array(nseg + 1);
  for (let r = 0; r < rows; r++) {
    heads.fill(0);
    const base = (r * stride + seg0) * k;
    for (let o = 0; o < k; o++) {
      // List nseg is the running list; the partial lists come first.
      let best = -1;
      let bs = Infinity;
      let bi = PAD_ID;
      if (runInS !== null && runInI !== null) {
        const h = r * k + heads[nseg];
        best = nseg;
        bs = runInS[h];
        bi = runInI[h];
      }
      for (let g = 0; g < nseg; g++) {
        const h = base + g * k + heads[g];
        if (best < 0 || better(partS[h], partI[h], bs, bi)) {
          best = g;
          bs = partS[h];
          bi = partI[h];
        }
      }
      runOutS[r * k + o] = bs;
      runOutI[r * k + o] = bi;
      heads[best]++;
    }
  }
}
