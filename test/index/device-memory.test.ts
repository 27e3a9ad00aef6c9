/**
 * Indexes own their device memory: IVF lists on the device upload only what an add brings, and
 * reset / dispose hand every buffer back. On the GPU the buffer pool serves a repeated small search
 * without creating a buffer. A CAGRA build or extend that fails part-way hands back what it took.
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import type { DeviceBuffer } from '../../src/device.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { KMeans } from '../../src/codecs/kmeans.js';
import { GraphIndex } from '../../src/indexes/graph/graph-index.js';
import { clusteredFloats } from '../../src/common/random.js';
import { cpuBackend } from '../helpers/cpu.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);
const backends: [string, Backend | null][] = [['cpu', cpuBackend()], ['webgpu', gpu]];

const d = 32;
const n = 20_000;
const x = clusteredFloats(n, d, 64, 3);

/** Counts bytes uploaded, and buffers handed out and handed back, while `run` runs. */
async function watch(backend: Backend, run: () => Promise<void>): Promise<{ uploaded: number; taken: number; released: number }> {
  const { device } = backend;
  const up = vi.spyOn(device, 'upload');
  const buf = vi.spyOn(device, 'buffer');
  const rel = vi.spyOn(device, 'release');
  try {
    await run();
    const held = new Set(buf.mock.results.map((r) => r.value as DeviceBuffer));
    return {
      uploaded: up.mock.calls.reduce((a, c) => a + c[2].byteLength, 0),
      taken: held.size,
      released: rel.mock.calls.filter((c) => held.has(c[0])).length,
    };
  } finally {
    up.mockRestore();
    buf.mockRestore();
    rel.mockRestore();
  }
}

describe('IVF lists on the device', () => {
  for (const [name, backend] of backends) {
    it.skipIf(!backend)(`${name}: adding 10 vectors to ${n} uploads those 10 rows, not the lists`, async () => {
      const index = new IvfFlatIndex(backend!, { dim: d, nlist: 64, nprobe: 64 });
      await index.train(x.subarray(0, 4096 * d));
      await index.add(x);
      const extra = clusteredFloats(10, d, 64, 4);
      const w = await watch(backend!, () => index.add(extra));
      // 10 rows (queries of the coarse assignment and the rows themselves, 128 bytes each), their ids
      // and the list tables of the chunks they touched (8 bytes a list): never the 2.5 MB of lists.
      expect(w.uploaded).toBeLessThan(10 * d * 4 * 2 + 10 * 4 + 4 * 8 * 64);
      expect(w.uploaded).toBeGreaterThanOrEqual(10 * d * 4);
      // And the index still equals Flat at nprobe = nlist.
      const flat = new FlatIndex(backend!, { dim: d });
      await flat.add(x);
      await flat.add(extra);
      const q = clusteredFloats(20, d, 64, 5);
      const a = await index.search(q, 5);
      const b = await flat.search(q, 5);
      expect(Array.from(a.labels)).toEqual(Array.from(b.labels));
      await index.dispose();
      await flat.dispose();
    });

    it.skipIf(!backend)(`${name}: an IVF add that fails while writing the list tables leaves the lists as they were`, async () => {
      const index = new IvfFlatIndex(backend!, { dim: d, nlist: 16, nprobe: 16 });
      await index.train(x.subarray(0, 2000 * d));
      await index.add(x.subarray(0, 300 * d));
      const { device } = backend!;
      const upload = device.upload.bind(device);
      const spy = vi.spyOn(device, 'upload').mockImplementation((buffer, offset, data) => {
        if (buffer.label === 'ivf_ranges') throw new Error('device lost while writing a table');
        upload(buffer, offset, data);
      });
      await expect(index.add(x.subarray(300 * d, 2000 * d))).rejects.toThrow('device lost while writing a table');
      spy.mockRestore();
      expect(index.ntotal).toBe(300);
      await index.add(x.subarray(300 * d, 2000 * d));
      const flat = new FlatIndex(backend!, { dim: d });
      await flat.add(x.subarray(0, 2000 * d));
      const q = x.subarray(0, 40 * d);
      expect(Array.from((await index.search(q, 5)).labels)).toEqual(Array.from((await flat.search(q, 5)).labels));
      await index.dispose();
      await flat.dispose();
    });

    it.skipIf(!backend)(`${name}: reset and dispose give back every buffer the lists took`, async () => {
      const index = new IvfFlatIndex(backend!, { dim: d, nlist: 16 });
      await index.train(x.subarray(0, 2000 * d));
      let w = await watch(backend!, async () => {
        await index.add(x.subarray(0, 5000 * d));
        await index.reset();
      });
      expect(w.taken).toBeGreaterThan(0);
      expect(w.released).toBe(w.taken);
      w = await watch(backend!, async () => {
        await index.add(x.subarray(0, 5000 * d));
        await index.search(x.subarray(0, 3 * d), 4);
        await index.dispose();
      });
      expect(w.released).toBe(w.taken);
    });
  }
});

