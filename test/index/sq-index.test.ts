/**
 * Scalar-quantised Flat indexes ("SQ8", "SQ4", "SQfp16"), on both backends: a search ranks by the
 * distance to each vector's reconstruction (Faiss's IndexScalarQuantizer), so it must equal a
 * float64 brute force over the decoded vectors; GPU equals CPU; save writes codes (the file's
 * size is header + tables + codes + ids + checksum) and loads back to the same answers; removal,
 * compaction, filters and range search work on codes as on floats.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import { SQ_KINDS, ScalarQuantizer, type SqKind } from '../../src/codecs/scalar-quantizer.js';
import { indexFactory } from '../../src/indexes/factory.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { loadIndex } from '../../src/indexes/load-index.js';
import { clusteredFloats, randomFloats } from '../../src/common/random.js';
import { sqRowWords, sqTableFloats } from '../../src/codecs/code-rows.js';
import { type Metric, normalizeRows } from '../../src/types.js';
import { cpuBackend } from '../helpers/cpu.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { type BruteForce, bruteForce as bruteForceOver, expectEqual } from '../helpers/reconstructed.js';

const gpu = await gpuBackend({ maxBindingBytes: 32 * 1024 });
const cpu = cpuBackend({ maxBindingBytes: 32 * 1024 });
afterAll(disposeGpuBackends);
const backends = [['cpu', cpu], ['webgpu', gpu]] as const;
const dir = mkdtempSync(join(tmpdir(), 'wgknn-sq-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const d = 13; // not a multiple of 4 or 8: padding in every code layout
const n = 1500;
const nq = 9;
const xb = clusteredFloats(n, d, 10, 41);
const xq = randomFloats(nq * d, 42);

/** The vectors as the index holds them: normalised for cosine, then encoded and decoded with the index's own tables. */
function reconstructions(kind: SqKind, metric: Metric, tables: Float32Array | null): Float32Array {
  const x = metric === 'cosine' ? normalizeRows(xb, d) : xb;
  const sq = kind === 'SQfp16' ? new ScalarQuantizer(d, 'SQfp16') : ScalarQuantizer.fromTables(d, kind, tables!);
  return sq.decode(sq.encode(x, n), n);
}

/** Float64 brute force over `rows` (n * d, by id = row): see test/helpers/reconstructed.ts. */
function bruteForce(metric: Metric, rows: Float32Array, allowed: (id: number) => boolean, k: number): BruteForce {
  return bruteForceOver(metric, xq, nq, d, rows, allowed, k);
}

async function trained(backend: Backend, kind: SqKind, metric: Metric): Promise<FlatIndex> {
  const index = indexFactory(backend, d, kind, metric) as FlatIndex;
  expect(index.isTrained).toBe(kind === 'SQfp16');
  await index.train(xb);
  await index.add(xb);
  return index;
}

describe('scalar-quantised Flat indexes', () => {
  for (const [name, backend] of backends) {
    for (const kind of SQ_KINDS) {
      for (const metric of ['l2', 'ip', 'cosine'] as Metric[]) {
        it.skipIf(!backend)(`${name} ${kind} ${metric}: search equals brute force over the reconstructions; save and load keep it`, async () => {
          const index = await trained(backend!, kind, metric);
          const rows = reconstructions(kind, metric, index.codecTables);
          const k = 10;
          expectEqual(await index.search(xq, k), bruteForce(metric, rows, () => true, k), k, 'search');
          expectEqual(await index.search(xq, k, { filter: (id) => id % 7 === 0 }), bruteForce(metric, rows, (id) => id % 7 === 0, k), k, 'filtered');
          const path = join(dir, `${name}-${kind}-${metric}.idx`);
          await index.save(path);
          const expected = 40 + 4 * sqTableFloats(kind, d) + 4 * n * sqRowWords(kind, d) + 8 * (n + 1) + 32;
          expect(statSync(path).size, 'header + tables + codes + ids + checksum').toBe(expected);
          const loaded = await loadIndex(backend!, path);
          expectEqual(await loaded.search(xq, k), bruteForce(metric, rows, () => true, k), k, 'loaded');
          await loaded.dispose();
          await index.dispose();
        });
      }

      it.skipIf(!backend)(`${name} ${kind}: removal (tombstones, then compaction of the codes as stored) and range search`, async () => {
        const index = await trained(backend!, kind, 'l2');
        const rows = reconstructions(kind, 'l2', index.codecTables);
        const gone = BigInt64Array.from({ length: n / 10 }, (_, i) => BigInt(i * 10));
        expect(await index.removeIds(gone)).toBe(n / 10);
        const live = (id: number): boolean => id % 10 !== 0;
        expectEqual(await index.search(xq, 8), bruteForce('l2', rows, live, 8), 8, 'tombstones');
        await index.compact();
        expect(index.ndead).toBe(0);
        expectEqual(await index.search(xq, 8), bruteForce('l2', rows, live, 8), 8, 'compacted');
        // Halfway between two distinct distances, so that no result sits on the radius after rounding.
        const near = bruteForce('l2', rows, live, 80)[0].distances;
        const radius = (near[39] + near.find((v) => v > near[39])!) / 2;
        const got = await index.rangeSearch(xq, radius);
        const want = bruteForce('l2', rows, live, n);
        for (let r = 0; r < nq; r++) {
          const inside = want[r].labels.filter((_, j) => want[r].distances[j] <= radius);
          expect(Array.from(got.labels.subarray(got.lims[r], got.lims[r + 1])), `range row ${r}`).toEqual(inside);
        }
        await index.dispose();
      });
    }
  }

  it.skipIf(!gpu)('webgpu equals cpu, label for label and distance for distance', async () => {
    for (const kind of SQ_KINDS) {
      const a = await trained(cpu, kind, 'l2');
      const b = await trained(gpu!, kind, 'l2');
      const ra = await a.search(xq, 20);
      const rb = await b.search(xq, 20);
      expect(Array.from(rb.labels), kind).toEqual(Array.from(ra.labels));
      expect(Array.from(rb.distances), kind).toEqual(Array.from(ra.distances));
      await a.dispose();
      await b.dispose();
    }
  });

  it('refuses adds before training, and an unknown codec, naming them', async () => {
    const index = new FlatIndex(cpu, { dim: d, codec: 'SQ8' });
    await expect(index.add(xb)).rejects.toThrow(/the SQ8 index is not trained; call train\(xt\) first/);
    expect(() => new FlatIndex(cpu, { dim: d, codec: 'SQ2' as never })).toThrow(/codec must be one of "SQ8", "SQ4", "SQfp16", "PQ<M>", "PQ<M>x<nbits>" \(nbits 4 .. 8\), "LSH", "LSHr", "LSHt" or "LSHrt"; got SQ2/);
    await expect(index.train(new Float32Array(0))).rejects.toThrow(/SQ8 needs at least one training vector/);
  });
});
