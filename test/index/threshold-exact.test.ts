/**
 * Pairs exactly at the threshold (issue 33, item 5): small-integer vectors whose cosines,
 * products and squared distances are exact rationals, checked against an oracle in integer
 * arithmetic (exact in float64 at these sizes), on both backends. A threshold means the decimal it prints as: 0.9 is 9/10,
 * so a pair with a.b = 72 and |a|^2 = |b|^2 = 80 (cosine exactly 0.9) is a pair at 0.9.
 *
 * - dedup (cosine and l2) finds exactly the oracle's pairs, rows exactly parallel (a, 3a, 5a, 7a)
 *   included at threshold 1;
 * - range search finds exactly the oracle's results for l2 and ip (the index holds the rows as
 *   given), and for cosine (the index holds them normalised to float32) every result of the
 *   oracle, plus at most those within the documented band COSINE_RANGE_BAND below the radius.
 */
import { describe, expect, it } from 'vitest';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { dedup } from '../../src/jobs/dedup.js';
import { COSINE_RANGE_BAND, ThresholdTest, decimalFraction, thresholdTakenAs } from '../../src/common/threshold.js';
import { rng } from '../../src/common/random.js';
import type { Metric } from '../../src/types.js';
import { gpuBackend } from '../helpers/gpu.js';
import { suiteBackends } from '../helpers/suite.js';

const { cpu, gpu } = await suiteBackends();
// Tiny tiles and pair buffer: the self-join crosses tiles and overflows its buffer.
const gpuTiled = await gpuBackend({ tileCols: 64, scoreTileBytes: 64 * 4 * 40, chunkRows: 250, pairCapacity: 16 });
const backends = [['cpu', cpu], ['webgpu', gpu], ['webgpu (tiny tiles)', gpuTiled]] as const;

const d = 4;
/** 600 random rows in [-3, 3]^4 (many exact cosines of 0.9, 0.8, 0.5, 1), then 100 groups (a, 3a, 5a, 7a). */
function corpus(): Int32Array {
  let seed = 5;
  const rnd = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
  const x = new Int32Array((600 + 400) * d);
  for (let i = 0; i < 600 * d; i++) x[i] = Math.floor(rnd() * 7) - 3;
  for (let g = 0; g < 100; g++) {
    const a = Array.from({ length: d }, () => Math.floor(rnd() * 7) - 3);
    if (!a.some((v) => v !== 0)) a[0] = 1;
    [1, 3, 5, 7].forEach((m, k) => a.forEach((v, t) => (x[(600 + 4 * g + k) * d + t] = m * v)));
  }
  return x;
}
const all = corpus();

/** Rows `rows` of the corpus, with the exact integer products the oracle needs (every one exact in float64). */
function subset(rows: number[]) {
  const n = rows.length;
  const xi = new Int32Array(n * d);
  rows.forEach((r, k) => xi.set(all.subarray(r * d, (r + 1) * d), k * d));
  const dots = new Float64Array(n * n);
  const dists = new Float64Array(n * n);
  for (let a = 0; a < n; a++) {
    for (let b = 0; b < n; b++) {
      let s = 0;
      let e = 0;
      for (let t = 0; t < d; t++) {
        s += xi[a * d + t] * xi[b * d + t];
        e += (xi[a * d + t] - xi[b * d + t]) ** 2;
      }
      dots[a * n + b] = s;
      dists[a * n + b] = e;
    }
  }
  const dot = (a: number, b: number): number => dots[a * n + b];
  const dist2 = (a: number, b: number): number => dists[a * n + b];
  /** cos(a, b) >= p / q exactly (q > 0; a zero vector has cosine 0): squares compared in integers, with the signs. */
  const cosineAtLeast = (a: number, b: number, p: number, q: number): boolean => {
    const ab = dot(a, b);
    const aa = dot(a, a);
    const bb = dot(b, b);
    if (aa === 0 || bb === 0) return p <= 0;
    const lhs = ab * ab * q * q;
    const rhs = p * p * aa * bb;
    return p >= 0 ? ab >= 0 && lhs >= rhs : ab >= 0 || lhs <= rhs;
  };
  /** A float64 cosine, for the band's outer bound only. */
  const cosine = (a: number, b: number): number => (dot(a, a) && dot(b, b) ? dot(a, b) / Math.sqrt(dot(a, a) * dot(b, b)) : 0);
  return { n, x: Float32Array.from(xi), dot, dist2, cosineAtLeast, cosine };
}
const range = (a: number, b: number): number[] => Array.from({ length: b - a }, (_, k) => a + k);
/** All 1,000 rows; the first 300 (low thresholds pass most pairs); 200 random rows and 50 parallel groups. */
const full = subset(range(0, 1000));
const small = subset(range(0, 300));
const mixed = subset([...range(0, 200), ...range(600, 800)]);

