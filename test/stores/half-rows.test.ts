/**
 * Half rows (src/stores/half-rows.ts): the encoding, and the bound the IVF scan on half rows is
 * checked against, which must hold for the scan's actual scores (the CPU twin's and the kernel's)
 * on data of every awkward kind: far from the origin, of tiny magnitude (flushed products, halves
 * flushed to zero), past the largest half (clamped), and byte-valued (exact halves).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { halfToFloat } from '../../src/common/fp16.js';
import { ivfScan } from '../../src/cpu/ivf-scan.js';
import { norms } from '../../src/cpu/norms.js';
import { padRows, paddedDim } from '../../src/device.js';
import { encodeIvfScan } from '../../src/gpu/kernels/ivf-scan.js';
import type { KernelMetric } from '../../src/kernel-facts.js';
import { randomFloats, randomSmallInts } from '../../src/common/random.js';
import { encodeHalfRows, halfRowsWithNorms, halfScanError, toHalf, uncertified } from '../../src/stores/half-rows.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { KernelHarness, POISON } from '../kernels/harness.js';
import { halfRowWords } from '../../src/device.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);

describe('toHalf', () => {
  it.each([
    [0, 0x0000],
    [-0, 0x8000],
    [1, 0x3c00],
    [-2, 0xc000],
    [65504, 0x7bff],
    // Past the largest half: clamped, not infinite.
    [65520, 0x7bff],
    [1e30, 0x7bff],
    [-1e30, 0xfbff],
    // The smallest normal half, and below it zero (no subnormals).
    [2 ** -14, 0x0400],
    [2 ** -15, 0x0000],
    [-(2 ** -20), 0x8000],
    // Ties to even: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10.
    [1 + 2 ** -11, 0x3c00],
    [1 + 3 * 2 ** -11, 0x3c02],
    // Just above a tie rounds up.
    [Math.fround(1 + 2 ** -11 + 2 ** -20), 0x3c01],
    // A carry into the exponent.
    [Math.fround(2 - 2 ** -12), 0x4000],
  ])('%f -> %i', (x, h) => {
    expect(toHalf(x)).toBe(h);
  });

  it('is the nearest half of every float32 in a sweep', () => {
    for (let t = 0; t < 2000; t++) {
      const x = Math.fround((t - 1000) * 0.37 + t * 1e-3);
      const h = halfToFloat(toHalf(x));
      // No half closer: one step either side is at least as far.
      const up = halfToFloat(toHalf(x) + 1);
      const down = halfToFloat(toHalf(x) - 1);
      if (Math.abs(x) >= 2 ** -14 && Math.abs(x) <= 65504) {
        expect(Math.abs(x - h)).toBeLessThanOrEqual(Math.abs(x - up));
        expect(Math.abs(x - h)).toBeLessThanOrEqual(Math.abs(x - down));
      }
    }
  });
  it('equals a nearest-half search (ties to even) on float32s of every exponent', () => {
    // The reference: the largest half at or below |x| by binary search over the normal halves,
    // then the nearer of it and the next, the even one on a tie.
    const nearest = (x: number): number => {
      const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
      const a = Math.abs(x);
      if (a > 65504) return sign | 0x7bff;
      if (a < 2 ** -14) return sign;
      let [lo, hi] = [0x0400, 0x7bff];
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (halfToFloat(mid) <= a) lo = mid;
        else hi = mid - 1;
      }
      if (lo === 0x7bff) return sign | lo;
      const [below, above] = [a - halfToFloat(lo), halfToFloat(lo + 1) - a];
      return sign | (below < above || (below === above && lo % 2 === 0) ? lo : lo + 1);
    };
    const bits = new Uint32Array(1);
    const f = new Float32Array(bits.buffer);
    let checked = 0;
    // A prime stride over all 2^32 patterns (every exponent, both signs), then every pattern of
    // one binade around 1 whose low 13 bits are near the rounding point.
    for (let b = 0; b < 2 ** 32; b += 104729) {
      bits[0] = b;
      if (Number.isNaN(f[0])) continue;
      expect(toHalf(f[0]), `${b.toString(16)}`).toBe(nearest(f[0]));
      checked++;
    }
    for (let m = 0; m < 1 << 10; m++) {
      for (const low of [0x0fff, 0x1000, 0x1001]) {
        bits[0] = 0x3f800000 | (m << 13) | low;
        expect(toHalf(f[0]), `${bits[0].toString(16)}`).toBe(nearest(f[0]));
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(40000);
  });
});

describe('encodeHalfRows', () => {
  it('packs two halves a word, low first, rows of ceil(dpad / 8) vec4s, with the largest norm and error', () => {
    const dpad = 12;
    const rows = new Float32Array(2 * dpad);
    rows.set([1, 2, 3, 1 + 2 ** -11 + 2 ** -20], 0);
    rows.set([0.5, -4], dpad);
    const { words, maxNorm, maxError } = encodeHalfRows(rows, 2, dpad);
    expect(halfRowWords(dpad)).toBe(8);
    expect(words.length).toBe(16);
    expect(words[0]).toBe(0x3c00 | (0x4000 << 16));
    expect(words[1] & 0xffff).toBe(0x4200);
    expect(words[8]).toBe((0x3800 | (0xc400 << 16)) >>> 0);
    expect(words.slice(2, 8).every((w) => w === 0)).toBe(true);
    const x3 = Math.fround(1 + 2 ** -11 + 2 ** -20);
    // Row 1's norm (sqrt(16.25)) is the larger; only row 0's last value rounds.
    expect(maxNorm).toBeCloseTo(Math.sqrt(16.25), 12);
    expect(maxError).toBeCloseTo(Math.abs(x3 - halfToFloat(0x3c01)), 15);
  });
});

/** Each row's exact (float64) distance to the query and the scan's on half rows, over one list holding every row. */
async function scanScores(device: 'cpu' | 'gpu', metric: KernelMetric, x: Float32Array, q: Float32Array, n: number, d: number) {
  const dpad = paddedDim(d);
  const xb = padRows(x, n, d, dpad);
  const { words } = encodeHalfRows(xb, n, dpad);
  const xnorm = norms(x, n, d);
  const ids = Uint32Array.from({ length: n }, (_, i) => i);
  // One list (rows 0 .. n), probed by the query: its range, then the probe.
  const lists = new Uint32Array([0, n, 0]);
  const qp = padRows(q, 1, d, dpad);
  let s: Float32Array;
  let idOut: Uint32Array;
  if (device === 'cpu') {
    s = new Float32Array(n);
    idOut = new Uint32Array(n);
    ivfScan(metric, qp, 0, 1, lists, 2, 1, 1, xb, words, xnorm, ids, null, 0, dpad, n, s, idOut);
  } else {
    const h = new KernelHarness(gpu!);
    const outS = h.output(n, POISON);
    const outI = h.output(n, POISON);
    encodeIvfScan(h.kernels, {
      metric, mask: null, maskBit0: 0, xq: h.upload(qp), lists: h.upload(lists), probe0: 2, xb: h.upload(xb), xh: h.upload(words),
      xnorm: h.upload(xnorm), ids: h.upload(ids), outS, outI, rows: 1, k: n, nprobe: 1, nseg: 1, dpad, q0: 0,
    });
    await h.run();
    s = await h.readF32(outS, n);
    idOut = await h.readU32(outI, n);
    h.dispose();
  }
  const qn = norms(q, 1, d)[0];
  return Array.from(idOut, (i, t) => {
    let exact = 0;
    for (let j = 0; j < d; j++) exact += metric === 'l2' ? (q[j] - x[i * d + j]) ** 2 : q[j] * x[i * d + j];
    // As the index sees them: l2 adds ||q||^2 (float32), ip negates back.
    const scan = metric === 'l2' ? Math.max(0, Math.fround(s[t] + qn)) : -s[t];
    return { exact, scan };
  });
}

