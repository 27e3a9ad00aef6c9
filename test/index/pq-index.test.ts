/**
 * Product-quantised Flat indexes (PQ<M>, PQ<M>x<nbits>: Faiss's IndexPQ), IVF lists of codes of
 * residuals (IVF<n>,PQ<M> and IVF<n>,SQ8: IndexIVFPQ, IndexIVFScalarQuantizer with by_residual),
 * and the exact re-rank `,RFlat`, on both backends. A search ranks by the distance to each
 * vector's reconstruction, so with every list probed it must equal a float64 brute force over the
 * reconstructions, decoded here from the saved file (codebook and codes, by the file format and a
 * plain loop: not by the library's decoder); GPU equals CPU on the same codes; files are codes +
 * ids + tables (+ float32 rows with ,RFlat); removal, compaction and range search work on codes.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import { ScalarQuantizer } from '../../src/codecs/scalar-quantizer.js';
import { describeIndexType, indexFactory, parseIndexType } from '../../src/indexes/factory.js';
import { loadIndex } from '../../src/indexes/load-index.js';
import { clusteredFloats, randomFloats } from '../../src/common/random.js';
import { type Metric, normalizeRows } from '../../src/types.js';
import type { VectorIndex } from '../../src/indexes/vector-index.js';
import { cpuBackend } from '../helpers/cpu.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { bruteForce, expectEqual } from '../helpers/reconstructed.js';

const gpu = await gpuBackend({ maxBindingBytes: 64 * 1024 });
const cpu = cpuBackend({ maxBindingBytes: 64 * 1024 });
afterAll(disposeGpuBackends);
const backends = [['cpu', cpu], ['webgpu', gpu]] as const;
const dir = mkdtempSync(join(tmpdir(), 'wgknn-pq-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const d = 12;
const n = 1000;
const nq = 7;
const nlist = 6;
const xb = clusteredFloats(n, d, 12, 51);
const xq = randomFloats(nq * d, 52);
const HEADER = 40;

/** The saved index at `path`, decoded by its format (src/io/index-file.ts): each vector's reconstruction by id, and the file's size. */
function reconstructFile(path: string, opts: { ivf: boolean; codec: { pq: { M: number; nbits: number } } | { sq: 'SQ8' } }): Float32Array {
  const buf = readFileSync(path);
  const f32 = (at: number, len: number): Float32Array => new Float32Array(buf.buffer.slice(buf.byteOffset + at, buf.byteOffset + at + 4 * len));
  const u32 = (at: number, len: number): Uint32Array => new Uint32Array(buf.buffer.slice(buf.byteOffset + at, buf.byteOffset + at + 4 * len));
  let at = HEADER;
  const centroids = opts.ivf ? f32(at, nlist * d) : null;
  if (opts.ivf) at += 4 * nlist * d;
  const pq = 'pq' in opts.codec ? opts.codec.pq : null;
  const tableFloats = pq ? (1 << pq.nbits) * d : 2 * d;
  const tables = f32(at, tableFloats);
  at += 4 * tableFloats;
  let offsets: Uint32Array | null = null;
  let slots: Uint32Array | null = null;
  if (opts.ivf) {
    offsets = u32(at, nlist + 1);
    at += 4 * (nlist + 1);
    slots = u32(at, n);
    at += 4 * n;
  }
  const rowWords = pq ? Math.ceil((pq.M * pq.nbits) / 32) : Math.ceil(d / 4);
  const words = u32(at, n * rowWords);
  const out = new Float32Array(n * d);
  const sq = pq ? null : ScalarQuantizer.fromTables(d, 'SQ8', tables);
  let list = 0;
  for (let p = 0; p < n; p++) {
    const slot = slots ? slots[p] : p;
    const row = new Float32Array(d);
    if (pq) {
      const dsub = d / pq.M;
      const ksub = 1 << pq.nbits;
      for (let m = 0; m < pq.M; m++) {
        let code = 0;
        for (let b = 0; b < pq.nbits; b++) {
          const bit = m * pq.nbits + b;
          code |= ((words[p * rowWords + (bit >>> 5)] >>> (bit & 31)) & 1) << b;
        }
        for (let t = 0; t < dsub; t++) row[m * dsub + t] = tables[(m * ksub + code) * dsub + t];
      }
    } else {
      const bytes = new Uint8Array(words.buffer, p * rowWords * 4, d);
      row.set(sq!.decode(bytes, 1));
    }
    if (centroids) {
      while (offsets![list + 1] <= p) list++;
      for (let j = 0; j < d; j++) row[j] = Math.fround(row[j] + centroids[list * d + j]);
    }
    out.set(row, slot * d);
  }
  return out;
}