/** The threshold p / q as the number the API takes. */
const num = (p: number, q: number): number => p / q;

const COSINES: [number, number][] = [[9, 10], [8, 10], [5, 10], [1, 1], [0, 1], [-5, 10]];

describe('dedup at the threshold', () => {
  for (const [p, q] of COSINES) {
    const c = p / q > 0.4 ? full : small;
    const oracle: string[] = [];
    let atThreshold = 0;
    for (let a = 0; a < c.n; a++) {
      for (let b = a + 1; b < c.n; b++) {
        if (!c.cosineAtLeast(a, b, p, q)) continue;
        oracle.push(`${a},${b}`);
        if (!c.cosineAtLeast(a, b, p * 1000 + 1, q * 1000)) atThreshold++; // exactly at it
      }
    }
    it(`cosine >= ${num(p, q)} (${c.n} rows): exactly the oracle's ${oracle.length} pairs (${atThreshold} exactly at it)`, async () => {
      expect(atThreshold).toBeGreaterThan(20);
      for (const [name, backend] of backends) {
        if (!backend) continue;
        const r = await dedup(backend, c.x, d, { metric: 'cosine', threshold: num(p, q) });
        const got = Array.from(r.i, (a, k) => `${a},${r.j[k]}`);
        expect(got, name).toEqual(oracle);
        // Reported scores never contradict the threshold.
        for (const s of r.score) expect(s).toBeGreaterThanOrEqual(num(p, q));
      }
    });
  }

  it('rows exactly parallel (a, 3a, 5a, 7a) at threshold 1: all 600 pairs of the 100 groups, score exactly 1', async () => {
    for (const [name, backend] of backends) {
      if (!backend) continue;
      const r = await dedup(backend, full.x, d, { metric: 'cosine', threshold: 1 });
      const got = new Set(Array.from(r.i, (a, k) => `${a},${r.j[k]}`));
      for (let g = 0; g < 100; g++) {
        for (let s = 0; s < 4; s++) for (let t = s + 1; t < 4; t++) expect(got.has(`${600 + 4 * g + s},${600 + 4 * g + t}`), `${name}: group ${g}`).toBe(true);
      }
      expect(Array.from(new Set(r.score))).toEqual([1]);
    }
  });

  for (const t of [2, 5, 12]) {
    it(`squared l2 <= ${t}: exactly the oracle's pairs`, async () => {
      const oracle: string[] = [];
      let atThreshold = 0;
      for (let a = 0; a < full.n; a++) {
        for (let b = a + 1; b < full.n; b++) {
          if (full.dist2(a, b) > t) continue;
          oracle.push(`${a},${b}`);
          if (full.dist2(a, b) === t) atThreshold++;
        }
      }
      expect(atThreshold).toBeGreaterThan(20);
      for (const [name, backend] of backends) {
        if (!backend) continue;
        const r = await dedup(backend, full.x, d, { metric: 'l2', threshold: t });
        expect(Array.from(r.i, (a, k) => `${a},${r.j[k]}`), name).toEqual(oracle);
      }
    });
  }
});