const cases: [string, (n: number, d: number) => Float32Array][] = [
  ['in [0, 1)', (n, d) => randomFloats(n * d, 3)],
  ['far from the origin (+300)', (n, d) => randomFloats(n * d, 4).map((v) => v + 300)],
  ['of tiny magnitude (1e-21)', (n, d) => randomFloats(n * d, 5).map((v) => (v - 0.5) * 1e-21)],
  ['near the half limit, some past it (clamped)', (n, d) => randomFloats(n * d, 6).map((v) => (v - 0.5) * 140000)],
  ['bytes', (n, d) => randomSmallInts(n * d, 7).map((v) => Math.abs(v) * 30)],
];

describe('halfRowsWithNorms', () => {
  it('gives encodeHalfRows\' words and the squared norms of the rows as they decode', () => {
    // dpad 12: two vec4s of halves a row, the last four halves zero.
    const dpad = 12;
    const n = 3;
    const rows = Float32Array.from(randomFloats(n * dpad, 5), (v) => 300 * v);
    rows[0] = 2049; // -> 2048
    const { words, norms: got } = halfRowsWithNorms(rows, n, dpad);
    expect(Array.from(words)).toEqual(Array.from(encodeHalfRows(rows, n, dpad).words));
    expect(words.length).toBe(n * halfRowWords(dpad));
    for (let i = 0; i < n; i++) {
      let s = 0;
      for (let j = 0; j < dpad; j++) s += halfToFloat(toHalf(rows[i * dpad + j])) ** 2;
      expect(got[i]).toBe(Math.fround(s));
      expect(got[i]).not.toBe(norms(rows, n, dpad)[i]);
    }
  });
});

