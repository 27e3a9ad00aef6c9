import { afterAll, describe, expect, it } from 'vitest';
import { cpuBackend } from '../helpers/cpu.js';
import { indexFactory } from '../../src/indexes/factory.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { KMeans } from '../../src/codecs/kmeans.js';
import { randomFloats, randomSmallInts, rng } from '../../src/common/random.js';
import { type Metric, normalizeRows } from '../../src/types.js';
import { IP_ATOL, L2_ATOL_SCALE, expectIdentical, expectTieAwareEqual, l2Exact, tieAwareRecall } from '../helpers/compare.js';
import { clusteredData } from '../helpers/clustered.js';
import { loadRealSet } from '../helpers/data.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

const gpu = await gpuBackend();
const cpu = cpuBackend();
afterAll(disposeGpuBackends);
const backends = [['cpu', cpu], ['webgpu', gpu]] as const;

async function ivf(backend: IvfFlatIndex['backend'], d: number, nlist: number, metric: Metric, xt: Float32Array, xb: Float32Array) {
  const index = new IvfFlatIndex(backend, { dim: d, nlist, metric, niter: 4, seed: 3 });
  await index.train(xt);
  await index.add(xb);
  return index;
}

function atolFor(metric: Metric, xq: Float32Array, d: number, xbMaxNorm: number) {
  return (r: number): number => {
    if (metric !== 'l2') return IP_ATOL * d;
    let qn = 0;
    for (let j = 0; j < d; j++) qn += xq[r * d + j] ** 2;
    return L2_ATOL_SCALE * (qn + xbMaxNorm);
  };
}