describe('range search at the radius', () => {
  const c = mixed;
  /** Each query's result ids, as "q:id" keys sorted, from a Flat index of `metric` over the rows searched with its own rows. */
  async function ranged(metric: Metric, radius: number, backend: NonNullable<(typeof backends)[number][1]>): Promise<string[]> {
    const index = new FlatIndex(backend, { dim: d, metric });
    try {
      await index.add(c.x);
      const r = await index.rangeSearch(c.x, radius);
      const out: string[] = [];
      for (let qq = 0; qq < c.n; qq++) for (let j = r.lims[qq]; j < r.lims[qq + 1]; j++) out.push(`${qq}:${r.labels[j]}`);
      return out.sort();
    } finally {
      await index.dispose();
    }
  }
  const oracleOf = (pass: (a: number, b: number) => boolean): string[] => {
    const out: string[] = [];
    for (let a = 0; a < c.n; a++) for (let b = 0; b < c.n; b++) if (pass(a, b)) out.push(`${a}:${b}`);
    return out.sort();
  };

  it('l2 and ip: exactly the oracle (squared distance <= 5 and <= 12; inner product >= 9 and >= -4)', async () => {
    const cases: [Metric, number, (a: number, b: number) => boolean][] = [
      ['l2', 5, (a, b) => c.dist2(a, b) <= 5],
      ['l2', 12, (a, b) => c.dist2(a, b) <= 12],
      ['ip', 9, (a, b) => c.dot(a, b) >= 9],
      ['ip', -4, (a, b) => c.dot(a, b) >= -4],
    ];
    for (const [metric, radius, pass] of cases) {
      const oracle = oracleOf(pass);
      for (const [name, backend] of backends) {
        if (!backend) continue;
        expect(await ranged(metric, radius, backend), `${name} ${metric} ${radius}`).toEqual(oracle);
      }
    }
  });

  for (const [p, q] of COSINES.filter(([p, q]) => p / q > 0.4)) {
    it(`cosine >= ${num(p, q)}: every oracle result, and nothing more than COSINE_RANGE_BAND below the radius`, async () => {
      const oracle = oracleOf((a, b) => c.cosineAtLeast(a, b, p, q));
      const band = new Set(oracleOf((a, b) => c.cosine(a, b) >= num(p, q) - COSINE_RANGE_BAND - 1e-12));
      for (const [name, backend] of backends) {
        if (!backend) continue;
        const got = new Set(await ranged('cosine', num(p, q), backend));
        for (const k of oracle) expect(got.has(k), `${name}: ${k} missing`).toBe(true);
        for (const k of got) expect(band.has(k), `${name}: ${k} below the band`).toBe(true);
      }
    });
  }
});