describe('halfScanError bounds the scan on half rows', () => {
  const [n, d] = [120, 37];
  for (const [what, make] of cases) {
    for (const metric of ['l2', 'ip'] as KernelMetric[]) {
      for (const device of ['cpu', 'gpu'] as const) {
        it.skipIf(device === 'gpu' && !gpu)(`${device} ${metric}, data ${what}`, async () => {
          const all = make(n + 1, d);
          const x = all.subarray(0, n * d);
          const q = all.subarray(n * d);
          const { maxNorm, maxError } = encodeHalfRows(padRows(x, n, d, paddedDim(d)), n, paddedDim(d));
          let q2 = 0;
          for (const v of q) q2 += v * v;
          // halfScanError is twice the bound: the bound itself must hold.
          const bound = halfScanError(Math.sqrt(q2), paddedDim(d), maxNorm, maxError) / 2;
          let worst = 0;
          for (const { exact, scan } of await scanScores(device, metric, x, q, n, d)) {
            expect(Math.abs(exact - scan)).toBeLessThanOrEqual(bound);
            worst = Math.max(worst, Math.abs(exact - scan));
          }
          // And rounding happened (else this would check nothing), except where halves are exact.
          if (what !== 'bytes') expect(worst).toBeGreaterThan(0);
        });
      }
    }
  }
});

describe('uncertified', () => {
  // Two queries of norm 1 with kc = 4 candidates: need 2, so inner is the 2nd and outer the 4th.
  const xq = new Float32Array([1, 0, 0, 1]);
  const err = halfScanError(1, 4, 1, 1e-3);
  const cand = (second: number, fourth: number, label4 = 3) => ({
    distances: new Float32Array([0, second, 0, fourth, 0, second, 0, fourth]),
    labels: new Int32Array([0, 1, 2, label4, 0, 1, 2, 3]),
  });

  it('vouches for a query whose gap is more than twice the error, l2 and ip', () => {
    expect(uncertified(cand(1, 1 + 2.01 * err), xq, 2, 2, 4, 4, 2, 'l2', 1, 1e-3)).toEqual([]);
    expect(uncertified(cand(1, 1 + 1.99 * err), xq, 2, 2, 4, 4, 2, 'l2', 1, 1e-3)).toEqual([0, 1]);
    expect(uncertified(cand(1, 1 - 2.01 * err), xq, 2, 2, 4, 4, 2, 'ip', 1, 1e-3)).toEqual([]);
    expect(uncertified(cand(1, 1 - 1.99 * err), xq, 2, 2, 4, 4, 2, 'ip', 1, 1e-3)).toEqual([0, 1]);
  });

  it('vouches for a query with fewer candidates than kc (every row it may have is one)', () => {
    const c = cand(1, 1, -1);
    c.labels.set([0, 1, 2, -1], 0);
    expect(uncertified(c, xq, 2, 2, 4, 4, 2, 'l2', 1, 1e-3)).toEqual([1]);
  });
});
