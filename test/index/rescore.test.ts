/**
 * The exact final order (src/indexes/rescore.ts): the last candidates of every search are re-scored with
 * the direct formula on the host, so a stored vector finds itself first at distance 0 among near
 * copies, and the WebGPU and CPU backends return the same (distance, id) lists, element by element.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import { cpuBackend } from '../helpers/cpu.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { rng } from '../../src/common/random.js';
import { EXACT_BLOCK, RESCORE_MARGIN, candidatesFor, cosineDistance, rescore } from '../../src/indexes/rescore.js';
import { expectIdentical } from '../helpers/compare.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

const gpu = await gpuBackend();
const cpu = cpuBackend();
afterAll(disposeGpuBackends);

/**
 * `copies` near copies of one vector of large norm (coordinates around 300), each moved by a
 * relative 1e-6 in a few coordinates: their true distances to the original (about 1e-4) are far
 * below the expansion's rounding (about 1e-7 * 2 * ||x||^2, some 1.5 here), so the kernels' scores
 * cannot order them. The original is the last row, so that a tie broken on the smaller id would
 * put a copy first.
 */
function nearCopies(copies: number, d: number, seed: number): Float32Array {
  const r = rng(seed);
  const v = Float32Array.from({ length: d }, () => 200 + 200 * r());
  const x = new Float32Array((copies + 1) * d);
  for (let c = 0; c < copies; c++) {
    x.set(v, c * d);
    for (let t = 0; t < 4; t++) {
      const j = Math.floor(r() * d);
      x[c * d + j] = Math.fround(v[j] * (1 + (r() < 0.5 ? -1 : 1) * (1 + r()) * 1e-6));
    }
  }
  x.set(v, copies * d);
  return x;
}

const backends: [string, Backend | null][] = [
  ['cpu', cpu],
  ['webgpu', gpu],
];

describe('exact final order', () => {
  for (const [name, backend] of backends) {
    it.skipIf(!backend)(`${name}: a stored vector finds itself first, at distance 0, among 20 near copies`, async () => {
      const d = 64;
      const x = nearCopies(20, d, 5);
      const index = new FlatIndex(backend!, { dim: d });
      await index.add(x);
      const r = await index.search(x.slice(20 * d), 3);
      expect(r.labels[0]).toBe(20);
      expect(r.distances[0]).toBe(0);
      // The next two are the nearest copies by the exact float64 distance.
      const exact = Array.from({ length: 20 }, (_, c) => {
        let s = 0;
        for (let j = 0; j < d; j++) s += (x[c * d + j] - x[20 * d + j]) ** 2;
        return { c, s: Math.fround(s) };
      }).sort((a, b) => a.s - b.s || a.c - b.c);
      expect(Array.from(r.labels.subarray(1))).toEqual([exact[0].c, exact[1].c]);
      expect(Array.from(r.distances.subarray(1))).toEqual([exact[0].s, exact[1].s]);
    });

    it.skipIf(!backend)(`${name}: IVF too, and cosine`, async () => {
      const d = 32;
      const x = nearCopies(12, d, 9);
      const ivf = new IvfFlatIndex(backend!, { dim: d, nlist: 1, metric: 'cosine' });
      await ivf.train(x);
      await ivf.add(x);
      const r = await ivf.search(x.slice(12 * d), 1);
      expect(r.labels[0]).toBe(12);
      expect(r.distances[0]).toBe(1);
    });
  }

  it.skipIf(!gpu)('WebGPU and CPU agree element by element on 5,000 near-duplicates (Flat and IVF)', async () => {
    // 250 groups of 20 near copies; 40 queries, each an original.
    const d = 48;
    const groups = 250;
    const x = new Float32Array(groups * 21 * d);
    for (let g = 0; g < groups; g++) x.set(nearCopies(20, d, 1000 + g), g * 21 * d);
    const xq = new Float32Array(40 * d);
    for (let q = 0; q < 40; q++) xq.set(x.subarray((q * 6 * 21 + 20) * d, (q * 6 * 21 + 21) * d), q * d);
    for (const kind of ['Flat', 'IVF'] as const) {
      const results = [];
      for (const backend of [gpu!, cpu]) {
        const index =
          kind === 'Flat' ? new FlatIndex(backend, { dim: d }) : new IvfFlatIndex(backend, { dim: d, nlist: 16, nprobe: 16 });
        // nprobe = nlist: every list is scanned, so any centroids give the Flat answer.
        if (index instanceof IvfFlatIndex) await index.setCentroids(x.slice(0, 16 * d));
        await index.add(x);
        results.push(await index.search(xq, 10));
      }
      expectIdentical(results[0], results[1], `${kind}: webgpu vs cpu`);
      for (let q = 0; q < 40; q++) expect(results[0].labels[q * 10]).toBe(q * 6 * 21 + 20);
    }
  });
});

