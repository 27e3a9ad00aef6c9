import { afterAll, describe, expect, it } from 'vitest';
import { cpuBackend } from '../helpers/cpu.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { randomFloats, randomSmallInts } from '../../src/common/random.js';
import type { Metric } from '../../src/types.js';

import { IP_ATOL, L2_ATOL_SCALE, expectIdentical, expectTieAwareEqual } from '../helpers/compare.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { InvalidArgumentError } from '../../src/errors.js';

// Small chunks, tiles and batches so that the table below crosses chunk boundaries, column tiles
// (tileCols), query tiles (8 rows of 128 scores) and query batches (10 queries per submit).
const gpu = await gpuBackend();
const gpuChunked = await gpuBackend({ chunkRows: 300, tileCols: 128, scoreTileBytes: 128 * 4 * 8, queryBatch: 10 });
const cpu = cpuBackend();
afterAll(disposeGpuBackends);

interface Shape {
  name: string;
  n: number;
  d: number;
  nq: number;
  k: number;
  /** Add in this many calls, to exercise appends (and, on the chunked backend, chunk growth). */
  adds?: number;
}

const shapes: Shape[] = [
  { name: 'k = 1', n: 200, d: 8, nq: 9, k: 1 },
  { name: 'k = 1024 (the heaps\' largest; its candidates take select-radix)', n: 1500, d: 4, nq: 3, k: 1024 },
  { name: 'k = max (8192)', n: 9000, d: 4, nq: 3, k: 8192 },
  { name: 'k > n (padding)', n: 20, d: 6, nq: 4, k: 50 },
  { name: 'n not a multiple of the tile', n: 1001, d: 16, nq: 13, k: 10 },
  { name: 'odd d', n: 300, d: 17, nq: 11, k: 7 },
  { name: 'd = 1', n: 150, d: 1, nq: 5, k: 3 },
  { name: 'nq = 1', n: 500, d: 32, nq: 1, k: 20 },
  { name: 'empty index', n: 0, d: 5, nq: 3, k: 4 },
  { name: 'many chunks, several adds', n: 2000, d: 12, nq: 17, k: 25, adds: 3 },
];

async function build(backend: FlatIndex['backend'], metric: Metric, d: number, xb: Float32Array, adds: number): Promise<FlatIndex> {
  const index = new FlatIndex(backend, { dim: d, metric });
  const n = xb.length / d;
  const step = Math.ceil(n / adds);
  for (let i = 0; i < n; i += step) await index.add(xb.subarray(i * d, Math.min(n, i + step) * d));
  return index;
}

describe.skipIf(!gpu)('FlatIndex: GPU equals the CPU twin', () => {
  for (const s of shapes) {
    for (const metric of ['l2', 'ip', 'cosine'] as Metric[]) {
      for (const kind of ['int', 'float'] as const) {
        // Cosine normalises, so its data is never exactly representable: compare with tolerance.
        const exact = kind === 'int' && metric !== 'cosine';
        it(`${s.name}: n=${s.n} d=${s.d} nq=${s.nq} k=${s.k} ${metric} ${kind}`, async () => {
          const seed = s.n * 31 + s.d * 7 + s.k;
          const gen = kind === 'int' ? randomSmallInts : randomFloats;
          const xb = gen(s.n * s.d, seed);
          const xq = gen(s.nq * s.d, seed + 1);
          const want = await (await build(cpu, metric, s.d, xb, s.adds ?? 1)).search(xq, s.k);
          for (const backend of [gpu!, gpuChunked!]) {
            const index = await build(backend, metric, s.d, xb, s.adds ?? 1);
            expect(index.ntotal).toBe(s.n);
            const got = await index.search(xq, s.k);
            const what = `seed ${seed}, ${backend === gpu ? 'default' : 'chunked'} backend`;
            if (exact) {
              expectIdentical(got, want, what);
            } else {
              const atol = (r: number): number => {
                if (metric !== 'l2') return IP_ATOL * s.d;
                let qn = 0;
                for (let j = 0; j < s.d; j++) qn += xq[r * s.d + j] ** 2;
                return L2_ATOL_SCALE * 2 * (qn + s.d);
              };
              expectTieAwareEqual(got, want, s.nq, s.k, atol, what);
            }
            for (let i = 0; i < got.labels.length; i++) {
              if (got.labels[i] === -1) expect(got.distances[i]).toBe(metric === 'l2' ? Infinity : -Infinity);
            }
            index.dispose();
          }
        });
      }
    }
  }
});

const backends = [
  ['cpu', cpu],
  ['webgpu', gpu],
] as const;

