/**
 * Indexes filled block by block (addFrom, train from a source) equal indexes filled from one array,
 * hold their rows in buffers of exactly the size they need, keep at most one host copy (none on the
 * CPU), and leave nothing changed when a source fails part-way.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { loadIndex } from '../../src/indexes/load-index.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { clusteredFloats, randomFloats } from '../../src/common/random.js';
import type { CodeStore } from '../../src/stores/code-store.js';
import type { DeviceLists } from '../../src/stores/inverted-lists.js';
import { type VectorSource, arraySource } from '../../src/common/vector-source.js';
import { expectIdentical } from '../helpers/compare.js';
import { cpuBackend } from '../helpers/cpu.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

const gpu = await gpuBackend({ maxBindingBytes: 1 << 16 });
afterAll(disposeGpuBackends);
// A lowered binding limit: stores span many chunks, as large data does.
const backends: [string, Backend | null][] = [
  ['cpu', cpuBackend({ maxBindingBytes: 1 << 16 })],
  ['webgpu', gpu],
];
const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-stream-'));

const d = 12;
const n = 3000;
const x = clusteredFloats(n, d, 24, 5);
const xq = clusteredFloats(40, d, 24, 6);

/** `source` failing with `message` when its block number `at` is asked for. */
function failing(source: VectorSource, at: number, message: string): VectorSource {
  return {
    rows: source.rows,
    dim: source.dim,
    async *blocks() {
      let i = 0;
      for await (const b of source.blocks()) {
        if (i++ === at) throw new Error(message);
        yield b;
      }
    },
  };
}

const storeOf = (index: FlatIndex): CodeStore => (index as unknown as { store: CodeStore }).store;
const listsOf = (index: IvfFlatIndex): DeviceLists => (index as unknown as { deviceLists: DeviceLists }).deviceLists;