describe('IvfFlatIndex', () => {
  for (const metric of ['l2', 'ip', 'cosine'] as Metric[]) {
    for (const [name, backend] of backends) {
      it.skipIf(!backend)(`${name} ${metric}: IVF with nprobe = nlist equals Flat`, async () => {
        const d = 12;
        const xb = clusteredData(1500, d, 10, 5, 0.2);
        const xq = randomFloats(20 * d, 6);
        const index = await ivf(backend!, d, 16, metric, xb, xb);
        const flat = new FlatIndex(backend!, { dim: d, metric });
        await flat.add(xb);
        const got = await index.search(xq, 15, { nprobe: 16 });
        const want = await flat.search(xq, 15);
        expectTieAwareEqual(got, want, 20, 15, atolFor(metric, xq, d, 4 * d), `${name} ${metric}`);
      });
    }
  }

  it.skipIf(!gpu)('GPU IVF equals CPU IVF for every nprobe (small integers: exactly)', async () => {
    const d = 10;
    const xb = randomSmallInts(2000 * d, 8);
    const xq = randomSmallInts(25 * d, 9);
    const [g, c] = [await ivf(gpu!, d, 24, 'l2', xb, xb), await ivf(cpu, d, 24, 'l2', xb, xb)];
    expect(Array.from(g.listSizes())).toEqual(Array.from(c.listSizes()));
    for (const nprobe of [1, 2, 5, 24]) {
      expectIdentical(await g.search(xq, 12, { nprobe }), await c.search(xq, 12, { nprobe }), `nprobe ${nprobe}`);
    }
  });

  it.skipIf(!gpu)('GPU IVF equals CPU IVF on float data, ip, and with many probed lists (merge rounds)', async () => {
    const d = 8;
    const xb = clusteredData(3000, d, 50, 10, 0.1);
    const xq = randomFloats(10 * d, 11);
    const [g, c] = [await ivf(gpu!, d, 80, 'ip', xb, xb), await ivf(cpu, d, 80, 'ip', xb, xb)];
    for (const nprobe of [3, 40, 80]) {
      expectTieAwareEqual(await g.search(xq, 7, { nprobe }), await c.search(xq, 7, { nprobe }), 10, 7, () => IP_ATOL * d, `nprobe ${nprobe}`);
    }
  });

  for (const [name, backend] of backends) {
    it.skipIf(!backend)(`${name}: add after train appends; reset keeps the training`, async () => {
      const d = 4;
      const xt = randomSmallInts(200 * d, 1);
      const index = new IvfFlatIndex(backend!, { dim: d, nlist: 5, niter: 3 });
      await index.train(xt);
      await index.add(xt.subarray(0, 100 * d));
      await index.add(xt.subarray(100 * d));
      expect(index.ntotal).toBe(200);
      const q = xt.subarray(150 * d, 151 * d);
      const r = await index.search(q, 1, { nprobe: 5 });
      expect(r.distances[0]).toBe(0);
      expect(xt.subarray(r.labels[0] * d, r.labels[0] * d + d)).toEqual(q);
      await index.reset();
      expect(index.ntotal).toBe(0);
      expect(index.isTrained).toBe(true);
      expect(Array.from((await index.search(q, 2)).labels)).toEqual([-1, -1]);
    });

    it.skipIf(!backend)(`${name}: ip and cosine train by their metric (Faiss's spherical k-means: unit centroids, assignment by largest inner product), PQ lists by L2; spherical overrides`, async () => {
      const d = 6;
      const r = rng(31);
      // Rows of norms 0.2 to 5 along a few directions: L2 means take the rows' norms, unit centroids do not.
      const xt = Float32Array.from({ length: 900 * d }, (_, i) => (i % d === 0 ? (r() * 4.8 + 0.2) : 0) + (r() - 0.5) * ((i % d) + 1));
      const norms = (c: Float32Array) => Array.from({ length: c.length / d }, (_, l) => Math.hypot(...c.subarray(l * d, (l + 1) * d)));
      for (const metric of ['ip', 'cosine'] as Metric[]) {
        const index = new IvfFlatIndex(backend!, { dim: d, nlist: 8, metric, niter: 6, seed: 3 });
        await index.train(xt);
        for (const [l, norm] of norms(index.centroids!).entries()) expect(Math.abs(norm - 1), `${metric} centroid ${l}`).toBeLessThan(1e-6);
        // The same training by hand: KMeans with spherical, on the rows as the index holds them.
        const km = await new KMeans(backend!, { dim: d }).train(metric === 'cosine' ? normalizeRows(xt, d) : xt, { k: 8, niter: 6, seed: 3, spherical: true });
        expect(Array.from(index.centroids!), metric).toEqual(Array.from(km.centroids));
        await index.dispose();
      }
      // Lists of SQ codes train by the metric too; lists of PQ codes by L2 k-means (see the
      // header of src/indexes/ivf/ivf-flat-index.ts), and `spherical` overrides either default.
      const plain = await new KMeans(backend!, { dim: d }).train(xt, { k: 8, niter: 6, seed: 3 });
      expect(Math.max(...norms(plain.centroids)), 'L2 means').toBeGreaterThan(1.5);
      const sphere = await new KMeans(backend!, { dim: d }).train(xt, { k: 8, niter: 6, seed: 3, spherical: true });
      for (const [codec, spherical, want] of [['SQ8', undefined, sphere], ['PQ2x4', undefined, plain], [undefined, false, plain], ['PQ2x4', true, sphere]] as const) {
        const index = new IvfFlatIndex(backend!, { dim: d, nlist: 8, metric: 'ip', niter: 6, seed: 3, codec, spherical });
        await index.train(xt);
        expect(Array.from(index.centroids!), `${codec ?? 'Flat'} spherical ${spherical}`).toEqual(Array.from(want.centroids));
        await index.dispose();
      }
    });

    it.skipIf(!backend)(`${name}: clear errors`, async () => {
      const index = new IvfFlatIndex(backend!, { dim: 3, nlist: 4 });
      await expect(index.search(new Float32Array(3), 1)).rejects.toThrow(/not trained; call train\(xt\) first/);
      await expect(index.add(new Float32Array(3))).rejects.toThrow(/not trained/);
      await expect(index.train(new Float32Array(9))).rejects.toThrow(/needs at least k = 4 training points; got 3/);
      await index.train(randomFloats(40 * 3, 1));
      await expect(index.add(new Float32Array(4))).rejects.toThrow(/xb has length 4, which is not a multiple of dim 3/);
      expect(() => (index.nprobe = 5)).toThrow(/nprobe must be an integer in \[1, 4\] \(nlist\); got 5/);
      await expect(index.search(new Float32Array(3), 1, { nprobe: 0 })).rejects.toThrow(/nprobe must be an integer in \[1, 4\]/);
      expect(() => new IvfFlatIndex(backend!, { dim: 3, nlist: 0 })).toThrow(/nlist must be an integer >= 1; got 0/);
    });
  }

  it('indexFactory builds Flat and IVF<n>,Flat and lists the accepted forms otherwise, naming what is wrong', () => {
    const flat = indexFactory(cpu, 8, 'Flat', 'ip');
    expect(flat).toBeInstanceOf(FlatIndex);
    expect((flat as FlatIndex).metric).toBe('ip');
    const ivfIndex = indexFactory(cpu, 8, 'IVF100,Flat');
    expect(ivfIndex).toBeInstanceOf(IvfFlatIndex);
    expect((ivfIndex as IvfFlatIndex).nlist).toBe(100);
    for (const bad of ['HNSW32', 'IVF,Flat', 'IVF10,PQ8y4', 'Flat,RFlat', 'IVF10,Flat,RFlat', 'SQ8,RFlat,RFlat', 'flat', '']) {
      expect(() => indexFactory(cpu, 8, bad), bad).toThrow(/expected "\[IVF<nlist>,\]STORAGE\[,RFlat \| ,Refine\(SQfp16\)\]" with STORAGE Flat, SQ8, SQ4, SQfp16, PQ<M>, PQ<M>x<nbits> \(nbits 4..8\) or \(without IVF\) LSH, LSHr, LSHt, LSHrt/);
    }
    expect(() => indexFactory(cpu, 8, 'Flat,RFlat')).toThrow(/,RFlat re-ranks codes or transformed rows: it follows a codec or a transform, not plain Flat/);
    expect(() => indexFactory(cpu, 8, 'PQ3')).toThrow(/M \(sub-quantizers\) must be an integer >= 1 that divides d = 8; got 3/);
    expect(() => indexFactory(cpu, 8, 'PQ4x9')).toThrow(/PQ4x9: nbits must be in \[4, 8\]; got 9/);
  });
});

