/**
 * Tests that stand behind bugs an earlier suite let through, one at a time (issue 33, item 13),
 * on both backends, Flat and IVF (nprobe = nlist, so exact), against a float64 brute force:
 *
 * - caller ids added after a removal that left tombstones (no compaction): each new id must map to
 *   its own slot (src/indexes/ids.ts gives slots from nslots, live and dead, not from ntotal), so filters
 *   on the new ids find those vectors and removeIds deletes the right one;
 * - filters and tombstones on stores whose chunks are not a multiple of 32 rows (a mask word
 *   short would drop each chunk's last rows);
 * - compaction of the full rows kept beside codes (,RFlat) outside the transform suite: after a
 *   removal that compacts, re-ranking every candidate against the full rows must give the exact
 *   answer over the survivors.
 */
import { describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import { createIndex, parseIndexType } from '../../src/indexes/factory.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { clusteredFloats, rng } from '../../src/common/random.js';
import type { VectorIndex } from '../../src/indexes/vector-index.js';
import { cpuBackend } from '../helpers/cpu.js';
import { gpuBackend } from '../helpers/gpu.js';
import { suiteBackends } from '../helpers/suite.js';

const { backends } = await suiteBackends();
// Chunks of 45 rows (not a multiple of 32): a store of 600 rows spans 14 of them.
const odd = [['cpu', cpuBackend({ chunkRows: 45 })], ['webgpu', await gpuBackend({ chunkRows: 45 })]] as const;

const d = 8;
const NLIST = 4;

async function makeIndex(kind: 'Flat' | 'IVF', backend: Backend, train: Float32Array): Promise<VectorIndex> {
  if (kind === 'Flat') return new FlatIndex(backend, { dim: d });
  const ivf = new IvfFlatIndex(backend, { dim: d, nlist: NLIST, nprobe: NLIST, niter: 3, seed: 5 });
  await ivf.train(train);
  return ivf;
}

/** Each query's k nearest of `rows` (id -> row) by float64 squared distance, ties on the smaller id; padded with -1. */
function bruteForce(xq: Float32Array, rows: Map<number, Float32Array>, k: number): number[] {
  const out: number[] = [];
  for (let q = 0; q < xq.length / d; q++) {
    const scored = [...rows].map(([id, x]) => ({ id, s: x.reduce((a, v, j) => a + (xq[q * d + j] - v) ** 2, 0) }));
    scored.sort((a, b) => a.s - b.s || a.id - b.id);
    const top = scored.slice(0, k).map((t) => t.id);
    out.push(...top, ...Array<number>(k - top.length).fill(-1));
  }
  return out;
}

/** Removed vectors not yet compacted away. */
const ndead = (index: VectorIndex): number => (index as FlatIndex | IvfFlatIndex).ndead;

const rowsOf = (x: Float32Array, ids: number[]): Map<number, Float32Array> => new Map(ids.map((id, i) => [id, x.subarray(i * d, (i + 1) * d)]));

describe('caller ids added after a removal left tombstones', () => {
  for (const [name, backend] of backends) {
    for (const kind of ['Flat', 'IVF'] as const) {
      it.skipIf(!backend)(`${name} ${kind}: the new ids find their own vectors, under filters and removal`, async () => {
        const x0 = clusteredFloats(200, d, 6, 1);
        const x1 = clusteredFloats(20, d, 6, 2);
        const index = await makeIndex(kind, backend!, x0);
        const ids0 = Array.from({ length: 200 }, (_, i) => 1000 + i);
        const ids1 = Array.from({ length: 20 }, (_, i) => 5000 + i);
        await index.addWithIds(x0, BigInt64Array.from(ids0, BigInt));
        // 10 of 200 dead: below the compaction fraction, so they stay as tombstones.
        expect(await index.removeIds(BigInt64Array.from(ids0.slice(50, 60), BigInt))).toBe(10);
        expect(ndead(index)).toBe(10);
        await index.addWithIds(x1, BigInt64Array.from(ids1, BigInt));
        const live = new Map([...rowsOf(x0, ids0)].filter(([id]) => id < 1050 || id >= 1060));
        for (const [id, row] of rowsOf(x1, ids1)) live.set(id, row);
        // Unfiltered, and filtered to the new ids: each new row finds itself first.
        expect(Array.from((await index.search(x1, 5)).labels)).toEqual(bruteForce(x1, live, 5));
        const onlyNew = new Map([...live].filter(([id]) => id >= 5000));
        for (const filterMode of ['pre', 'post'] as const) {
          const got = await index.search(x1, 5, { filter: BigInt64Array.from(ids1, BigInt), filterMode });
          expect(Array.from(got.labels), filterMode).toEqual(bruteForce(x1, onlyNew, 5));
        }
        // Removing a new id removes that vector, and only it.
        expect(await index.removeIds(BigInt64Array.of(5003n))).toBe(1);
        live.delete(5003);
        expect(Array.from((await index.search(x1, 5)).labels)).toEqual(bruteForce(x1, live, 5));
        await index.dispose();
      });
    }
  }
});

describe('filters and tombstones on chunks of 45 rows', () => {
  for (const [name, backend] of odd) {
    for (const kind of ['Flat', 'IVF'] as const) {
      it.skipIf(!backend)(`${name} ${kind}: every chunk's last rows are allowed and masked as the filter says`, async () => {
        const n = 600;
        const x = clusteredFloats(n, d, 6, 3);
        const index = await makeIndex(kind, backend!, x);
        await index.add(x);
        const all = rowsOf(x, Array.from({ length: n }, (_, i) => i));
        // Allowed: the last 13 rows of every chunk (rows 32 .. 44 of 45: the second mask word) and a random tenth.
        const r = rng(4);
        const allowed = [...all.keys()].filter((id) => id % 45 >= 32 || r() < 0.1);
        const keep = new Map([...all].filter(([id]) => allowed.includes(id)));
        const xq = x.subarray(0, 40 * d);
        for (const filterMode of ['pre', 'post'] as const) {
          const got = await index.search(xq, 10, { filter: BigInt64Array.from(allowed, BigInt), filterMode });
          expect(Array.from(got.labels), filterMode).toEqual(bruteForce(xq, keep, 10));
        }
        // Tombstones in the same places (a tenth: no compaction).
        const dead = [...all.keys()].filter((id) => id % 45 === 44 || id % 45 === 33);
        await index.removeIds(BigInt64Array.from(dead, BigInt));
        expect(ndead(index)).toBe(dead.length);
        for (const id of dead) all.delete(id);
        const queries = x.subarray(40 * d, 130 * d);
        expect(Array.from((await index.search(queries, 10)).labels)).toEqual(bruteForce(queries, all, 10));
        await index.dispose();
      });
    }
  }
});

describe('compaction of the full rows kept beside codes', () => {
  for (const [name, backend] of backends) {
    for (const type of ['SQ8,RFlat', 'PQ4,RFlat', `IVF${NLIST},SQ8,RFlat`, `IVF${NLIST},PQ4,RFlat`]) {
      it.skipIf(!backend)(`${name} ${type}: after a removal that compacts, every candidate re-ranked gives the exact answer over the survivors`, async () => {
        const n = 400;
        const x = clusteredFloats(n, d, 6, 7);
        const index = createIndex(backend!, d, parseIndexType(type), 'l2', { nprobe: NLIST });
        await index.train(x);
        const ids = Array.from({ length: n }, (_, i) => 7000 + 3 * i);
        await index.addWithIds(x, BigInt64Array.from(ids, BigInt));
        // Two in five removed, spread: past the compaction fraction, so the stores are rebuilt.
        const gone = ids.filter((_, i) => i % 5 < 2);
        await index.removeIds(BigInt64Array.from(gone, BigInt));
        expect(ndead(index)).toBe(0);
        const live = new Map([...rowsOf(x, ids)].filter(([id]) => !gone.includes(id)));
        const xq = clusteredFloats(30, d, 6, 8);
        const k = 5;
        // kFactor large enough that every stored vector is a candidate: the ranking is the full rows'.
        const got = await index.search(xq, k, { kFactor: n / k });
        expect(Array.from(got.labels)).toEqual(bruteForce(xq, live, k));
        await index.dispose();
      });
    }
  }
});