for (const [name, backend] of backends) {
  describe.skipIf(!backend)(`${name}: filled block by block`, () => {
    it('Flat: addFrom equals add, in buffers of exactly ntotal rows', async () => {
      const whole = new FlatIndex(backend!, { dim: d, metric: 'cosine' });
      await whole.add(x);
      const streamed = new FlatIndex(backend!, { dim: d, metric: 'cosine' });
      const seen: number[] = [];
      await streamed.addFrom(arraySource(x, d, 700), { onProgress: (done) => seen.push(done) });
      expect(seen).toEqual([700, 1400, 2100, 2800, 3000]);
      expectIdentical(await streamed.search(xq, 9), await whole.search(xq, 9), 'flat');
      const chunks = storeOf(streamed).chunks;
      expect(chunks.length).toBeGreaterThan(1);
      expect(chunks.reduce((a, c) => a + c.capacity, 0)).toBe(n);
    });

    it('IVF: train and addFrom from a source equal train and add from the array, lists sized exactly', async () => {
      const opts = { dim: d, nlist: 16, nprobe: 4, niter: 4 };
      const whole = new IvfFlatIndex(backend!, opts);
      await whole.train(x, { maxPoints: 1000 });
      await whole.add(x);
      const streamed = new IvfFlatIndex(backend!, opts);
      await streamed.train(arraySource(x, d, 333), { maxPoints: 1000 });
      expect(Array.from(streamed.centroids!)).toEqual(Array.from(whole.centroids!));
      const phases = new Set<string>();
      await streamed.addFrom(arraySource(x, d, 450), { onProgress: (_, __, phase) => phases.add(phase!) });
      expect([...phases]).toEqual(['assign', 'add']);
      expect(Array.from(streamed.listSizes())).toEqual(Array.from(whole.listSizes()));
      expectIdentical(await streamed.search(xq, 9), await whole.search(xq, 9), 'ivf');
      const lists = listsOf(streamed);
      expect(lists.chunks.reduce((a, c) => a + c.capacity, 0)).toBe(n);
      expect(lists.idsInPositionOrder).toBe(true);
    });

    it('a source that fails part-way, or gives fewer rows than it said, adds nothing', async () => {
      const flat = new FlatIndex(backend!, { dim: d });
      await flat.add(x.subarray(0, 10 * d));
      await expect(flat.addFrom(failing(arraySource(x, d, 500), 3, 'disk gone'))).rejects.toThrow('disk gone');
      expect(flat.ntotal).toBe(10);
      const short = { ...arraySource(x.subarray(0, 100 * d), d, 30), rows: 200 };
      await expect(flat.addFrom(short)).rejects.toThrow('the source said 200 rows and gave 100');
      expect(flat.ntotal).toBe(10);
      const r = await flat.search(x.subarray(0, 10 * d), 1);
      expect(Array.from(r.labels)).toEqual(Array.from({ length: 10 }, (_, i) => i));

      const ivf = new IvfFlatIndex(backend!, { dim: d, nlist: 8, nprobe: 8, niter: 2 });
      await ivf.train(x);
      await ivf.add(x.subarray(0, 10 * d));
      const before = Array.from(ivf.listSizes());
      // Block 3 of the first pass, then block 3 of the second (after the lists were reserved).
      await expect(ivf.addFrom(failing(arraySource(x, d, 500), 3, 'disk gone'))).rejects.toThrow('disk gone');
      let calls = 0;
      const secondPass: VectorSource = { rows: n, dim: d, blocks: () => (calls++ === 0 ? arraySource(x, d, 500).blocks() : failing(arraySource(x, d, 500), 3, 'gone later').blocks()) };
      await expect(ivf.addFrom(secondPass)).rejects.toThrow('gone later');
      expect(ivf.ntotal).toBe(10);
      expect(Array.from(ivf.listSizes())).toEqual(before);
      const s = await ivf.search(x.subarray(0, 10 * d), 1);
      expect(Array.from(s.labels)).toEqual(Array.from({ length: 10 }, (_, i) => i));
      await ivf.add(x.subarray(10 * d, 20 * d));
      expect(ivf.ntotal).toBe(20);
    });

    it('rejects a source of another dim, and bad values in a block with the block row', async () => {
      const flat = new FlatIndex(backend!, { dim: d });
      await expect(flat.addFrom(arraySource(randomFloats(10 * 3, 1), 3))).rejects.toThrow('the source has dim 3; expected dim 12');
      const bad = x.slice(0, 50 * d);
      bad[45 * d + 2] = NaN;
      // Rows are numbered in the whole source, not within the block (row 45 is row 5 of block 2).
      await expect(flat.addFrom(arraySource(bad, d, 20))).rejects.toThrow('xb row 45 has a non-finite value (NaN) at column 2');
      expect(flat.ntotal).toBe(0);
      const torn = { rows: 10, dim: d, blocks: async function* () { yield { data: x.slice(0, 10 * d), rows: 9 }; } };
      await expect(flat.addFrom(torn)).rejects.toThrow('a block of 9 rows holds 120 values (10 rows of dim 12)');
      await expect(flat.addFrom({ rows: 2 ** 31, dim: d, blocks: arraySource(x, d).blocks })).rejects.toThrow(
        '2147483648 more vectors beside 0 would need ids beyond 2147483647',
      );
      const ivf = new IvfFlatIndex(backend!, { dim: d, nlist: 4 });
      await expect(ivf.train(new Float64Array(40 * d) as unknown as Float32Array)).rejects.toThrow(
        'xt must be a Float32Array of n * 12 values or a VectorSource (see openVectors); got Float64Array',
      );
      expect(flat.ntotal).toBe(0);
    });
  });
}

