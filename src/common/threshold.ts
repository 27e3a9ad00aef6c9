/**
 * The exact cut of dedup and range search: whether a pair of float32 rows is within a threshold
 * (l2: squared distance <= t; ip: inner product >= t; cosine: cosine >= t), decided exactly.
 *
 * - A threshold means the decimal it prints as (`String(t)`): 0.9 is 9/10, not the binary double
 *   nearest to it (which is 0.9 + 2.2e-17). So a pair whose cosine is exactly 0.9 (a.b = 72,
 *   |a|^2 = |b|^2 = 80) is within a threshold of 0.9, and rows exactly parallel are within 1. An
 *   integer is itself, exactly (2^80, which prints as 1.2089258196146292e+24, is 2^80).
 * - The test is first made in float64 with a bound on its rounding: every pair clearly on one side
 *   is decided there (almost all of them). A pair within the bound of the threshold is decided in
 *   integers (BigInt): every float32 value is an integer multiple of 2^-149, so products and
 *   squared differences are exact integers in units of 2^-298, and a cosine is compared as
 *   (a.b)^2 against t^2 |a|^2 |b|^2, with its sign, without a square root or a division.
 * - The score it reports with a pair that passes is the float64 one, moved onto the threshold if
 *   rounding put it a hair beyond (a pair at exactly 0.9 reports 0.9): a reported score never
 *   contradicts the threshold.
 *
 * One band, documented: a cosine index stores its vectors normalised to float32, so what it holds
 * is each direction rounded (2^-24 per value), and the cosine of two stored rows differs from the
 * cosine of the vectors given by up to about 2^-23. Range search on such an index therefore keeps
 * every stored row whose cosine is at least the radius minus COSINE_RANGE_BAND: a pair at the radius
 * is never lost, and a result may be up to the band below it. dedup keeps the rows as given and
 * needs no band.
 */

/** How far below the radius a range search of a cosine index keeps results (see above). */
export const COSINE_RANGE_BAND = 2 ** -22;

/** Relative margin on ||a||^2 + ||b||^2: twice the float32 error bound of the expansion, (2d + 4) * 2^-24. */
export function dedupMargin(d: number): number {
  return (4 * d + 16) * 2 ** -24;
}

export type ThresholdMetric = 'l2' | 'ip' | 'cosine';

/** Unit roundoff of float64. */
const U = 2 ** -53;
/** Float32 values times this are integers. */
const SCALE = 2 ** 149;
/** 2^298: units of products of two scaled values. */
const SCALE2 = 1n << 298n;

/** `t` as the fraction num / den (den > 0) of the decimal it prints as; an integer exactly. */
export function decimalFraction(t: number): { num: bigint; den: bigint } {
  if (Number.isInteger(t)) return { num: BigInt(t), den: 1n };
  const fraction = decimalText(String(t));
  if (!fraction) throw new RangeError(`not a finite number: ${t}`);
  return fraction;
}

/** A decimal written as text (`0.9`, `-.5`, `1e-7`, `12E+3`) as the fraction num / den, exactly; null if it is not one. */
export function decimalText(text: string): { num: bigint; den: bigint } | null {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text.trim());
  if (!m || `${m[2]}${m[3] ?? ''}` === '') return null;
  const frac = m[3] ?? '';
  const exp = Number(m[4] ?? 0) - frac.length;
  const digits = BigInt(`${m[1] === '-' ? '-' : ''}${m[2]}${frac}`);
  return exp >= 0 ? { num: digits * 10n ** BigInt(exp), den: 1n } : { num: digits, den: 10n ** BigInt(-exp) };
}

/**
 * The threshold the exact tests take for a threshold written `text` (the number it reads as), when
 * that is not the decimal written (more digits than a double holds: 0.90000000000000002 is taken
 * as 0.9); else null. For a command to say so.
 */
export function thresholdTakenAs(text: string): string | null {
  const written = decimalText(text);
  const t = Number(text);
  if (!written || !Number.isFinite(t)) return null;
  const taken = decimalFraction(t);
  return written.num * taken.den === taken.num * written.den ? null : Number.isInteger(t) ? BigInt(t).toString() : String(t);
}

const scaled = (v: number): bigint => BigInt(v * SCALE);

/** The float64 sum of squares of row `a` (at `ao`, `d` floats), in column order. */
export function squaredNorm(a: Float32Array, ao: number, d: number): number {
  let s = 0;
  for (let j = 0; j < d; j++) s += a[ao + j] * a[ao + j];
  return s;
}

/**
 * The test of one metric and threshold, for rows of `d` floats: `score(a, ao, b, bo)` returns the
 * pair's score (l2 squared distance, ip inner product, cosine cosine) when the pair is within the
 * threshold, else NaN. `band` (cosine only) lowers the threshold by that much (COSINE_RANGE_BAND).
 */