for (const [name, backend] of backends) {
  describe.skipIf(!backend)(`FlatIndex API on ${name}`, () => {
    it('returns exact distances and ids by hand', async () => {
      const index = new FlatIndex(backend!, { dim: 2 });
      await index.add(new Float32Array([0, 0, 3, 4, 1, 1]));
      const r = await index.search(new Float32Array([0, 0, 3, 3]), 2);
      expect(Array.from(r.labels)).toEqual([0, 2, 1, 2]);
      expect(Array.from(r.distances)).toEqual([0, 2, 1, 8]);
      const ip = new FlatIndex(backend!, { dim: 2, metric: 'ip' });
      await ip.add(new Float32Array([1, 0, 0, 2, -1, -1]));
      const s = await ip.search(new Float32Array([1, 1]), 3);
      expect(Array.from(s.labels)).toEqual([1, 0, 2]);
      expect(Array.from(s.distances)).toEqual([2, 1, -2]);
    });

    it('cosine returns similarities of normalised vectors', async () => {
      const index = new FlatIndex(backend!, { dim: 2, metric: 'cosine' });
      await index.add(new Float32Array([10, 0, 0, 0.5, 3, 3]));
      const r = await index.search(new Float32Array([2, 0]), 3);
      expect(Array.from(r.labels)).toEqual([0, 2, 1]);
      expect(r.distances[0]).toBeCloseTo(1, 6);
      expect(r.distances[1]).toBeCloseTo(Math.SQRT1_2, 6);
      expect(r.distances[2]).toBeCloseTo(0, 6);
    });

    it('pads an empty index and k > ntotal', async () => {
      const index = new FlatIndex(backend!, { dim: 3 });
      let r = await index.search(new Float32Array([1, 2, 3]), 2);
      expect(Array.from(r.labels)).toEqual([-1, -1]);
      expect(Array.from(r.distances)).toEqual([Infinity, Infinity]);
      await index.add(new Float32Array([1, 2, 3]));
      r = await index.search(new Float32Array([1, 2, 3]), 3);
      expect(Array.from(r.labels)).toEqual([0, -1, -1]);
      expect(Array.from(r.distances)).toEqual([0, Infinity, Infinity]);
      const ip = new FlatIndex(backend!, { dim: 1, metric: 'ip' });
      r = await ip.search(new Float32Array([1]), 1);
      expect(Array.from(r.distances)).toEqual([-Infinity]);
    });

    it('appends across add calls and empties on reset', async () => {
      const index = new FlatIndex(backend!, { dim: 1 });
      await index.add(new Float32Array([5]));
      await index.add(new Float32Array([1, 3]));
      expect(index.ntotal).toBe(3);
      const r = await index.search(new Float32Array([0]), 3);
      expect(Array.from(r.labels)).toEqual([1, 2, 0]);
      await index.reset();
      expect(index.ntotal).toBe(0);
      await index.add(new Float32Array([7]));
      expect(Array.from((await index.search(new Float32Array([0]), 1)).labels)).toEqual([0]);
    });

    it('rejects bad input with a message naming it, and changes nothing', async () => {
      const index = new FlatIndex(backend!, { dim: 3 });
      await index.add(new Float32Array([1, 2, 3]));
      const bad = async (fn: () => Promise<unknown> | unknown, message: RegExp): Promise<void> => {
        await expect((async () => fn())()).rejects.toThrow(message);
        await expect((async () => fn())()).rejects.toBeInstanceOf(InvalidArgumentError);
      };
      await bad(() => index.add(new Float32Array(4)), /length 4, which is not a multiple of dim 3/);
      await bad(() => index.add(new Float32Array([1, 2, 3, 4, NaN, 6])), /xb row 1 has a non-finite value \(NaN\) at column 1/);
      await bad(() => index.add(new Float32Array([Infinity, 0, 0])), /xb row 0 has a non-finite value \(Infinity\)/);
      // Finite, but its squared distances would overflow float32 (+Infinity, which reads as padding).
      await bad(() => index.add(new Float32Array([1, 2, 3, 1e19, 0, 0])), /xb row 1 has a squared norm of 1\.000e\+38; at most 8\.507e\+37 .* scale the vectors down/);
      await bad(() => index.search(new Float32Array([0, 1e20, 0]), 1), /xq row 0 has a squared norm of 1\.000e\+40/);
      // Cosine rows are normalised before use: the same huge row is fine there.
      const cos = new FlatIndex(backend!, { dim: 3, metric: 'cosine' });
      await cos.add(new Float32Array([1e19, 0, 0, 0, 1e19, 0]));
      const c = await cos.search(new Float32Array([0, 1e20, 0]), 2);
      expect([Array.from(c.labels), Array.from(c.distances)]).toEqual([[1, 0], [1, 0]]);
      await bad(() => index.add([1, 2, 3] as unknown as Float32Array), /xb must be a Float32Array of n \* 3 values; got Array/);
      expect(index.ntotal).toBe(1);
      const q = new Float32Array([1, 2, 3]);
      await bad(() => index.search(q, 0), /k must be an integer in \[1, \d+\]; got 0/);
      await bad(() => index.search(q, 1.5), /k must be an integer .* got 1.5/);
      await bad(() => index.search(q, backend!.maxK + 1), new RegExp(`k must be an integer in \\[1, ${backend!.maxK}\\]`));
      await bad(() => index.search(new Float32Array(0), 1), /xq is empty; expected at least one vector of dim 3/);
      await bad(() => index.search(new Float32Array(2), 1), /xq has length 2, which is not a multiple of dim 3/);
      await bad(() => index.search(new Float32Array([0, 0, 0, 0, -Infinity, 0]), 1), /xq row 1 has a non-finite value/);
      expect(() => new FlatIndex(backend!, { dim: 0 })).toThrow(/dim must be an integer in \[1, 65536\]; got 0/);
      expect(() => new FlatIndex(backend!, { dim: 4, metric: 'hamming' as Metric })).toThrow(/metric must be one of l2, ip, cosine; got hamming/);
      // The index still works after all of that.
      expect(Array.from((await index.search(q, 1)).labels)).toEqual([0]);
    });
  });
}
