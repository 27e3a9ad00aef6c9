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
 * re-scores the candidates exactly (src/rescore.ts) and keeps k < kc. The final k are the exact ones
 * if every row the scan did not pick is farther than the k-th nearest row. With Δ a bound on
 * |float16 distance - exact distance| over all rows, the candidates' k-th smallest float16 distance
 * `inner` and the kc-th `outer`: the true k-th distance is at most inner + Δ (k candidates are that
 * near) and every row not picked is at least outer - Δ away (its float16 distance is at least
 * outer). So `outer - inner > 2Δ` vouches for a query (`uncertified` lists the others); the index
 * searches those again on the float32 rows. So results are the float32 scan's wherever that one is
 * right (it is not only where more than kc - k rows tie with the k-th within its rounding: see
 * src/rescore.ts), and where it is not, they are the exact ones.
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
import type { KernelMetric } from '../kernel-facts.js';
import type { SlotResult } from '../types.js';

/** Words of one half row: ceil(dpad / 8) vec4s of two halves a word (shaders/ivf-scan.wgsl, HALF). */
export function halfRowWords(dpad: number): number {
  return 4 * Math.ceil(dpad / 8);
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** The half nearest to float32 `x` (ties to even), clamped to +-65504, below 2^-14 in magnitude zero. */
export function toHalf(x: number): number {
  f32[0] = x;
  return halfOfBits(u32[0]);
}

/** toHalf of the float32 whose bits are `bits`. */
function halfOfBits(bits: number): number {
  const sign = (bits >>> 16) & 0x8000;
  let exp = ((bits >>> 23) & 0xff) - 112;
  if (exp < 1) return sign; // zero, or below the smallest normal half
  let q = (bits >>> 13) & 0x3ff;
  const rest = bits & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (q & 1) === 1)) q++;
  if (q === 0x400) {
    q = 0;
    exp++;
  }
  if (exp > 30) return sign | 0x7bff;
  return sign | (exp << 10) | q;
}

/** The float32 bits of a half toHalf makes (a normal half or a zero): exact. */
function bitsOfHalf(h: number): number {
  const sign = (h & 0x8000) << 16;
  return (h & 0x7fff) === 0 ? sign : (sign | ((((h >>> 10) & 0x1f) + 112) << 23) | ((h & 0x3ff) << 13)) >>> 0;
}

/**
 * `n` rows of `dpad` floats (as lists store them) as half rows (`halfRowWords(dpad)` words each),
 * with the largest row norm and the largest rounding error ||x - x'|| among them (float64).
 */
export function encodeHalfRows(rows: Float32Array, n: number, dpad: number): { words: Uint32Array; maxNorm: number; maxError: number } {
  const w = halfRowWords(dpad);
  const words = new Uint32Array(n * w);
  const bits = new Uint32Array(rows.buffer, rows.byteOffset, n * dpad);
  // One row's halves as float32s again (exact), to measure its rounding error.
  const back = new Float32Array(dpad);
  const backBits = new Uint32Array(back.buffer);
  let maxNorm = 0;
  let maxError = 0;
  for (let i = 0; i < n; i++) {
    const o = i * dpad;
    for (let j = 0; j < dpad; j++) {
      const h = halfOfBits(bits[o + j]);
      words[i * w + (j >>> 1)] |= h << (16 * (j & 1));
      backBits[j] = bitsOfHalf(h);
    }
    let norm2 = 0;
    let err2 = 0;
    for (let j = 0; j < dpad; j++) {
      const x = rows[o + j];
      const e = x - back[j];
      norm2 += x * x;
      err2 += e * e;
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