export class ThresholdTest {
  private readonly num: bigint;
  private readonly den: bigint;
  /** The threshold the float64 test compares with (lowered by the band). */
  private readonly t: number;

  constructor(
    readonly metric: ThresholdMetric,
    readonly threshold: number,
    private readonly d: number,
    private readonly band = 0,
  ) {
    if (!Number.isFinite(threshold)) throw new RangeError(`threshold must be finite; got ${threshold}`);
    ({ num: this.num, den: this.den } = decimalFraction(threshold));
    this.t = threshold - band;
  }

  /**
   * The pair's score if it is within the threshold, else NaN. Cosine takes the rows' sums of
   * squares in float64 (in column order, as squaredNorm computes them) when the caller has them.
   */
  score(a: Float32Array, ao: number, b: Float32Array, bo: number, aa?: number, bb?: number): number {
    const { d, t } = this;
    if (this.metric === 'l2') {
      let s = 0;
      for (let j = 0; j < d; j++) {
        const diff = a[ao + j] - b[bo + j];
        s += diff * diff;
      }
      // Each difference, square and addition rounds once: (d + 2) u relative, doubled; and t is a decimal (u |t|).
      const err = 2 * (d + 4) * U * s + 2 * U * t;
      if (s + err < t) return s;
      if (s - err > t) return NaN;
      return this.exactL2(a, ao, b, bo) ? Math.min(s, t) : NaN;
    }
    // Each product is exact in float64 (48 significant bits, no underflow): only the sum rounds.
    let p = 0;
    if (this.metric === 'ip') {
      let abs = 0;
      for (let j = 0; j < d; j++) {
        const v = a[ao + j] * b[bo + j];
        p += v;
        abs += Math.abs(v);
      }
      const err = 2 * (d + 2) * U * abs + 2 * U * Math.abs(t);
      if (p - err > t) return p;
      if (p + err < t) return NaN;
      return this.exactIp(a, ao, b, bo) ? Math.max(p, t) : NaN;
    }
    for (let j = 0; j < d; j++) p += a[ao + j] * b[bo + j];
    aa ??= squaredNorm(a, ao, d);
    bb ??= squaredNorm(b, bo, d);
    // A zero vector (a square of a float32 cannot underflow in float64) has cosine 0 with everything.
    const c = aa > 0 && bb > 0 ? Math.min(1, Math.max(-1, p / Math.sqrt(aa * bb))) : 0;
    if (this.band > 0) return c >= t ? c : NaN;
    // |p - a.b| <= (d - 1) u sum |a_j b_j| <= (d - 1) u |a| |b|; the squares' sums, their product,
    // the root and the quotient add (d + 3) u: (2d + 2) u in all, doubled; and t is a decimal.
    const err = (4 * d + 8) * U + 2 * U;
    if (c - err > t) return c;
    if (c + err < t) return NaN;
    return this.exactCosine(a, ao, b, bo) ? Math.max(c, t) : NaN;
  }

  /** sum (a_j - b_j)^2 <= num / den, in integers. */
  private exactL2(a: Float32Array, ao: number, b: Float32Array, bo: number): boolean {
    let s = 0n;
    for (let j = 0; j < this.d; j++) {
      const diff = scaled(a[ao + j]) - scaled(b[bo + j]);
      s += diff * diff;
    }
    return s * this.den <= this.num * SCALE2;
  }

  /** sum a_j b_j >= num / den, in integers. */
  private exactIp(a: Float32Array, ao: number, b: Float32Array, bo: number): boolean {
    let s = 0n;
    for (let j = 0; j < this.d; j++) s += scaled(a[ao + j]) * scaled(b[bo + j]);
    return s * this.den >= this.num * SCALE2;
  }

  /** a.b / (|a| |b|) >= num / den, in integers: squares compared, with the signs. */
  private exactCosine(a: Float32Array, ao: number, b: Float32Array, bo: number): boolean {
    let ab = 0n;
    let aa = 0n;
    let bb = 0n;
    for (let j = 0; j < this.d; j++) {
      const x = scaled(a[ao + j]);
      const y = scaled(b[bo + j]);
      ab += x * y;
      aa += x * x;
      bb += y * y;
    }
    const { num, den } = this;
    if (aa === 0n || bb === 0n) return num <= 0n;
    const lhs = ab * ab * den * den;
    const rhs = num * num * aa * bb;
    // t >= 0: a.b must be >= 0 and (a.b)^2 >= t^2 |a|^2 |b|^2; t < 0: a.b >= 0 passes, else (a.b)^2 <= t^2 |a|^2 |b|^2.
    return num >= 0n ? ab >= 0n && lhs >= rhs : ab >= 0n || lhs <= rhs;
  }
}