describe('ThresholdTest on float32 values of every size', () => {
  /** v (a float32 value) as an exact fraction: [numerator, log2 of the denominator]. */
  const exact = (v: number): bigint => BigInt(v * 2 ** 149);
  /** The oracle: the exact rational of each metric, against the decimal of t, in BigInt. */
  function passes(metric: 'l2' | 'ip' | 'cosine', a: Float32Array, b: Float32Array, t: number): boolean {
    const { num: tn, den: td } = decimalFraction(t);
    let ab = 0n;
    let aa = 0n;
    let bb = 0n;
    let dd = 0n;
    for (let j = 0; j < a.length; j++) {
      const x = exact(a[j]);
      const y = exact(b[j]);
      ab += x * y;
      aa += x * x;
      bb += y * y;
      dd += (x - y) ** 2n;
    }
    const unit = 1n << 298n;
    if (metric === 'l2') return dd * td <= tn * unit;
    if (metric === 'ip') return ab * td >= tn * unit;
    if (aa === 0n || bb === 0n) return tn <= 0n;
    const lhs = ab * ab * td * td;
    const rhs = tn * tn * aa * bb;
    return tn >= 0n ? ab >= 0n && lhs >= rhs : ab >= 0n || lhs <= rhs;
  }

  it('decides as the integer oracle does, with thresholds set on the pairs\' own float64 scores (the borderline path)', () => {
    const r = rng(11);
    let borderline = 0;
    for (let trial = 0; trial < 3000; trial++) {
      const dd = 1 + Math.floor(r() * 12);
      // Magnitudes from 1e-30 to 1e15 (subnormal float32 products included at the low end), some rows parallel.
      const scale = 10 ** Math.floor(r() * 45 - 30);
      const a = Float32Array.from({ length: dd }, () => (r() - 0.5) * scale);
      const b = r() < 0.2 ? a.map((v) => v * 3) : Float32Array.from({ length: dd }, (_, j) => (r() < 0.5 ? a[j] : (r() - 0.5) * scale));
      for (const metric of ['l2', 'ip', 'cosine'] as const) {
        // The float64 score itself, then its shortest decimal: within rounding of the exact score.
        let t: number;
        if (metric === 'l2') t = a.reduce((s, v, j) => s + (v - b[j]) ** 2, 0);
        else if (metric === 'ip') t = a.reduce((s, v, j) => s + v * b[j], 0);
        else {
          const aa = a.reduce((s, v) => s + v * v, 0);
          const bb = b.reduce((s, v) => s + v * v, 0);
          t = aa && bb ? Math.max(-1, Math.min(1, a.reduce((s, v, j) => s + v * b[j], 0) / Math.sqrt(aa * bb))) : 0;
        }
        for (const tt of [t, t * (1 + 2 ** -52), t * (1 - 2 ** -52)]) {
          if (metric === 'l2' && !(tt >= 0)) continue;
          if (metric === 'cosine' && Math.abs(tt) > 1) continue;
          const want = passes(metric, a, b, tt);
          const got = new ThresholdTest(metric, tt, dd).score(a, 0, b, 0);
          expect(!Number.isNaN(got), `${metric} trial ${trial} t ${tt}`).toBe(want);
          if (want) {
            // Never a score beyond the threshold.
            if (metric === 'l2') expect(got).toBeLessThanOrEqual(tt);
            else expect(got).toBeGreaterThanOrEqual(tt);
          }
          borderline++;
        }
      }
    }
    expect(borderline).toBeGreaterThan(20000);
  });

  it('takes a threshold as the decimal it prints as', () => {
    expect(decimalFraction(0.9)).toEqual({ num: 9n, den: 10n });
    expect(decimalFraction(-0.5)).toEqual({ num: -5n, den: 10n });
    expect(decimalFraction(1e-7)).toEqual({ num: 1n, den: 10000000n });
    expect(decimalFraction(1.5e21)).toEqual({ num: 1500000000000000000000n, den: 1n });
    expect(decimalFraction(12)).toEqual({ num: 12n, den: 1n });
    expect(() => decimalFraction(NaN)).toThrow(RangeError);
    // An integer is itself, though it prints shorter (2^80 prints as 1.2089258196146292e+24).
    expect(decimalFraction(2 ** 80)).toEqual({ num: 2n ** 80n, den: 1n });
  });

  it('says when a threshold written has more digits than a double holds, and what it is taken as', () => {
    expect(thresholdTakenAs('0.9')).toBeNull();
    expect(thresholdTakenAs('0.900')).toBeNull();
    expect(thresholdTakenAs('-.5')).toBeNull();
    expect(thresholdTakenAs('1208925819614629174706176')).toBeNull(); // 2^80, a double
    expect(thresholdTakenAs('0.90000000000000002')).toBe('0.9');
    expect(thresholdTakenAs('1208925819614629174706177')).toBe('1208925819614629174706176');
  });

  it('an integer threshold beyond 2^53 is exact: at 2^80, a pair at squared distance 2^80 + 1 is not one', async () => {
    const x = Float32Array.of(0, 0, 2 ** 40, 1, 2 ** 40, 0);
    for (const [name, backend] of backends) {
      if (!backend) continue;
      const r = await dedup(backend, x, 2, { metric: 'l2', threshold: 2 ** 80 });
      expect(Array.from(r.i, (a, k) => `${a},${r.j[k]}`), name).toEqual(['0,2', '1,2']);
    }
  });
});
