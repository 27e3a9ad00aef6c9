/**
 * Float16 copies of IVF-Flat list rows (tuning.ivfHalfScan), which the scan strategy reads instead
 * of the float32 rows, and the bound that keeps its results exact.
 *
 * Why: on a software adapter the scan is bound by its loads, one per float per lane whatever their
 * width (see shaders/gemm-scores.wgsl), and a word of two halves halves them. On lavapipe on this
 * 2-core machine, clustered 200,000 x 128, IVF512, batches of 100, nprobe 2 - 8, searches ran
 * 1.1 - 1.6x as fast (README, "IVF scans on float16 rows"); halving the loads and nothing else had
 * promised 1.5 - 1.6x, the scan's heaps take much of the rest.
 *
 * Exactness. The scan picks each query's kc candidates by float16 distances; the index then
 * re-scores the candidates exactly (src/indexes/rescore.ts) and keeps k < kc. The final k are the exact ones
 * if every row the scan did not pick is farther than the k-th nearest row. With Δ a bound on
 * |float16 distance - exact distance| over all rows, the candidates' k-th smallest float16 distance
 * `inner` and the kc-th `outer`: the true k-th distance is at most inner + Δ (k candidates are that
 * near) and every row not picked is at least outer - Δ away (its float16 distance is at least
 * outer). So `outer - inner > 2Δ` vouches for a query (`uncertified` lists the others); the index
 * searches those again on the float32 rows. So results are the float32 scan's wherever that one is
 * right (it is not only where more than kc - k rows tie with the k-th within its rounding: see
 * src/indexes/rescore.ts), and where it is not, they are the exact ones.
 *
 * The bound (`halfScanError`): for a row x, its halves x' and a query q (l2; ip has fewer terms),
 * the scan computes fl(||x||^2_32 - 2 fl(q.x')) + ||q||^2_32, each dot a sum of dpad float32
 * products in some order (lanes, fused or not). With u = 2^-24 and g = (dpad + 4) u:
 *   |q.x - fl(q.x')| <= ||q|| ||x - x'|| + g ||q|| ||x'||        (Cauchy-Schwarz; a float dot)
 *   the norms and the two additions add at most (g + 3u)(||q|| + ||x|| + ||x - x'||)^2,
 * plus (dpad + 4) 2^-124 for products flushed to zero below float32's normal range. With
 * E = max ||x - x'|| and X = max ||x|| over the stored rows (float64, kept as rows are added),
 * Δ = 2 ||q|| (E + g (X + E)) + (g + 3u)(||q|| + X + E)^2 + (dpad + 4) 2^-124, doubled for a margin
 * on the margin (as k-means' bounds: src/plans/kmeans-step.ts).
 *
 * Halves round to nearest even; magnitudes past the largest half (65504) are clamped to it, and
 * those below the smallest normal half (2^-14) become zero (lavapipe's unpack2x16float may flush
 * subnormal halves: so both decodes agree). Both only make ||x - x'|| larger: exactness holds, and
 * data that float16 represents badly just has its queries searched again.
 */
import { halfToFloat, intBits } from '../common/fp16.js';
import { halfRowWords } from '../device.js';
import type { KernelMetric } from '../kernel-facts.js';
import type { SlotResult } from '../types.js';

/** The half nearest to float32 `x` (ties to even), clamped to +-65504, below 2^-14 in magnitude zero. */
export function toHalf(x: number): number {
  return halfOfBits(intBits(x));
}

/**
 * toHalf of the float32 whose bits are `bits`. Without branches on the data (random low bits made
 * a rounding branch mispredict half the time): from 2^-14 up, exponent and mantissa shift down as
 * one field, rebiased (112 = 127 - 15), with 0xfff plus the kept mantissa's last bit added first
 * (ties to even; a carry into the exponent is right), then clamped to 0x7bff (65504; infinities
 * and NaNs too).
 */
function halfOfBits(bits: number): number {
  const t = bits & 0x7fffffff;
  const h = t < 0x38800000 ? 0 : Math.min(0x7bff, (t - (112 << 23) + 0xfff + ((t >>> 13) & 1)) >>> 13);
  return h | ((bits >>> 16) & 0x8000);
}

/** The value of every half as a float32 (exact), for the rounding errors encodeHalfRows measures. */
let halfValues: Float32Array | null = null;

function halfValueTable(): Float32Array {
  halfValues ??= Float32Array.from({ length: 1 << 16 }, (_, h) => halfToFloat(h));
  return halfValues;
}

