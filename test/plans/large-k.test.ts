/**
 * Selection above HEAP_MAX_K (select-radix, lists sorted on the host): the host sort by hand, flat
 * search against a full-sort oracle on both devices over many tiles, and the IVF plan's choices
 * (the GEMM always, ids read where they do not increase with position, a clear error where one
 * query's lists cannot fit).
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import type { DeviceOptions } from '../../src/device.js';
import { HEAP_MAX_K, type KernelMetric, PAD_ID } from '../../src/kernel-facts.js';
import { randomSmallInts } from '../../src/common/random.js';
import { sortLists } from '../../src/common/results.js';
import type { SearchResult } from '../../src/types.js';
import { expectIdentical } from '../helpers/compare.js';
import { cpuBackend } from '../helpers/cpu.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

afterAll(disposeGpuBackends);

describe('sortLists', () => {
  it('sorts each row up to its first padding entry by (score, id), -0 equal to +0', () => {
    const k = 6;
    const s = new Float32Array([3, -1, 3, Infinity, Infinity, Infinity, 0, -0, -2, 0, -0, 5]);
    const i = new Uint32Array([9, 4, 2, PAD_ID, PAD_ID, PAD_ID, 8, 7, 1, 3, 9, 0]);
    sortLists(s, i, 2, k);
    expect(Array.from(i)).toEqual([4, 2, 9, PAD_ID, PAD_ID, PAD_ID, 1, 3, 7, 8, 9, 0]);
    // Each score keeps its own bits: ids 3 and 8 hold +0, ids 7 and 9 hold -0.
    expect(Array.from(s, (v) => (Object.is(v, -0) ? '-0' : String(v)))).toEqual(
      ['-1', '3', '3', 'Infinity', 'Infinity', 'Infinity', '-2', '0', '-0', '0', '-0', '5'],
    );
  });

  it('orders +Infinity scores of real entries by id, and a row without zeros of both signs as it is', () => {
    const s = new Float32Array([Infinity, 1, Infinity, -0, -0, 2]);
    const i = new Uint32Array([7, 3, 5, 9, 2, 1]);
    sortLists(s, i, 1, 6);
    expect(Array.from(i)).toEqual([2, 9, 3, 1, 5, 7]);
    expect(Object.is(s[0], -0) && Object.is(s[1], -0)).toBe(true);
  });
});

type Maker = (o?: DeviceOptions) => Promise<Backend | null>;
const devices: [string, Maker][] = [
  ['cpu', async (o) => cpuBackend(o)],
  ['webgpu', async (o) => gpuBackend(o)],
];
const probeGpu = await gpuBackend();

/** The k nearest by a full sort in float64 (exact for small integers), ties on the smaller id, padded. */
function oracle(metric: KernelMetric, xb: Float32Array, n: number, xq: Float32Array, nq: number, d: number, k: number): SearchResult {
  const distances = new Float32Array(nq * k).fill(metric === 'l2' ? Infinity : -Infinity);
  const labels = new Float64Array(nq * k).fill(-1);
  for (let q = 0; q < nq; q++) {
    const all = Array.from({ length: n }, (_, id) => {
      let v = 0;
      for (let j = 0; j < d; j++) v += metric === 'l2' ? (xq[q * d + j] - xb[id * d + j]) ** 2 : xq[q * d + j] * xb[id * d + j];
      return [v, id];
    });
    all.sort((a, b) => (metric === 'l2' ? a[0] - b[0] : b[0] - a[0]) || a[1] - b[1]);
    all.slice(0, k).forEach(([v, id], j) => {
      distances[q * k + j] = v;
      labels[q * k + j] = id;
    });
  }
  return { distances, labels };
}

for (const [name, make] of devices) {
  const skip = name === 'webgpu' && !probeGpu;
  describe(`${name}: k above HEAP_MAX_K`, () => {
    const d = 5;
    const n = 3000;
    const nq = 6;
    // Small integers: every score exact, many ties across tiles.
    const xb = randomSmallInts(n * d, 21, 4);
    const xq = randomSmallInts(nq * d, 22, 4);

    it.skipIf(skip)('flat search equals a full sort, sorted, over many tiles and query tiles (and k > n)', async () => {
      // Tiles of 512 columns (6 per query tile) and 4 queries per tile.
      const backend = (await make({ tileCols: 512, scoreTileBytes: 4 * 512 * 4 }))!;
      const store = backend.createBaseStore(d);
      await store.add(xb, n);
      for (const metric of ['l2', 'ip'] as KernelMetric[]) {
        for (const k of [HEAP_MAX_K + 1, 2 * HEAP_MAX_K + 7, n + 5]) {
          const got = await backend.searchFlat(store, xq, nq, k, metric);
          expectIdentical(got, oracle(metric, xb, n, xq, nq, d, k), `${metric} k = ${k}`);
        }
      }
      store.dispose();
    });

    it.skipIf(skip)('IVF takes the GEMM, and orders ties by id where ids fall as positions rise', async () => {
      // HEAP_MAX_K + 100 copies of one vector in one list, stored with ids falling: every score ties.
      const backend = (await make({ ivfStrategy: 'scan' }))!;
      const coarse = backend.createBaseStore(2);
      await coarse.add(new Float32Array([1, 1, -5, -5]), 2);
      const lists = backend.createLists(2, 2);
      const copies = HEAP_MAX_K + 100;
      const ids = Uint32Array.from({ length: copies }, (_, j) => copies - 1 - j);
      await lists.add(new Float32Array(2 * copies).fill(1), copies, new Uint32Array(copies), ids);
      expect(lists.idsInPositionOrder).toBe(false);
      const k = HEAP_MAX_K + 5;
      const { labels } = await backend.searchIvf(coarse, lists, new Float32Array([1, 1]), 1, k, 2, 'l2');
      expect(Array.from(labels)).toEqual(Array.from({ length: k }, (_, j) => j));
      lists.reset();
      coarse.dispose();
    });

    it.skipIf(skip)('IVF refuses k above HEAP_MAX_K where one query\'s probed lists of k exceed a binding', async () => {
      // One query's 2 lists of k = HEAP_MAX_K + 1 take 8200 bytes; the limit is 8192.
      const backend = (await make({ maxBindingBytes: 8192 }))!;
      const coarse = backend.createBaseStore(2);
      await coarse.add(new Float32Array([1, 1, -5, -5]), 2);
      const lists = backend.createLists(2, 2);
      await lists.add(new Float32Array([1, 1, -5, -5]), 2, new Uint32Array([0, 1]), new Uint32Array([0, 1]));
      await expect(backend.searchIvf(coarse, lists, new Float32Array([1, 1]), 1, HEAP_MAX_K + 1, 2, 'l2')).rejects.toThrow(
        new RegExp(`IVF search with k = ${HEAP_MAX_K + 1}: .* lists of k \\(8200 bytes\\) in one binding; this device binds at most 8192 bytes`),
      );
      lists.reset();
      coarse.dispose();
    });
  });
}
