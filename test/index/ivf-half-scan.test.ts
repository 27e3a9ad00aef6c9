/**
 * IVF-Flat with half rows (tuning.ivfHalfScan): the scan reads float16 copies of the lists, the
 * index searches again on the float32 rows every query the bound cannot vouch for, and results are
 * the float32 search's, bit for bit: on clustered data (where the bound vouches for nearly every
 * query), on data full of exact copies (where it cannot for some), on data past the largest half
 * (for none), with filters of both kinds, for l2, ip and cosine, on the GPU and the CPU twin.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import type { DeviceOptions } from '../../src/device.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { clusteredFloats } from '../../src/common/random.js';
import type { Metric } from '../../src/types.js';
import { cpuBackend } from '../helpers/cpu.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

// Lists in two chunks, so that the half rows are copied as chunks grow and read from both.
const tuning: DeviceOptions = { chunkRows: 1500 };
const gpuHalf = await gpuBackend({ ...tuning, ivfHalfScan: true });
const gpuFloat = await gpuBackend({ ...tuning, ivfHalfScan: false });
afterAll(disposeGpuBackends);

// 60 queries x nprobe <= 3 over 32 lists: under six queries a list, so the scan strategy runs.
const [n, d, nq, nlist] = [2400, 24, 60, 32];

async function build(backend: Backend, x: Float32Array, metric: Metric): Promise<IvfFlatIndex> {
  const index = new IvfFlatIndex(backend, { dim: d, nlist, metric, seed: 5 });
  await index.train(x.subarray(0, n * d));
  // Two adds: the second appends to lists the first made.
  await index.add(x.subarray(0, (n / 2) * d));
  await index.add(x.subarray((n / 2) * d, n * d));
  return index;
}

/** Data of each kind: `n` rows and `nq` queries after them. */
const data: Record<string, () => Float32Array> = {
  clustered: () => clusteredFloats(n + nq, d, 20, 8, 0.3),
  // Every base row one of 40 rows copied: each query's nearest are runs of exact ties.
  copies: () => {
    const x = clusteredFloats(n + nq, d, 20, 9, 0.3);
    for (let i = 40; i < n; i++) x.copyWithin(i * d, (i % 40) * d, (i % 40) * d + d);
    return x;
  },
  // Past the largest half (65504): clamped halves, a bound no gap clears.
  'past the largest half': () => clusteredFloats(n + nq, d, 20, 10, 0.3).map((v) => v * 1e5),
};

async function searchBoth(half: Backend, float: Backend, kind: string, metric: Metric, k: number, nprobe: number, filter?: (id: number) => boolean, filterMode?: 'pre' | 'post') {
  const x = data[kind]();
  const [a, b] = [await build(half, x, metric), await build(float, x, metric)];
  const xq = x.subarray(n * d);
  const params = { nprobe, filter, filterMode };
  const [ra, rb] = [await a.search(xq, k, params), await b.search(xq, k, params)];
  const stats = { ...a.halfScanStats };
  expect(b.halfScanStats.queries).toBe(0);
  await a.dispose();
  await b.dispose();
  return { ra, rb, stats };
}

function expectSame(ra: { distances: Float32Array; labels: Float64Array }, rb: { distances: Float32Array; labels: Float64Array }): void {
  expect(Array.from(ra.labels)).toEqual(Array.from(rb.labels));
  expect(Array.from(ra.distances)).toEqual(Array.from(rb.distances));
}

const devices: [string, () => Backend | null, () => Backend | null][] = [
  ['webgpu', () => gpuHalf, () => gpuFloat],
  ['cpu', () => cpuBackend({ ...tuning, ivfHalfScan: true }), () => cpuBackend({ ...tuning, ivfHalfScan: false })],
];

describe('IVF search on half rows', () => {
  for (const [device, half, float] of devices) {
    const skip = !half() || !float();
    for (const metric of ['l2', 'ip', 'cosine'] as Metric[]) {
      it.skipIf(skip)(`${device} ${metric}: clustered data, the same results, nearly every query vouched for`, async () => {
        const { ra, rb, stats } = await searchBoth(half()!, float()!, 'clustered', metric, 10, 3);
        expectSame(ra, rb);
        expect(stats.queries).toBe(nq);
        expect(stats.again).toBeLessThan(nq / 4);
      });
    }

    it.skipIf(skip)(`${device}: exact copies, the same results, some queries searched again`, async () => {
      const { ra, rb, stats } = await searchBoth(half()!, float()!, 'copies', 'l2', 10, 2);
      expectSame(ra, rb);
      expect(stats.queries).toBe(nq);
      expect(stats.again).toBeGreaterThan(0);
    });

    it.skipIf(skip)(`${device}: data past the largest half, every query searched again`, async () => {
      const { ra, rb, stats } = await searchBoth(half()!, float()!, 'past the largest half', 'l2', 5, 2);
      expectSame(ra, rb);
      expect(stats.again).toBe(nq);
    });

    it.skipIf(skip)(`${device}: every query searched again under a pre-filter, which the search again keeps`, async () => {
      const even = (id: number) => id % 2 === 0;
      for (const metric of ['l2', 'ip'] as Metric[]) {
        const { ra, rb, stats } = await searchBoth(half()!, float()!, 'past the largest half', metric, 5, 3, even, 'pre');
        expectSame(ra, rb);
        expect(stats.again).toBe(nq);
        expect(Array.from(ra.labels).every((id) => id >= 0 && id % 2 === 0)).toBe(true);
      }
    });

    it.skipIf(skip)(`${device}: a pre-filter scans the half rows, a post-filter the float32 rows`, async () => {
      const even = (id: number) => id % 2 === 0;
      const pre = await searchBoth(half()!, float()!, 'clustered', 'l2', 8, 3, even, 'pre');
      expectSame(pre.ra, pre.rb);
      expect(pre.stats.queries).toBe(nq);
      expect(Array.from(pre.ra.labels).every((id) => id < 0 || id % 2 === 0)).toBe(true);
      const post = await searchBoth(half()!, float()!, 'clustered', 'l2', 8, 3, even, 'post');
      expectSame(post.ra, post.rb);
      expect(post.stats.queries).toBe(0);
    });
  }

  it('the default: on for a software adapter, off on the CPU', () => {
    expect(cpuBackend().device.tuning.ivfHalfScan).toBe(false);
    if (gpuHalf) expect((gpuHalf.device as { ctx: { adapterInfo: { isFallbackAdapter: boolean } } }).ctx.adapterInfo.isFallbackAdapter).toBe(true);
  });
});
