/**
 * The re-rank keeps its contract (SearchParams.kFactor): an index with a re-rank (refine rows, or
 * LSH's +-1 reconstructions after the Hamming shortlist) re-scores exactly k x kFactor candidates
 * against it (rounded down, as Faiss's IndexRefine), and those are the k x kFactor best by the
 * codes' own order, made exact (float64 against the reconstructions, ties on the smaller id),
 * on both backends alike. Where Faiss is installed, its IndexRefineFlat on the same codes finds
 * the same true neighbours.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type FaissJob, defaultPeerLookup, detectPeers, startFaiss } from '../../bench/peers.js';
import type { Backend } from '../../src/backend/backend.js';
import { indexFactory } from '../../src/indexes/factory.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { loadIndex } from '../../src/indexes/load-index.js';
import { clusteredFloats, randomFloats } from '../../src/common/random.js';

import type { Metric } from '../../src/types.js';
import type { SearchParams, VectorIndex } from '../../src/indexes/vector-index.js';
import { expectIdentical } from '../helpers/compare.js';
import { bruteForce } from '../helpers/reconstructed.js';
import { suiteBackends } from '../helpers/suite.js';
import type { RowAt } from '../../src/contracts.js';

const { cpu, gpu, backends } = await suiteBackends();
const dir = mkdtempSync(join(tmpdir(), 'wgknn-rerank-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const d = 16;
const n = 2000;
const nq = 20;
const xb = clusteredFloats(n, d, 20, 61, 0.3);
const xq = clusteredFloats(nq, d, 20, 62, 0.3);

/** Rows read by the re-scores since the last reset: the refine rows', and the index's own (its codes' reconstructions). */
type Reads = { refine: number; own: number };

const counted = new WeakMap<VectorIndex, Reads>();

/**
 * Counts the rows each re-score reads (each read is one candidate scored), by wrapping the lookups
 * the re-scores are given: the refine rows' and the index's own. Zeroed at each call.
 */
function countReads(index: VectorIndex): Reads {
  let reads = counted.get(index);
  if (!reads) {
    const r: Reads = (reads = { refine: 0, own: 0 });
    const wrap = (target: { rowsAt(slots: ArrayLike<number>): Promise<RowAt> }, which: keyof Reads): void => {
      const rowsAt = target.rowsAt.bind(target);
      target.rowsAt = async (slots) => {
        const at = await rowsAt(slots);
        return (slot) => {
          r[which]++;
          return at(slot);
        };
      };
    };
    const inner = index as unknown as { refineRows: { rowsAt(slots: ArrayLike<number>): Promise<RowAt> } | null; rowsAt(slots: ArrayLike<number>): Promise<RowAt> };
    if (inner.refineRows) wrap(inner.refineRows, 'refine');
    wrap(inner, 'own');
    counted.set(index, reads);
  }
  reads.refine = reads.own = 0;
  return reads;
}

const indexes = new Map<string, Promise<VectorIndex>>();
afterAll(async () => {
  for (const index of indexes.values()) await (await index).dispose();
});

/** `description` trained on xb with all of xb added, on `backend`. */
async function fresh(backend: Backend, description: string, metric: Metric = 'l2'): Promise<VectorIndex> {
  const index = indexFactory(backend, d, description, metric);
  await index.train(xb);
  await index.add(xb);
  return index;
}

/** As `fresh`, built once per backend and string, for tests that only search it. */
function built(backend: Backend, description: string): Promise<VectorIndex> {
  const key = `${backend.kind} ${description}`;
  if (!indexes.has(key)) indexes.set(key, fresh(backend, description));
  return indexes.get(key)!;
}