describe('a CAGRA build that fails on the device', async () => {
  // Rows in two chunks, so the walk reads them as halves, from two bindings (1,875 half rows a
  // binding): every buffer the build makes is in play.
  const limits = { maxBindingBytes: 150_000 };
  const graphBackends: [string, Backend | null][] = [['cpu', cpuBackend(limits)], ['webgpu', gpu ? await gpuBackend(limits) : null]];
  const dg = 40;
  const xg = clusteredFloats(3000, dg, 30, 7);
  const q = xg.subarray(0, 20 * dg);
  /** Runs `search` with the uploads to a buffer labelled `label` failing after the first `after`: it must reject with that failure; what it took and gave back. */
  async function searchFailingAt(backend: Backend, label: string, search: () => Promise<unknown>, after = 0): Promise<{ taken: number; released: number }> {
    const { device } = backend;
    const upload = device.upload.bind(device);
    let seen = 0;
    const spy = vi.spyOn(device, 'upload').mockImplementation((buffer, offset, data) => {
      if (buffer.label === label && ++seen > after) throw new Error(`device lost while writing ${label}`);
      upload(buffer, offset, data);
    });
    try {
      return await watch(backend, () => expect(search()).rejects.toThrow(`device lost while writing ${label}`));
    } finally {
      spy.mockRestore();
    }
  }
  for (const [name, backend] of graphBackends) {
    for (const label of ['graph_half_norms', 'graph_entries', 'graph']) {
      it.skipIf(!backend)(`${name}: a failed upload of ${label} hands back every buffer the build took, and the next search builds it whole`, async () => {
        const index = new GraphIndex(backend!, { dim: dg, degree: 8 });
        await index.add(xg);
        const w = await searchFailingAt(backend!, label, () => index.search(q, 5));
        expect(w.taken).toBeGreaterThan(0);
        expect(w.released).toBe(w.taken);
        const fresh = new GraphIndex(backend!, { dim: dg, degree: 8 });
        await fresh.add(xg);
        expect(Array.from((await index.search(q, 5)).labels)).toEqual(Array.from((await fresh.search(q, 5)).labels));
        await index.dispose();
        await fresh.dispose();
      });
    }
  }

  it('cpu: a connect that fails (its rewrite of the graph) hands back the installed graph', async () => {
    // Tight clusters: the pruned graph splits, so connect links the parts in and rewrites the
    // graph buffer, the second upload of `graph` (the first is installGraph's).
    const dc = 16;
    const xc = clusteredFloats(6000, dc, 300, 3, 0.01).map((v) => Math.round(100 * v));
    const backend = cpuBackend();
    const index = new GraphIndex(backend, { dim: dc, degree: 16 });
    await index.add(xc);
    const w = await searchFailingAt(backend, 'graph', () => index.search(xc.subarray(0, 5 * dc), 5), 1);
    expect(w.taken).toBeGreaterThan(0);
    expect(w.released).toBe(w.taken);
    expect(index.graphRows).toBeNull();
    // The next search builds it whole: the graph a fresh index builds.
    await index.search(xc.subarray(0, 5 * dc), 1);
    const fresh = new GraphIndex(backend, { dim: dc, degree: 16 });
    await fresh.add(xc);
    await fresh.search(xc.subarray(0, 5 * dc), 1);
    expect(Array.from(index.graphRows!)).toEqual(Array.from(fresh.graphRows!));
    expect(index.unreachableRows).toBe(0);
    await index.dispose();
    await fresh.dispose();
  });

  it.skipIf(!graphBackends[0][1])('cpu: a failed extend hands back every buffer it took, and the next search extends the same graph again', async () => {
    const backend = graphBackends[0][1]!;
    const grown = async (fail: boolean): Promise<GraphIndex> => {
      const index = new GraphIndex(backend, { dim: dg, degree: 8 });
      await index.add(xg.subarray(0, 2500 * dg));
      await index.search(q, 5);
      await index.add(xg.subarray(2500 * dg));
      if (fail) {
        const w = await searchFailingAt(backend, 'graph_entries', () => index.search(q, 5));
        expect(w.taken).toBeGreaterThan(0);
        expect(w.released).toBe(w.taken);
        expect(index.graphRows).toBeNull();
      }
      return index;
    };
    const index = await grown(true);
    const r = await index.search(q, 1);
    expect(Array.from(r.labels)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    // An extension of the first build's graph, not a new build: the graph an index grows without the failure.
    expect(index.extendedRows).toBe(xg.length / dg - 2500);
    const clean = await grown(false);
    await clean.search(q, 1);
    expect(Array.from(index.graphRows!)).toEqual(Array.from(clean.graphRows!));
    await index.dispose();
    await clean.dispose();
  });

  it.skipIf(!graphBackends[0][1])('cpu: an extend that fails before it takes the graph down keeps that graph installed, counted once', async () => {
    const backend = graphBackends[0][1]!;
    const index = new GraphIndex(backend, { dim: dg, degree: 8 });
    await index.add(xg.subarray(0, 2500 * dg));
    await index.search(q, 5);
    await index.add(xg.subarray(2500 * dg));
    const before = index.memoryBytes;
    const rows = index.graphRows;
    // The added rows are read (as the walk's queries) before the old graph is released.
    const store = (index as unknown as { store: { rowsAt: (ids: ArrayLike<number>) => Promise<unknown> } }).store;
    const spy = vi.spyOn(store, 'rowsAt').mockRejectedValueOnce(new Error('device lost while reading rows'));
    await expect(index.search(q, 5)).rejects.toThrow('device lost while reading rows');
    spy.mockRestore();
    expect(index.graphRows).toBe(rows);
    expect(index.memoryBytes).toEqual(before);
    await index.search(q, 1);
    expect(index.extendedRows).toBe(xg.length / dg - 2500);
    await index.dispose();
  });

  it.skipIf(!graphBackends[0][1])('cpu: rows replaced after a failed extend are built anew, not extended from the stale graph', async () => {
    const backend = graphBackends[0][1]!;
    const index = new GraphIndex(backend, { dim: dg, degree: 8 });
    await index.add(xg.subarray(0, 2500 * dg));
    await index.search(q, 5);
    await index.add(xg.subarray(2500 * dg));
    await searchFailingAt(backend, 'graph_entries', () => index.search(q, 5));
    await index.reset();
    await index.add(xg);
    await index.search(q, 1);
    expect(index.extendedRows).toBe(0);
    const fresh = new GraphIndex(backend, { dim: dg, degree: 8 });
    await fresh.add(xg);
    await fresh.search(q, 1);
    expect(Array.from(index.graphRows!)).toEqual(Array.from(fresh.graphRows!));
    await index.dispose();
    await fresh.dispose();
  });
});

describe.skipIf(!gpu)('buffer pool (webgpu)', () => {
  it('a repeated small search creates no new buffers and no bind groups', async () => {
    const device = gpu!.device;
    const flat = new FlatIndex(gpu!, { dim: d });
    await flat.add(x.subarray(0, 3000 * d));
    const ivf = new IvfFlatIndex(gpu!, { dim: d, nlist: 16, nprobe: 4 });
    await ivf.train(x.subarray(0, 3000 * d));
    await ivf.add(x.subarray(0, 3000 * d));
    const q = x.subarray(0, 10 * d);
    await flat.search(q, 10);
    await ivf.search(q, 10);
    const warm = device.poolStats();
    for (let i = 0; i < 5; i++) {
      await flat.search(q, 10);
      await ivf.search(q, 10);
    }
    const after = device.poolStats();
    expect(after.created).toBe(warm.created);
    expect(after.bindGroups).toBe(warm.bindGroups);
    expect(after.reused).toBeGreaterThan(warm.reused);
    await flat.dispose();
    await ivf.dispose();
  });

  it('k-means iterations reuse their scratch too', async () => {
    const device = gpu!.device;
    await new KMeans(gpu!, { dim: d }).train(x.subarray(0, 4000 * d), { k: 16, niter: 1 });
    const warm = device.poolStats();
    await new KMeans(gpu!, { dim: d }).train(x.subarray(0, 4000 * d), { k: 16, niter: 5 });
    expect(device.poolStats().created).toBe(warm.created);
  });
});

describe('training on a sample, as Faiss', () => {
  for (const [name, backend] of backends) {
    it.skipIf(!backend)(`${name}: at most maxPointsPerCentroid per centroid, and at most maxPoints`, async () => {
      const km = new KMeans(backend!, { dim: d });
      expect((await km.train(x, { k: 8, niter: 1 })).n).toBe(8 * 256);
      expect((await km.train(x, { k: 8, niter: 1, maxPointsPerCentroid: 1000 })).n).toBe(8000);
      expect((await km.train(x, { k: 8, niter: 1, maxPoints: 500 })).n).toBe(500);
      expect((await km.train(x.subarray(0, 100 * d), { k: 8, niter: 1 })).n).toBe(100);
      await expect(km.train(x, { k: 8, maxPoints: 7 })).rejects.toThrow('maxPoints must be an integer >= k = 8; got 7');
      await expect(km.train(x, { k: 8, maxPointsPerCentroid: 0 })).rejects.toThrow('maxPointsPerCentroid must be an integer >= 1; got 0');
    });
  }
});

describe.skipIf(!gpu)('the GPU device after failures and with no idle pool', async () => {
  const noIdle = await gpuBackend({ poolIdleBytes: 0, chunkRows: 300 });
  const narrow = await gpuBackend({ maxBindingBytes: 4096 });

  it('released buffers that recorded work still uses are destroyed only after it is submitted', async () => {
    // Store and list chunks grow (copy old -> new, release old) and k-means hands its scratch back
    // while its calls wait: with no idle pool every release destroys.
    const ivf = new IvfFlatIndex(noIdle!, { dim: d, nlist: 8, nprobe: 8 });
    await ivf.train(x.subarray(0, 2000 * d));
    const flat = new FlatIndex(noIdle!, { dim: d });
    for (const [a, b] of [[0, 10], [10, 100], [100, 700], [700, 2000]]) {
      await ivf.add(x.subarray(a * d, b * d));
      await flat.add(x.subarray(a * d, b * d));
    }
    const q = x.subarray(0, 30 * d);
    const r1 = await ivf.search(q, 5);
    const r2 = await flat.search(q, 5);
    expect(Array.from(r1.labels)).toEqual(Array.from(r2.labels));
    // Nothing leaks: searches (their staging buffers too) and disposal leave no buffer behind.
    const before = noIdle!.device.poolStats().liveBytes;
    for (let i = 0; i < 5; i++) await flat.search(q, 5);
    expect(noIdle!.device.poolStats().liveBytes).toBe(before);
    await ivf.dispose();
    await flat.dispose();
    const { liveBytes, idleBytes } = noIdle!.device.poolStats();
    // Only the recorder's uniform buffer stays.
    expect(liveBytes - idleBytes).toBeLessThanOrEqual(64 << 10);
  });

  it('a search refused by a size check records nothing that a later operation would run', async () => {
    // 64 centroids of 128 bytes exceed the binding for k-means: trained elsewhere.
    const trained = new IvfFlatIndex(gpu!, { dim: d, nlist: 64 });
    await trained.train(x.subarray(0, 3000 * d));
    const ivf = new IvfFlatIndex(narrow!, { dim: d, nlist: 64, nprobe: 64 });
    await ivf.setCentroids(trained.centroids!);
    await trained.dispose();
    await ivf.add(x.subarray(0, 3000 * d));
    await expect(ivf.search(x.subarray(0, 2 * d), 10)).rejects.toThrow(/probed lists of k = 32 takes 8192 bytes; this device binds at most 4096/);
    expect((narrow!.device as unknown as { recorder: { pending: boolean } }).recorder.pending).toBe(false);
    await ivf.dispose();
    const flat = new FlatIndex(narrow!, { dim: d });
    await flat.add(x.subarray(0, 500 * d));
    expect(Array.from((await flat.search(x.subarray(0, 3 * d), 1)).labels)).toEqual([0, 1, 2]);
    await flat.dispose();
  });

  it('a failed read reports its error once; the next operation is not blamed for it', async () => {
    const device = gpu!.device;
    const a = device.buffer('doomed', 64);
    const b = device.buffer('out', 64);
    (a as unknown as { gpu: GPUBuffer }).gpu.destroy();
    device.copy(a, 0, b, 0, 64);
    await expect(device.read([{ buffer: b, offset: 0, bytes: 64 }])).rejects.toThrow(/destroyed/);
    device.upload(b, 0, new Uint32Array(16).fill(7));
    await device.flush();
    const [back] = await device.read([{ buffer: b, offset: 0, bytes: 64 }]);
    expect(Array.from(new Uint32Array(back))).toEqual(new Array(16).fill(7));
    device.release(b);
  });
});
