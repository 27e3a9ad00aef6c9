/**
 * The two IVF strategies (src/plans/ivf-search.ts) return the same results: the scan (one query
 * against one list per invocation) and the GEMM (each list against all the queries that probe it),
 * on both devices, whole and split across chunks, and both equal Flat at nprobe = nlist.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import type { DeviceOptions } from '../../src/device.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { HEAP_MAX_K } from '../../src/kernel-facts.js';
import { GEMM_MIN_QUERIES_PER_LIST, chooseIvfStrategy } from '../../src/plans/ivf-search.js';
import { clusteredFloats, randomSmallInts } from '../../src/common/random.js';
import { cpuBackend } from '../helpers/cpu.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

afterAll(disposeGpuBackends);

const d = 10;
const n = 1500;
const nq = 40;
const nlist = 24;
const k = 7;

type Maker = (o: DeviceOptions) => Promise<Backend | null>;
const devices: [string, Maker][] = [
  ['cpu', async (o) => cpuBackend(o)],
  ['webgpu', async (o) => gpuBackend(o)],
];
const probeGpu = await gpuBackend();

const data = [
  ['small integers', randomSmallInts(n * d, 11, 6), randomSmallInts(nq * d, 12, 6)],
  ['floats', clusteredFloats(n, d, 30, 13), clusteredFloats(nq, d, 30, 14)],
] as const;

for (const [name, make] of devices) {
  const skip = name === 'webgpu' && !probeGpu;
  describe(`${name}: scan and GEMM agree`, () => {
    for (const [kind, xb, xq] of data) {
      it.skipIf(skip)(`${kind}: every nprobe, whole and split; nprobe = nlist equals Flat`, async () => {
        const make3 = async (o: DeviceOptions) => (await make(o))!;
        const scan = await make3({ ivfStrategy: 'scan' });
        const gemm = await make3({ ivfStrategy: 'gemm' });
        // Chunks of 64 rows (3072 / 48 bytes) for lists of about 62 rows: most span chunks; the limit
        // holds one query's 24 copies. Tiny score tiles: several column and row tiles per list.
        const gemmSplit = await make3({ ivfStrategy: 'gemm', maxBindingBytes: 3072, tileCols: 8, scoreTileBytes: 8 * 4 * 3 });
        const indexes: IvfFlatIndex[] = [];
        let centroids: Float32Array | null = null;
        for (const backend of [scan, gemm, gemmSplit]) {
          const index = new IvfFlatIndex(backend, { dim: d, nlist });
          if (centroids) await index.setCentroids(centroids);
          else {
            await index.train(xb);
            centroids = index.centroids;
          }
          await index.add(xb.subarray(0, 700 * d));
          await index.add(xb.subarray(700 * d));
          indexes.push(index);
        }
        const flat = new FlatIndex(scan, { dim: d });
        await flat.add(xb);
        for (const nprobe of [1, 3, 8, nlist]) {
          const [a, b, c] = await Promise.all(indexes.map((i) => i.search(xq, k, { nprobe })));
          expect(Array.from(b.labels), `gemm nprobe ${nprobe}`).toEqual(Array.from(a.labels));
          expect(Array.from(b.distances), `gemm nprobe ${nprobe}`).toEqual(Array.from(a.distances));
          expect(Array.from(c.labels), `gemm split nprobe ${nprobe}`).toEqual(Array.from(a.labels));
          expect(Array.from(c.distances), `gemm split nprobe ${nprobe}`).toEqual(Array.from(a.distances));
        }
        const f = await flat.search(xq, k);
        const g = await indexes[1].search(xq, k, { nprobe: nlist });
        expect(Array.from(g.labels)).toEqual(Array.from(f.labels));
        expect(Array.from(g.distances)).toEqual(Array.from(f.distances));
        for (const i of indexes) await i.dispose();
        await flat.dispose();
      });
    }
  });
}

describe('ids that do not increase with position', () => {
  for (const [name, make] of devices) {
    const skip = name === 'webgpu' && !probeGpu;
    it.skipIf(skip)(`${name}: a restored index with ids in any order still orders ties by id`, async () => {
      // 100 copies of one vector in one list, stored with ids 99 .. 0: every score ties.
      const gemm = (await make({ ivfStrategy: 'gemm' }))!;
      const scan = (await make({ ivfStrategy: 'scan' }))!;
      const got: number[][] = [];
      for (const backend of [gemm, scan]) {
        const index = new IvfFlatIndex(backend, { dim: 2, nlist: 2, nprobe: 2 });
        await index.setCentroids(new Float32Array([1, 1, -5, -5]));
        const xb = new Float32Array(200).fill(1);
        const ids = Uint32Array.from({ length: 100 }, (_, i) => 99 - i);
        await index.restoreLists(new Uint32Array([0, 100, 100]), ids, xb);
        got.push(Array.from((await index.search(new Float32Array([1, 1]), 5)).labels));
        await index.dispose();
      }
      expect(got[0]).toEqual([0, 1, 2, 3, 4]);
      expect(got[1]).toEqual([0, 1, 2, 3, 4]);
    });

    it.skipIf(skip)(`${name}: lists given ids out of order fall back to the scan, with the same results`, async () => {
      const backend = (await make({ ivfStrategy: 'gemm' }))!;
      const lists = backend.createLists(2, 1);
      await lists.add(new Float32Array([1, 1, 1, 1]), 2, new Uint32Array([0, 0]), new Uint32Array([5, 6]));
      expect(lists.idsInPositionOrder).toBe(true);
      await lists.add(new Float32Array([1, 1]), 1, new Uint32Array([0]), new Uint32Array([3]));
      expect(lists.idsInPositionOrder).toBe(false);
      const coarse = backend.createBaseStore(2);
      await coarse.add(new Float32Array([1, 1]), 1);
      const r = await backend.searchIvf(coarse, lists, new Float32Array([1, 1]), 1, 3, 1, 'l2');
      expect(Array.from(r.labels)).toEqual([3, 5, 6]);
      lists.reset();
      expect(lists.idsInPositionOrder).toBe(true);
      coarse.dispose();
    });
  }
});

describe('choosing the strategy', () => {
  it('auto takes the GEMM once lists average GEMM_MIN_QUERIES_PER_LIST queries each; a forced one is kept', () => {
    const auto = cpuBackend().device;
    expect(chooseIvfStrategy(auto, 1, 8, 1024, 10)).toBe('scan');
    const rows = (1024 / 8) * GEMM_MIN_QUERIES_PER_LIST;
    expect(chooseIvfStrategy(auto, rows - 1, 8, 1024, 10)).toBe('scan');
    expect(chooseIvfStrategy(auto, rows, 8, 1024, 10)).toBe('gemm');
    expect(chooseIvfStrategy(cpuBackend({ ivfStrategy: 'scan' }).device, 1000, 8, 1024, HEAP_MAX_K)).toBe('scan');
    expect(chooseIvfStrategy(cpuBackend({ ivfStrategy: 'gemm' }).device, 1, 1, 1024, 10)).toBe('gemm');
  });

  it('k above HEAP_MAX_K always takes the GEMM: the scan holds no more', () => {
    expect(chooseIvfStrategy(cpuBackend().device, 1, 8, 1024, HEAP_MAX_K + 1)).toBe('gemm');
    expect(chooseIvfStrategy(cpuBackend({ ivfStrategy: 'scan' }).device, 1, 8, 1024, HEAP_MAX_K + 1)).toBe('gemm');
  });
});