/**
 * `n` rows of `dpad` floats (as lists store them; dpad even) as half rows (`halfRowWords(dpad)`
 * words each), with the largest row norm and the largest rounding error ||x - x'|| among them
 * (float64). Two dimensions a step, one word written (about twice as fast as a word built half by
 * half: 1.2 s against 2.3 s for 1,000,000 x 128 on this machine).
 */
export function encodeHalfRows(rows: Float32Array, n: number, dpad: number): { words: Uint32Array; maxNorm: number; maxError: number } {
  const w = halfRowWords(dpad);
  const words = new Uint32Array(n * w);
  const bits = new Uint32Array(rows.buffer, rows.byteOffset, n * dpad);
  const value = halfValueTable();
  let maxNorm = 0;
  let maxError = 0;
  for (let i = 0; i < n; i++) {
    const o = i * dpad;
    let norm2 = 0;
    let err2 = 0;
    for (let j = 0; j < dpad; j += 2) {
      const h0 = halfOfBits(bits[o + j]);
      const h1 = halfOfBits(bits[o + j + 1]);
      const x0 = rows[o + j];
      const x1 = rows[o + j + 1];
      const e0 = x0 - value[h0];
      const e1 = x1 - value[h1];
      norm2 += x0 * x0;
      norm2 += x1 * x1;
      err2 += e0 * e0;
      err2 += e1 * e1;
      words[i * w + (j >>> 1)] = h0 | (h1 << 16);
    }
    maxNorm = Math.max(maxNorm, Math.sqrt(norm2));
    maxError = Math.max(maxError, Math.sqrt(err2));
  }
  return { words, maxNorm, maxError };
}

/**
 * The bound Δ of the file comment, doubled: how far a scan's float16 distance (l2: squared; ip:
 * inner product) may be from the exact one, for a query of norm `qnorm`, over rows of norm at most
 * `maxNorm` whose halves are off by at most `maxError`.
 */
export function halfScanError(qnorm: number, dpad: number, maxNorm: number, maxError: number): number {
  const u = 2 ** -24;
  const g = (dpad + 4) * u;
  const [q, x, e] = [qnorm, maxNorm, maxError];
  return 2 * (2 * q * (e + g * (x + e)) + (g + 3 * u) * (q + x + e) ** 2 + (dpad + 4) * 2 ** -124);
}

/**
 * The queries (rows of `cand`, `nq * kc` candidates of a scan on half rows, best first) whose
 * candidates the bound does not vouch for holding their `need` (< kc) nearest rows (see the file
 * comment, where inner is the need-th candidate); `xq` holds the queries as the kernels saw them
 * (`nq * d`).
 */
export function uncertified(
  cand: SlotResult,
  xq: Float32Array,
  nq: number,
  d: number,
  dpad: number,
  kc: number,
  need: number,
  metric: KernelMetric,
  maxNorm: number,
  maxError: number,
): number[] {
  const out: number[] = [];
  for (let r = 0; r < nq; r++) {
    const last = r * kc + kc - 1;
    // Fewer candidates than kc: every row the query may have is one.
    if (cand.labels[last] < 0) continue;
    let q2 = 0;
    for (let j = r * d; j < (r + 1) * d; j++) q2 += xq[j] * xq[j];
    const inner = cand.distances[r * kc + need - 1];
    const outer = cand.distances[last];
    // l2 distances ascend, inner products descend.
    const gap = metric === 'l2' ? outer - inner : inner - outer;
    if (!(gap > 2 * halfScanError(Math.sqrt(q2), dpad, maxNorm, maxError))) out.push(r);
  }
  return out;
}

/**
 * `n` rows of `dpad` floats as half rows (encodeHalfRows) with the squared norms of the rows as
 * they decode (float64 sums, rounded once to float32): what graph-search reads with `half`
 * (src/device.ts GraphSearchArgs), whose l2 scores are then ||x'||^2 - 2 q.x' for the halves x'.
 */
export function halfRowsWithNorms(rows: Float32Array, n: number, dpad: number): { words: Uint32Array; norms: Float32Array } {
  const { words } = encodeHalfRows(rows, n, dpad);
  const w = halfRowWords(dpad);
  const value = halfValueTable();
  const norms = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let j = i * w; j < (i + 1) * w; j++) {
      const lo = value[words[j] & 0xffff];
      const hi = value[words[j] >>> 16];
      s += lo * lo;
      s += hi * hi;
    }
    norms[i] = s;
  }
  return { words, norms };
}