describe('host copies: at most one, none on the CPU', () => {
  it('cpu: the store reads the device memory in place', async () => {
    const backend = backends[0][1]!;
    const flat = new FlatIndex(backend, { dim: d });
    await flat.add(x);
    for (const c of storeOf(flat).chunks) expect(c.host).toBe(backend.device.hostView(c.xb));
    const ivf = new IvfFlatIndex(backend, { dim: d, nlist: 8, niter: 2 });
    await ivf.train(x);
    await ivf.add(x);
    for (const c of listsOf(ivf).chunks) expect(c.host).toBe(backend.device.hostView(c.xb));
  });

  it.skipIf(!gpu)('webgpu: one host copy, or none (hostCopy: false): same results, same saved bytes', async () => {
    for (const kind of ['Flat', 'IVF'] as const) {
      const make = async (hostCopy: boolean) => {
        const index =
          kind === 'Flat'
            ? new FlatIndex(gpu!, { dim: d, metric: 'ip', hostCopy })
            : new IvfFlatIndex(gpu!, { dim: d, metric: 'ip', nlist: 8, nprobe: 3, niter: 2, hostCopy });
        if (index instanceof IvfFlatIndex) await index.train(x);
        await index.addFrom(arraySource(x, d, 999));
        return index;
      };
      const copy = await make(true);
      const none = await make(false);
      const chunksOf = (i: FlatIndex | IvfFlatIndex) => (i instanceof FlatIndex ? storeOf(i).chunks : listsOf(i).chunks);
      expect(chunksOf(copy).every((c) => c.host instanceof Float32Array)).toBe(true);
      expect(chunksOf(none).every((c) => c.host === null)).toBe(true);
      expectIdentical(await none.search(xq, 7), await copy.search(xq, 7), kind);
      await copy.save(join(dir, `copy-${kind}.idx`));
      await none.save(join(dir, `none-${kind}.idx`));
      expect(readFileSync(join(dir, `none-${kind}.idx`)).equals(readFileSync(join(dir, `copy-${kind}.idx`)))).toBe(true);
      const back = await loadIndex(gpu!, join(dir, `none-${kind}.idx`), { hostCopy: false });
      expectIdentical(await back.search(xq, 7), await copy.search(xq, 7), `${kind} loaded`);
    }
    // By default a CPU-emulated adapter keeps none (its device memory is host memory), a real GPU one.
    const fallback = gpu!.device.ctx.adapterInfo.isFallbackAdapter;
    expect(gpu!.device.tuning.hostCopy).toBe(!fallback);
    const dflt = new FlatIndex(gpu!, { dim: d, metric: 'ip' });
    await dflt.add(x);
    expect(storeOf(dflt).chunks.every((c) => (c.host === null) === fallback)).toBe(true);
    // k above ntotal: rows padded with -1, which the read-back must skip.
    const small = new FlatIndex(gpu!, { dim: d, hostCopy: false });
    await small.add(x.subarray(0, 5 * d));
    const r = await small.search(xq.subarray(0, 2 * d), 8);
    expect(Array.from(r.labels.subarray(5, 8))).toEqual([-1, -1, -1]);
    expect(new Set(r.labels.subarray(0, 5))).toEqual(new Set([0, 1, 2, 3, 4]));
  });
});

describe('candidates read back from the device (no host copy)', () => {
  // 16 KiB bindings: the 3,000 rows of 12 floats span 9 chunks, and a search's 2,560 candidates
  // (40 queries x 64) take several gathers of 341 rows.
  it.skipIf(!gpu)('float rows and codes, many chunks, gathers split by the binding: the CPU backend\'s results', async () => {
    const tiny = await gpuBackend({ maxBindingBytes: 1 << 14 });
    const cpu = cpuBackend({ maxBindingBytes: 1 << 14 });
    for (const codec of [undefined, 'SQ8', 'SQ4'] as const) {
      const results = [];
      for (const backend of [cpu, tiny!]) {
        const index = new FlatIndex(backend, { dim: d, metric: 'l2', codec, hostCopy: false });
        await index.train(x);
        await index.add(x);
        results.push(await index.search(xq, 25));
        await index.dispose();
      }
      expectIdentical(results[1], results[0], codec ?? 'float');
    }
  });
});

describe('save and load stream through blocks', () => {
  it('cpu: an index larger than one read block round-trips; a corrupt byte in the last block is caught by the checksum', async () => {
    // 20 MiB of vectors: more than one 16 MiB block to write and to read.
    const backend = cpuBackend();
    const dd = 128;
    const rows = 41_000;
    const big = randomFloats(rows * dd, 8);
    const flat = new FlatIndex(backend, { dim: dd });
    await flat.addFrom(arraySource(big, dd, 5000));
    const path = join(dir, 'big.idx');
    const progress: number[] = [];
    await flat.save(path, { onProgress: (done) => progress.push(done) });
    expect(progress.length).toBeGreaterThan(2);
    const back = await loadIndex(backend, path);
    expect(back.ntotal).toBe(rows);
    const q = big.subarray(40_990 * dd);
    const r = await back.search(q, 1);
    expect(Array.from(r.labels)).toEqual(Array.from({ length: 10 }, (_, i) => 40_990 + i));
    // The lowest byte of the last vector's last float: still finite, so only the checksum can tell.
    const bytes = readFileSync(path);
    bytes[bytes.length - 32 - 4] ^= 1;
    const bad = join(dir, 'big-bad.idx');
    writeFileSync(bad, bytes);
    await expect(loadIndex(backend, bad)).rejects.toThrow('checksum mismatch: the file is corrupt');
  });
});