/** Row `id` of `xb` (rows of `d`), as a store's rowsAt gives it. */
const byId = (xb: Float32Array, d: number) => (id: number) => xb.subarray(id * d, (id + 1) * d);

describe('rescore', () => {
  it('orders hand-made candidates by exact distance, ties on the smaller id, padded', () => {
    // d = 2; base rows by id: 0 (0,0), 1 (3,4), 2 (0,5), 3 (1,1), 4 (5,0).
    const xb = new Float32Array([0, 0, 3, 4, 0, 5, 1, 1, 5, 0]);
    const xq = new Float32Array([0, 0, 1, 1]);
    // Candidates in a scrambled order, with -1 holes; kc = 5, k = 4.
    const cand = { labels: new Int32Array([4, -1, 1, 2, 0, 3, 0, -1, -1, -1]), distances: new Float32Array(10) };
    const l2 = rescore('l2', xq, 2, 2, cand, 5, 4, byId(xb, 2));
    // Query 0: 0 at 0; 1, 2, 4 all at 25: ties by id.
    expect(Array.from(l2.labels)).toEqual([0, 1, 2, 4, 3, 0, -1, -1]);
    expect(Array.from(l2.distances)).toEqual([0, 25, 25, 25, 0, 2, Infinity, Infinity]);
    const ip = rescore('ip', xq, 2, 2, cand, 5, 4, byId(xb, 2));
    // Query 0 scores 0 with everything: ids in order. Query 1: 3 -> 2, 0 -> 0.
    expect(Array.from(ip.labels)).toEqual([0, 1, 2, 4, 3, 0, -1, -1]);
    expect(Array.from(ip.distances)).toEqual([0, 0, 0, 0, 2, 0, -Infinity, -Infinity]);
  });

  it('reads rows through the lookup it is given when ids are not row numbers', () => {
    const xb = new Float32Array([9, 9, 1, 0]); // row 0 holds id 1, row 1 holds id 0
    const rowOf = [1, 0];
    const r = rescore('l2', new Float32Array([1, 0]), 1, 2, { labels: new Int32Array([1, 0]), distances: new Float32Array(2) }, 2, 2, (id) =>
      xb.subarray(rowOf[id] * 2, rowOf[id] * 2 + 2),
    );
    expect(Array.from(r.labels)).toEqual([0, 1]);
    expect(Array.from(r.distances)).toEqual([0, 145]);
  });

  it('scores each candidate as alone, whatever shares its block of EXACT_BLOCK: the same float64 sums as one row in column order', () => {
    // 9 candidates a row (not a multiple of the block), holes anywhere, and a duplicate id, so
    // that blocks hold 1 to EXACT_BLOCK rows and a row lands in every block position.
    expect(EXACT_BLOCK).toBe(4);
    const d = 37;
    const n = 40;
    const nq = 6;
    const kc = 9;
    const r = rng(91);
    const xb = Float32Array.from({ length: n * d }, () => r() * 4 - 2);
    const xq = Float32Array.from({ length: nq * d }, () => r() * 4 - 2);
    const labels = Int32Array.from({ length: nq * kc }, (_, i) => (i % 5 === 3 ? -1 : i % 11 === 0 ? 7 : Math.floor(r() * n)));
    const cand = { labels, distances: new Float32Array(nq * kc) };
    const reference = (metric: 'l2' | 'ip' | 'cosine', q: number, id: number): number => {
      const x = xb.subarray(id * d, (id + 1) * d);
      let s = 0;
      if (metric === 'l2') for (let j = 0; j < d; j++) s += (xq[q * d + j] - x[j]) * (xq[q * d + j] - x[j]);
      if (metric === 'ip') for (let j = 0; j < d; j++) s -= xq[q * d + j] * x[j];
      if (metric !== 'cosine') return s;
      let qq = 0;
      let xx = 0;
      for (let j = 0; j < d; j++) qq += xq[q * d + j] * xq[q * d + j];
      for (let j = 0; j < d; j++) xx += x[j] * x[j];
      return cosineDistance(xq, q * d, Math.sqrt(qq), x, 0, Math.sqrt(xx), d);
    };
    for (const metric of ['l2', 'ip', 'cosine'] as const) {
      const out = rescore(metric, xq, nq, d, cand, kc, kc, byId(xb, d), undefined, true);
      for (let q = 0; q < nq; q++) {
        // Every candidate (duplicates kept), by (reference score, id), padded.
        const want = Array.from(labels.subarray(q * kc, (q + 1) * kc))
          .filter((id) => id >= 0)
          .map((id) => ({ id, s: reference(metric, q, id) }))
          .sort((a, b) => a.s - b.s || a.id - b.id);
        expect(Array.from(out.labels.subarray(q * kc, q * kc + want.length))).toEqual(want.map((w) => w.id));
        expect(Array.from(out.scores!.subarray(q * kc, q * kc + want.length))).toEqual(want.map((w) => w.s));
        expect(Array.from(out.labels.subarray(q * kc + want.length, (q + 1) * kc))).toEqual(new Array(kc - want.length).fill(-1));
      }
    }
  });

  it('asks for k + RESCORE_MARGIN candidates or more, a power of two, within the largest k', () => {
    expect(RESCORE_MARGIN).toBe(16);
    expect([1, 10, 16, 17, 100, 112, 113, 1000, 1020].map((k) => candidatesFor(k, 1024))).toEqual([32, 32, 32, 64, 128, 128, 256, 1024, 1024]);
  });

  it('cosine: a 384-d vector beats its nearest possible copy (one coordinate moved by 2e-7), added before it', async () => {
    // q.x / (|q| |x|) in float64 cannot tell these apart (it is 1 - 1e-15 or so, below the sums'
    // rounding); the squared difference of the unit rows can.
    const d = 384;
    const index = new FlatIndex(cpu, { dim: d, metric: 'cosine' });
    const xs: Float32Array[] = [];
    for (let t = 0; t < 50; t++) {
      const r = rng(700 + t);
      const x = Float32Array.from({ length: d }, () => r() - 0.5);
      const y = x.slice();
      y[t % d] = Math.fround(y[t % d] * (1 + 2e-7));
      await index.add(y); // id 2t: the copy first, so that a tie would go its way
      await index.add(x); // id 2t + 1
      xs.push(x);
    }
    const q = new Float32Array(50 * d);
    xs.forEach((x, t) => q.set(x, t * d));
    const r = await index.search(q, 1);
    expect(Array.from(r.labels)).toEqual(Array.from({ length: 50 }, (_, t) => 2 * t + 1));
    expect(Array.from(r.distances)).toEqual(new Array(50).fill(1));
  });

  it('cosine: a zero vector has cosine 0 with everything, itself included', () => {
    const xb = new Float32Array([0, 0, 0.6, 0.8]);
    const r = rescore('cosine', new Float32Array([0, 0, 0.6, 0.8]), 2, 2, { labels: new Int32Array([0, 1, 0, 1]), distances: new Float32Array(4) }, 2, 2, byId(xb, 2));
    expect(Array.from(r.labels)).toEqual([0, 1, 1, 0]);
    expect(Array.from(r.distances)).toEqual([0, 0, 1, 0]);
  });

  it('scores cosine in float64: the vector itself beats a copy that rounds to the same float32 similarity', () => {
    // Unit vectors a and b with cosine 1 - 2e-12: equal to 1 in float32, not in float64.
    const a = new Float32Array([0.6, 0.8]);
    const b = Float32Array.from([0.6 + 1.6e-6, 0.8 - 1.2e-6]);
    const r = rescore('cosine', a, 1, 2, { labels: new Int32Array([0, 1]), distances: new Float32Array(2) }, 2, 2, byId(new Float32Array([...b, ...a]), 2));
    expect(Array.from(r.labels)).toEqual([1, 0]);
    expect(r.distances[0]).toBe(1);
  });
});