describe('kFactor re-ranks exactly k x kFactor candidates', () => {
  const cases: { description: string; params: SearchParams; k: number; kr: number }[] = [
    { description: 'PQ4x4,RFlat', params: { kFactor: 10 }, k: 10, kr: 100 },
    { description: 'PQ4x4,RFlat', params: { kFactor: 2.5 }, k: 5, kr: 12 },
    { description: 'IVF8,SQ4,RFlat', params: { kFactor: 4, nprobe: 8 }, k: 10, kr: 40 },
    { description: 'IVF8,PQ4x4,Refine(SQfp16)', params: { kFactor: 3, nprobe: 4 }, k: 7, kr: 21 },
    { description: 'PCA4,Flat,RFlat', params: { kFactor: 6 }, k: 10, kr: 60 },
    { description: 'LSHrt,RFlat', params: { kFactor: 10 }, k: 10, kr: 100 },
    { description: 'PQ4x4,RFlat', params: { kFactor: 10, filter: (id) => id % 10 !== 3, filterMode: 'post' }, k: 10, kr: 100 },
    { description: 'PQ4x4,RFlat', params: { kFactor: 10, filter: (id) => id % 3 === 0, filterMode: 'pre' }, k: 10, kr: 100 },
  ];
  for (const [name, backend] of backends) {
    for (const c of cases) {
      const mode = c.params.filter ? ` (${c.params.filterMode}-filtered)` : '';
      it.skipIf(!backend)(`${name} ${c.description}${mode}, k ${c.k}, kFactor ${c.params.kFactor}: ${c.kr} candidates a query re-scored against the refine rows`, async () => {
        const index = await built(backend!, c.description);
        const reads = countReads(index);
        await index.search(xq, c.k, c.params);
        expect(reads.refine).toBe(nq * c.kr);
      });
    }

    it.skipIf(!backend)(`${name} PQ4x4,RFlat and IVF8,SQ4,RFlat, k 10, kFactor 1e6: at most ntotal (2000) candidates a query, the answer of kFactor 200`, async () => {
      // Without the bound each query's candidate lists were sized by k x kFactor (capped only by
      // the backend's max k): 10.3 GB for 500 queries on the CPU.
      for (const description of ['PQ4x4,RFlat', 'IVF8,SQ4,RFlat']) {
        const index = await built(backend!, description);
        const reads = countReads(index);
        const params = { nprobe: 8 };
        const huge = await index.search(xq, 10, { ...params, kFactor: 1e6 });
        expect(reads.refine, description).toBe(nq * n);
        expectIdentical(huge, await index.search(xq, 10, { ...params, kFactor: n / 10 }), description);
      }
    });

    it.skipIf(!backend)(`${name} LSHrt, k 10, kFactor 10: the Hamming shortlist's 100 best, exactly, re-ranked by the +-1 reconstructions`, async () => {
      const index = await built(backend!, 'LSHrt');
      const reads = countReads(index);
      await index.search(xq, 10, { kFactor: 10 });
      expect(reads.own).toBe(nq * 100);
    });

    it.skipIf(!backend)(`${name}: the candidates re-ranked are the k x kFactor best by the codes' reconstructions (float64, ties on the smaller id)`, async () => {
      for (const metric of ['l2', 'cosine'] as Metric[]) {
        const index = (await fresh(backend!, 'PQ4x4,RFlat', metric)) as FlatIndex;
        const own = index as unknown as { rowsAt(slots: ArrayLike<number>): Promise<RowAt> };
        const all = Int32Array.from({ length: n }, (_, i) => i);
        const at = await own.rowsAt(all);
        const rows = new Float32Array(n * d);
        for (let i = 0; i < n; i++) rows.set(at(i).subarray(0, d), i * d);
        const refine = (index as unknown as { refineRows: { rowsAt(slots: ArrayLike<number>): Promise<RowAt> } }).refineRows;
        const rowsAt = refine.rowsAt.bind(refine);
        const reranked: number[][] = [];
        refine.rowsAt = async (slots) => {
          for (let r = 0; r < nq; r++) reranked.push(Array.from(slots as Int32Array).slice(r * 30, (r + 1) * 30).sort((a, b) => a - b));
          return rowsAt(slots);
        };
        await index.search(xq, 3, { kFactor: 10 });
        const best = bruteForce(metric, xq, nq, d, rows, () => true, 30);
        // Codes tie (equal codes, equal reconstructions): the smaller ids go first, as the brute force orders them.
        for (let r = 0; r < nq; r++) expect(reranked[r], `${metric} row ${r}`).toEqual([...best[r].labels].sort((a, b) => a - b));
        await index.dispose();
      }
    });
  }

  it.skipIf(!gpu)('webgpu equals cpu on the same saved codes with a re-rank, label for label and distance for distance', async () => {
    for (const description of ['PQ4x4,RFlat', 'IVF8,SQ8,Refine(SQfp16)', 'LSHrt,RFlat', 'LSHr']) {
      const index = await fresh(cpu, description, 'cosine');
      const path = join(dir, `same-${description.replace(/[^\w]/g, '_')}.idx`);
      await index.save(path);
      const a = await loadIndex(cpu, path);
      const b = await loadIndex(gpu!, path);
      for (const kFactor of [1, 3, 8]) {
        const params = { kFactor, nprobe: description.startsWith('IVF') ? 3 : undefined };
        expectIdentical(await b.search(xq, 10, params), await a.search(xq, 10, params), `${description} kFactor ${kFactor}`);
      }
      await Promise.all([index.dispose(), a.dispose(), b.dispose()]);
    }
  });
});

