/**
 * No binding ceiling: with `maxBindingBytes` lowered to what one row (or one query's lists) needs,
 * every plan splits its data (store chunks, query batches, score tiles, IVF lists across chunks,
 * k-means points across chunks, self-join row tiles) and still returns exactly what the unsplit
 * plan returns, element for element, on both devices.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import { createBackend } from '../../src/backend/create-backend.js';
import { paddedDim } from '../../src/device.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { dedup } from '../../src/jobs/dedup.js';
import { knnGraph } from '../../src/jobs/knn-graph.js';
import { KMeans } from '../../src/codecs/kmeans.js';
import { clusteredFloats, randomSmallInts } from '../../src/common/random.js';
import { candidatesFor } from '../../src/indexes/rescore.js';
import { cpuBackend } from '../helpers/cpu.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

const d = 13; // odd: rows are padded to 16 floats (64 bytes)
const dpad = paddedDim(d);
const n = 600;
const nq = 37;
const k = 8;
const kc = candidatesFor(k, 1024); // what the indexes ask the plans for
const nlist = 16;
const nprobe = 4;

/** The smallest limit the given single items allow (and at least the 256 bytes every device takes). */
const tightest = (...itemBytes: number[]): number => Math.max(256, ...itemBytes);

type Maker = (maxBindingBytes?: number) => Promise<Backend | null>;
const devices: [string, Maker][] = [
  ['cpu', async (m) => cpuBackend({ maxBindingBytes: m })],
  ['webgpu', async (m) => gpuBackend({ maxBindingBytes: m })],
];
afterAll(disposeGpuBackends);

const x = clusteredFloats(n, d, 12, 7);
const xq = clusteredFloats(nq, d, 12, 8);
// Small integers: every score exact in float32, many ties, and duplicates for dedup.
const xi = randomSmallInts(n * d, 4, 9);
for (let r = 100; r < 140; r++) xi.set(xi.subarray(7 * d, 8 * d), r * d);

const wholes = await Promise.all(devices.map(([, make]) => make()));

