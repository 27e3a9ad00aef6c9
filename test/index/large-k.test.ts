/**
 * k = 4096 (select-radix on every device: above HEAP_MAX_K) on WebGPU equals the CPU backend: the
 * kernels' lists exactly on small integers, and FlatIndex and IvfFlatIndex (whose re-score asks for
 * 8192 candidates) on floats.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { HEAP_MAX_K } from '../../src/kernel-facts.js';
import { clusteredFloats, randomSmallInts } from '../../src/common/random.js';
import { expectIdentical } from '../helpers/compare.js';
import { cpuBackend } from '../helpers/cpu.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

const gpu = await gpuBackend();
const cpu = cpuBackend();
afterAll(disposeGpuBackends);

const k = 4096;
const d = 16;
const n = 20_000;
const nq = 8;

describe.skipIf(!gpu)(`k = ${k} on WebGPU equals the CPU backend`, () => {
  it('the GPU takes k up to 8192; 4096 is above HEAP_MAX_K (select-radix)', () => {
    expect(gpu!.maxK).toBe(8192);
    expect(k).toBeGreaterThan(HEAP_MAX_K);
  });

  it('the kernels\' lists, on small integers (exact scores, many ties), sorted', async () => {
    const xb = randomSmallInts(n * d, 31, 5);
    const xq = randomSmallInts(nq * d, 32, 5);
    const stores = await Promise.all(
      [gpu!, cpu].map(async (b) => {
        const s = b.createBaseStore(d);
        await s.add(xb, n);
        return s;
      }),
    );
    const [g, c] = await Promise.all([gpu!.searchFlat(stores[0], xq, nq, k, 'l2'), cpu.searchFlat(stores[1], xq, nq, k, 'l2')]);
    expectIdentical(g, c, 'searchFlat');
    for (let i = 1; i < nq * k; i++) {
      if (i % k === 0) continue;
      const [a, b] = [g.distances[i - 1], g.distances[i]];
      if (a > b || (a === b && g.labels[i - 1] > g.labels[i])) throw new Error(`row ${Math.floor(i / k)} out of order at ${i % k}`);
    }
    for (const s of stores) s.dispose();
  });

  it('FlatIndex and IvfFlatIndex, on floats', async () => {
    const xb = clusteredFloats(n, d, 40, 33);
    const xq = clusteredFloats(nq, d, 40, 34);
    const flats = [new FlatIndex(gpu!, { dim: d }), new FlatIndex(cpu, { dim: d })];
    for (const f of flats) await f.add(xb);
    const [fg, fc] = await Promise.all(flats.map((f) => f.search(xq, k)));
    expectIdentical(fg, fc, 'FlatIndex');
    // Centroids trained once; nprobe 8 of 16 lists: about 10,000 rows a query, more than the 8192 candidates.
    const ivfs = [new IvfFlatIndex(gpu!, { dim: d, nlist: 16, nprobe: 8 }), new IvfFlatIndex(cpu, { dim: d, nlist: 16, nprobe: 8 })];
    await ivfs[1].train(xb);
    await ivfs[0].setCentroids(ivfs[1].centroids!);
    for (const i of ivfs) await i.add(xb);
    const [ig, ic] = await Promise.all(ivfs.map((i) => i.search(xq, k)));
    expectIdentical(ig, ic, 'IvfFlatIndex');
    // nprobe = nlist: IVF equals Flat.
    expectIdentical(await ivfs[0].search(xq, k, { nprobe: 16 }), fg, 'IvfFlatIndex nprobe = nlist');
    for (const x of [...flats, ...ivfs]) await x.dispose();
  });
});