describe('IVF recall@10 against published ground truth never decreases with nprobe', () => {
  const sets = [
    { set: loadRealSet('siftsmall', 'siftsmall'), nlist: 100 },
    { set: loadRealSet('fashion-mnist-small', 'fmnistsmall'), nlist: 32 },
  ];
  for (const { set, nlist } of sets) {
    for (const [name, backend] of backends) {
      it.skipIf(!backend)(`${set.name}, IVF${nlist},Flat on ${name}`, async () => {
        const index = new IvfFlatIndex(backend!, { dim: set.d, nlist, niter: 10, seed: 1 });
        await index.train(set.xb);
        await index.add(set.xb);
        const recalls: number[] = [];
        for (const nprobe of [1, 2, 4, 8, 16, nlist]) {
          const r = await index.search(set.xq, 10, { nprobe });
          recalls.push(tieAwareRecall(r.labels, 10, set.gt, set.gtK, set.nq, (q, id) => l2Exact(set.xq, q, set.xb, id, set.d)));
        }
        console.log(`[ivf] ${set.name} IVF${nlist} ${name}: recall@10 at nprobe 1,2,4,8,16,${nlist} = ${recalls.map((r) => r.toFixed(3)).join(', ')}`);
        for (let i = 1; i < recalls.length; i++) expect(recalls[i]).toBeGreaterThanOrEqual(recalls[i - 1]);
        expect(recalls[recalls.length - 1]).toBe(1);
      });
    }
  }
});

// ivf-scan reads the lists' ranges and the batch's probes from one binding: where they would not
// fit, the batch splits (the same results); where not even one query's probes fit beside the
// ranges, the search is refused up front, naming the sizes.
describe('IVF scan: probes beside the lists\' ranges in one binding', async () => {
  const narrow = [
    ['cpu', cpuBackend({ maxBindingBytes: 4096, ivfStrategy: 'scan' })],
    ['webgpu', await gpuBackend({ maxBindingBytes: 4096, ivfStrategy: 'scan' })],
  ] as const;
  const [d, nlist, nprobe, nq] = [4, 40, 32, 64];
  const x = randomFloats(2000 * d, 31);
  const q = randomFloats(nq * d, 32);
  const centroids = x.slice(0, nlist * d);

  for (const [name, backend] of narrow) {
    it.skipIf(!backend)(`${name}: a narrow binding splits the batch; the results are the wide one's`, async () => {
      // A whole batch's probes (64 x 32 x 4 = 8 KiB) exceed 4 KiB before the ranges (320 bytes) are added.
      const results = [];
      for (const b of [backend!, cpu]) {
        const ivf = new IvfFlatIndex(b, { dim: d, nlist, nprobe });
        await ivf.setCentroids(centroids);
        await ivf.add(x);
        results.push(await ivf.search(q, 5));
        await ivf.dispose();
      }
      expectIdentical(results[0], results[1], 'narrow vs wide');
    });

    it.skipIf(!backend)(`${name}: refused up front where one query's probes do not fit beside the ranges`, async () => {
      const many = 500;
      const ivf = new IvfFlatIndex(backend!, { dim: d, nlist: many, nprobe });
      await ivf.setCentroids(randomFloats(many * d, 33));
      await ivf.add(x);
      await expect(ivf.search(q, 5)).rejects.toThrow(`IVF scan: the ranges of ${many} lists and one query's ${nprobe} probes take ${8 * many + 4 * nprobe} bytes in one binding; this device binds at most 4096`);
      await ivf.dispose();
    });
  }
});