// Faiss runs only where it is installed (python3-faiss); CI has none, and says so.
const faiss = detectPeers(defaultPeerLookup())[0];
if (!faiss.available) console.log(`[faiss] skipping the IndexRefine comparison: faiss ${faiss.detail}`);

describe('the re-rank against Faiss 1.7.3 IndexRefineFlat on the same codes', () => {
  it.skipIf(!faiss.available)('PQ4x4,RFlat, k 10, kFactor 10 and 3: the same true neighbours found', async () => {
    const k = 10;
    const base = randomFloats(n * d, 71);
    const queries = randomFloats(nq * d, 72);
    const index = indexFactory(cpu, d, 'PQ4x4,RFlat', 'l2') as FlatIndex;
    await index.train(base);
    await index.add(base);
    // Our codes as Faiss reads them: the codebook, and each row's 2 code bytes (the saved file's codes section).
    const path = join(dir, 'faiss-same.idx');
    await index.save(path);
    const file = readFileSync(path);
    const tables = 16 * d;
    const codes = new Uint8Array(n * 2);
    for (let i = 0; i < n; i++) codes.set(file.subarray(40 + 4 * tables + 4 * i, 40 + 4 * tables + 4 * i + 2), 2 * i);
    writeFileSync(join(dir, 'codebook.f32'), index.codecTables!);
    writeFileSync(join(dir, 'codes.u8'), codes);
    const exact = new FlatIndex(cpu, { dim: d });
    await exact.add(base);
    const truth = (await exact.search(queries, k)).labels;
    const found = (labels: ArrayLike<number>): number => {
      let hit = 0;
      for (let r = 0; r < nq; r++) {
        const want = new Set(Array.from(truth.subarray(r * k, (r + 1) * k)));
        for (let j = 0; j < k; j++) if (want.has(labels[r * k + j])) hit++;
      }
      return hit;
    };
    const kFactors = [10, 3];
    const job = {
      metric: 'l2', k, batch: nq, ivf: null,
      factory: [{
        description: 'PQ4x4,RFlat', niter: 25, seed: 1,
        codes: { codebook: join(dir, 'codebook.f32'), codes: join(dir, 'codes.u8') },
        configs: kFactors.map((kFactor) => ({ param: `kFactor=${kFactor}`, nprobe: null, kFactor })),
      }],
    } as unknown as FaissJob;
    const session = await startFaiss(faiss.python!, base, queries, n, nq, d, job, () => {}, (_, why) => {
      throw new Error(why);
    });
    try {
      for (const [i, kFactor] of kFactors.entries()) {
        const theirs = found((await session.configs[i].pass(false)).labels);
        const ours = found((await index.search(queries, k, { kFactor })).labels);
        console.log(`[faiss] PQ4x4,RFlat kFactor ${kFactor}: ours ${ours}, Faiss IndexRefineFlat ${theirs} of ${nq * k} true neighbours`);
        expect(ours, `kFactor ${kFactor}`).toBe(theirs);
      }
    } finally {
      await session.close();
    }
    await Promise.all([index.dispose(), exact.dispose()]);
  });
});