async function built(backend: Backend, description: string, metric: Metric, x = xb): Promise<VectorIndex> {
  const index = indexFactory(backend, d, description, metric);
  expect(index.isTrained).toBe(false);
  await index.train(x);
  expect(index.isTrained).toBe(true);
  await index.add(x);
  return index;
}

const CASES = [
  { description: 'PQ4', ivf: false, codec: { pq: { M: 4, nbits: 8 } } },
  { description: 'PQ6x5', ivf: false, codec: { pq: { M: 6, nbits: 5 } } },
  { description: `IVF${nlist},PQ3x4`, ivf: true, codec: { pq: { M: 3, nbits: 4 } } },
  { description: `IVF${nlist},SQ8`, ivf: true, codec: { sq: 'SQ8' as const } },
];

describe('product-quantised and IVF-coded indexes', () => {
  for (const [name, backend] of backends) {
    for (const c of CASES) {
      for (const metric of ['l2', 'ip', 'cosine'] as Metric[]) {
        it.skipIf(!backend)(`${name} ${c.description} ${metric}: every list probed, search equals brute force over the reconstructions; saved codes load back`, async () => {
          const index = await built(backend!, c.description, metric);
          const path = join(dir, `${name}-${c.description}-${metric}.idx`);
          await index.save(path);
          const rows = reconstructFile(path, c);
          const k = 10;
          const all = { nprobe: nlist };
          expectEqual(await index.search(xq, k, all), bruteForce(metric, xq, nq, d, rows, () => true, k), k, 'search');
          expectEqual(await index.search(xq, k, { ...all, filter: (id) => id % 3 === 0 }), bruteForce(metric, xq, nq, d, rows, (id) => id % 3 === 0, k), k, 'filtered');
          const loaded = await loadIndex(backend!, path);
          expectEqual(await loaded.search(xq, k, all), bruteForce(metric, xq, nq, d, rows, () => true, k), k, 'loaded');
          await loaded.dispose();
          await index.dispose();
        });
      }
    }

    it.skipIf(!backend)(`${name}: removal (tombstones, compaction of the codes as stored) and range search, PQ and IVF-PQ`, async () => {
      for (const c of [CASES[0], CASES[2]]) {
        const index = await built(backend!, c.description, 'l2');
        const path = join(dir, `${name}-rm-${c.description}.idx`);
        await index.save(path);
        const rows = reconstructFile(path, c);
        const gone = BigInt64Array.from({ length: n / 10 }, (_, i) => BigInt(i * 10));
        expect(await index.removeIds(gone)).toBe(n / 10);
        const live = (id: number): boolean => id % 10 !== 0;
        const all = { nprobe: nlist };
        expectEqual(await index.search(xq, 8, all), bruteForce('l2', xq, nq, d, rows, live, 8), 8, `${c.description} tombstones`);
        await (index as unknown as { compact(): Promise<void> }).compact();
        expectEqual(await index.search(xq, 8, all), bruteForce('l2', xq, nq, d, rows, live, 8), 8, `${c.description} compacted`);
        const near = bruteForce('l2', xq, nq, d, rows, live, 60)[0].distances;
        const radius = (near[29] + near.find((v) => v > near[29])!) / 2;
        const got = await index.rangeSearch(xq, radius, all);
        const want = bruteForce('l2', xq, nq, d, rows, live, n);
        for (let r = 0; r < nq; r++) {
          const inside = want[r].labels.filter((_, j) => want[r].distances[j] <= radius).sort((a, b) => a - b);
          expect(Array.from(got.labels.subarray(got.lims[r], got.lims[r + 1])).sort((a, b) => a - b), `${c.description} range row ${r}`).toEqual(inside);
        }
        await index.dispose();
      }
    });

    it.skipIf(!backend)(`${name}: ,RFlat re-ranks exactly: with every list probed and kFactor covering the index, the exact float32 answer`, async () => {
      for (const metric of ['l2', 'cosine'] as Metric[]) {
        const index = await built(backend!, `IVF${nlist},PQ3x4,RFlat`, metric);
        const x = metric === 'cosine' ? normalizeRows(xb, d) : xb;
        const k = 5;
        // k x kFactor = 1000 candidates: every vector is re-scored against its float32 row.
        const exact = bruteForce(metric, xq, nq, d, x, () => true, k);
        const got = await index.search(xq, k, { nprobe: nlist, kFactor: n / k });
        expect(Array.from(got.labels), metric).toEqual(exact.flatMap((e) => e.labels));
        // Without the re-rank's room the codes decide: fewer of the exact neighbours.
        const path = join(dir, `${name}-rflat-${metric}.idx`);
        await index.save(path);
        const expected = HEADER + 4 * nlist * d + 4 * (16 * d) + 4 * (nlist + 1) + 4 * n + 4 * n * 1 + 4 * n * d + 8 * (n + 1) + 32;
        expect(statSync(path).size, 'header + centroids + codebook + offsets + list ids + codes + float32 rows + ids + checksum').toBe(expected);
        const loaded = await loadIndex(backend!, path);
        expect(Array.from((await loaded.search(xq, k, { nprobe: nlist, kFactor: n / k })).labels), `${metric} loaded`).toEqual(exact.flatMap((e) => e.labels));
        await loaded.dispose();
        await index.dispose();
      }
    });
  }

  for (const [name, backend] of backends) {
    it.skipIf(!backend)(`${name}: ,Refine(SQfp16) re-ranks against SQfp16 codes: with kFactor covering the index, the answer over their reconstructions`, async () => {
      const fp16 = new ScalarQuantizer(d, 'SQfp16');
      for (const metric of ['l2', 'cosine'] as Metric[]) {
        const index = await built(backend!, `IVF${nlist},PQ3x4,Refine(SQfp16)`, metric);
        const x = metric === 'cosine' ? normalizeRows(xb, d) : xb;
        const rows = fp16.decode(fp16.encode(x, n), n);
        const k = 5;
        const params = { nprobe: nlist, kFactor: n / k };
        expectEqual(await index.search(xq, k, params), bruteForce(metric, xq, nq, d, rows, () => true, k), k, `${metric}`);
        const path = join(dir, `${name}-refine16-${metric}.idx`);
        await index.save(path);
        const expected = HEADER + 4 * nlist * d + 4 * (16 * d) + 4 * (nlist + 1) + 4 * n + 4 * n * 1 + 4 * n * 6 + 8 * (n + 1) + 32;
        expect(statSync(path).size, 'header + centroids + codebook + offsets + list ids + codes + SQfp16 rows (6 words) + ids + checksum').toBe(expected);
        const loaded = await loadIndex(backend!, path);
        expectEqual(await loaded.search(xq, k, params), bruteForce(metric, xq, nq, d, rows, () => true, k), k, `${metric} loaded`);
        await loaded.dispose();
        await index.dispose();
      }
    });
  }

  it.skipIf(!gpu)('webgpu equals cpu on the same codes (an index trained on the CPU, loaded on both), label for label', async () => {
    for (const c of CASES) {
      const index = await built(cpu, c.description, 'l2');
      const path = join(dir, `same-${c.description}.idx`);
      await index.save(path);
      const a = await loadIndex(cpu, path);
      const b = await loadIndex(gpu!, path);
      for (const nprobe of c.ivf ? [1, 3] : [undefined]) {
        const ra = await a.search(xq, 20, { nprobe });
        const rb = await b.search(xq, 20, { nprobe });
        expect(Array.from(rb.labels), `${c.description} nprobe ${nprobe}`).toEqual(Array.from(ra.labels));
        expect(Array.from(rb.distances), `${c.description} nprobe ${nprobe}`).toEqual(Array.from(ra.distances));
      }
      await Promise.all([index.dispose(), a.dispose(), b.dispose()]);
    }
  });

  it('saved sizes are header + tables + codes + ids (+ centroids, offsets and list ids for IVF)', async () => {
    for (const c of CASES.slice(0, 3)) {
      const index = await built(cpu, c.description, 'l2');
      const path = join(dir, `size-${c.description}.idx`);
      await index.save(path);
      const { M, nbits } = (c.codec as { pq: { M: number; nbits: number } }).pq;
      const rowWords = Math.ceil((M * nbits) / 32);
      const lists = c.ivf ? 4 * nlist * d + 4 * (nlist + 1) + 4 * n : 0;
      expect(statSync(path).size, c.description).toBe(HEADER + lists + 4 * (1 << nbits) * d + 4 * n * rowWords + 8 * (n + 1) + 32);
      await index.dispose();
    }
  });

  it('parses the factory strings as Faiss spells them, and spells them back', () => {
    for (const text of ['Flat', 'IVF7,Flat', 'SQ8', 'SQfp16', 'PQ4', 'PQ6x5', 'IVF64,PQ16,RFlat', 'IVF64,SQ4,Refine(SQfp16)', 'PQ12x4,RFlat']) {
      expect(describeIndexType(parseIndexType(text)), text).toBe(text);
    }
    expect(parseIndexType('PQ16x8')).toEqual({ type: 'Flat', nlist: 0, codec: { type: 'PQ', M: 16, nbits: 8 }, refine: null });
    expect(describeIndexType(parseIndexType('PQ16x8'))).toBe('PQ16');
    expect(parseIndexType('IVF64,PQ8x4,Refine(SQfp16)')).toEqual({ type: 'IVF', nlist: 64, codec: { type: 'PQ', M: 8, nbits: 4 }, refine: 'SQfp16' });
    for (const bad of ['Flat,Refine(SQfp16)', 'PQ8,Refine(SQ8)', 'PQ8,RFlat,IVF4', 'RFlat']) expect(() => parseIndexType(bad), bad).toThrow(/unknown index description/);
  });

  it('refuses adds before training, a PQ whose M does not divide d, too few training vectors, a bad kFactor, naming them', async () => {
    const index = indexFactory(cpu, d, 'PQ4');
    await expect(index.add(xb)).rejects.toThrow(/the PQ4 index is not trained; call train\(xt\) first/);
    expect(() => indexFactory(cpu, d, 'PQ5')).toThrow(/M \(sub-quantizers\) must be an integer >= 1 that divides d = 12; got 5/);
    await expect(index.train(xb.subarray(0, 100 * d))).rejects.toThrow(/PQ4x8 training needs at least 2\^nbits = 256 vectors; got 100/);
    const ivf = indexFactory(cpu, d, `IVF${nlist},PQ4`);
    await expect(ivf.add(xb)).rejects.toThrow(/the index is not trained; call train\(xt\) first/);
    const ok = await built(cpu, 'PQ4x4', 'l2');
    for (const bad of [0.5, Number.NaN, Infinity, '2']) {
      await expect(ok.search(xq, 3, { kFactor: bad as number })).rejects.toThrow(new RegExp(`kFactor must be a finite number >= 1; got ${String(bad)}`));
    }
    await ok.dispose();
  });
});