devices.forEach(([name, make], di) => {
  const whole = wholes[di];
  const skip = !whole;
  describe(`${name}: split equals unsplit`, () => {
    it.skipIf(skip)('the limit in force is reported, and a lowered one is honoured', async () => {
      const narrow = (await make(4096))!;
      expect(narrow.maxBindingBytes).toBe(4096);
      expect(whole!.maxBindingBytes).toBeGreaterThan(4096);
      const store = narrow.createBaseStore(d);
      await store.add(x, n);
      // 4096 / 64 bytes per row: chunks of 64 rows.
      expect((store as unknown as { chunks: unknown[] }).chunks.length).toBe(Math.ceil(n / 64));
      store.dispose();
    });

    it.skipIf(skip)('Flat: chunks of 4 rows, score tiles of 4 columns, two queries per batch', async () => {
      const limit = tightest(dpad * 4, kc * 4);
      const narrow = (await make(limit))!;
      // 150 rows and 9 queries: one chunk per row makes thousands of dispatches on the GPU.
      const q = xq.subarray(0, 9 * d);
      for (const data of [x.subarray(0, 150 * d), xi.subarray(0, 150 * d)]) {
        const want = new FlatIndex(whole!, { dim: d });
        const got = new FlatIndex(narrow, { dim: d });
        await want.add(data);
        await got.add(data);
        const a = await want.search(q, k);
        const b = await got.search(q, k);
        expect(Array.from(b.labels)).toEqual(Array.from(a.labels));
        expect(Array.from(b.distances)).toEqual(Array.from(a.distances));
        await want.dispose();
        await got.dispose();
      }
    });

    it.skipIf(skip)('IVF: centroids and lists in many chunks, lists spanning chunks, added in several calls', async () => {
      const limit = tightest(dpad * 4, kc * 4 * nprobe, 8 * nlist);
      const narrow = (await make(limit))!;
      const want = new IvfFlatIndex(whole!, { dim: d, nlist, nprobe });
      await want.train(x);
      await want.add(x);
      const got = new IvfFlatIndex(narrow, { dim: d, nlist, nprobe });
      await got.setCentroids(want.centroids!);
      // Uneven adds: lists grow extent by extent, across chunks of (limit / 64) rows.
      for (const [a, b] of [[0, 1], [1, 50], [50, 51], [51, 333], [333, n]]) await got.add(x.subarray(a * d, b * d));
      expect(Array.from(got.listSizes())).toEqual(Array.from(want.listSizes()));
      for (const p of [1, nprobe, nlist]) {
        if (p * kc * 4 > limit) continue;
        const a = await want.search(xq, k, { nprobe: p });
        const b = await got.search(xq, k, { nprobe: p });
        expect(Array.from(b.labels), `nprobe ${p}`).toEqual(Array.from(a.labels));
        expect(Array.from(b.distances), `nprobe ${p}`).toEqual(Array.from(a.distances));
      }
      await want.dispose();
      await got.dispose();
    });

    it.skipIf(skip)('k-means: points in chunks, blocks spanning chunks, same centroids bit for bit', async () => {
      // 2100 points: 3 blocks of 700 (as unsplit); the limit holds the 3 blocks' partial sums,
      // so the points come in chunks of 24 rows and every block spans several chunks.
      const nc = 8;
      const xt = clusteredFloats(2100, d, 12, 9);
      const limit = 3 * nc * dpad * 4;
      const narrow = (await make(limit))!;
      const a = await new KMeans(whole!, { dim: d }).train(xt, { k: nc, niter: 6 });
      const b = await new KMeans(narrow, { dim: d }).train(xt, { k: nc, niter: 6 });
      expect(Array.from(b.centroids)).toEqual(Array.from(a.centroids));
      expect(b.objective).toEqual(a.objective);
    });

    it.skipIf(skip)('k-means says clearly when the centroids alone exceed one binding', async () => {
      const narrow = (await make(256))!;
      await expect(new KMeans(narrow, { dim: d }).train(x, { k: 8, niter: 1 })).rejects.toThrow(/k-means keeps its 8 centroids in one binding/);
    });

    it.skipIf(skip)('dedup: self-join tiles of a few rows over chunks of 8 rows', async () => {
      // 64 pairs per binding: the 40 copies of row 7 give it 40 pairs, which must fit.
      const narrow = (await make(512))!;
      for (const metric of ['l2', 'cosine'] as const) {
        const threshold = metric === 'l2' ? 20 : 0.97;
        const a = await dedup(whole!, xi, d, { metric, threshold });
        const b = await dedup(narrow, xi, d, { metric, threshold });
        expect(b.pairs, metric).toBe(a.pairs);
        expect(b.pairs, metric).toBeGreaterThan(40 * 39 / 2);
        expect(Array.from(b.i)).toEqual(Array.from(a.i));
        expect(Array.from(b.j)).toEqual(Array.from(a.j));
        expect(Array.from(b.score)).toEqual(Array.from(a.score));
      }
    });

    it.skipIf(skip)('kNN graph of the index itself', async () => {
      const limit = tightest(dpad * 4, candidatesFor(k + 1, 1024) * 4);
      const narrow = (await make(limit))!;
      const graphs: Int32Array[] = [];
      for (const backend of [whole!, narrow]) {
        const index = new FlatIndex(backend, { dim: d });
        await index.add(x);
        const labels = new Int32Array(n * k);
        await knnGraph(index, { k, self: x, block: 100, onBlock: (start, rows, l) => labels.set(l, start * k) });
        graphs.push(labels);
        await index.dispose();
      }
      expect(Array.from(graphs[1])).toEqual(Array.from(graphs[0]));
    });

    it.skipIf(skip)('one item larger than a binding is refused with the sizes', async () => {
      const narrow = (await make(256))!;
      // A row of 100 floats takes 400 bytes.
      expect(() => new FlatIndex(narrow, { dim: 100 })).toThrow(/one stored row takes 400 bytes; this device binds at most 256/);
      await expect(createBackend({ backend: 'cpu', maxBindingBytes: 255 })).rejects.toThrow(/maxBindingBytes must be an integer >= 256; got 255/);
    });
  });
});
