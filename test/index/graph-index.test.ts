/**
 * The CAGRA graph index (src/indexes/graph): recall on SIFT10K against its published ground truth on
 * both backends, the same graph and labels on WebGPU and the CPU where float32 arithmetic is exact,
 * the factory and the file, filters and removal (exact, never a disallowed or removed id), and the
 * graph rebuilt after the rows change.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { randomFloats, randomSmallInts } from '../../src/common/random.js';
import { describeIndexType, indexFactory, parseIndexType } from '../../src/indexes/factory.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { GRAPH_FILTER_MIN_SELECTIVITY, GRAPH_MAX_ITOPK, GraphIndex } from '../../src/indexes/graph/graph-index.js';
import { loadIndex } from '../../src/indexes/load-index.js';
import { PAD_ID } from '../../src/kernel-facts.js';
import { emptyTimings } from '../../src/types.js';
import type { Backend } from '../../src/backend/backend.js';
import { cpuBackend } from '../helpers/cpu.js';
import { l2Exact, tieAwareRecall } from '../helpers/compare.js';
import { loadRealSet } from '../helpers/data.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

const gpu = await gpuBackend();
const cpu = cpuBackend();
afterAll(disposeGpuBackends);
const backends = [['cpu', cpu], ['webgpu', gpu]] as const;
const dir = mkdtempSync(join(tmpdir(), 'wgknn-graph-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Builds CAGRA8 on the CPU and the GPU, each with the default limits and with `limits`, and expects the same labels from all four. */
async function expectSameLabelsWithLimits(d: number, xb: Float32Array, xq: Float32Array, limits: { maxBindingBytes: number }): Promise<void> {
  const results: number[][] = [];
  for (const backend of [cpu, cpuBackend(limits), gpu!, await gpuBackend(limits)]) {
    const index = new GraphIndex(backend!, { dim: d, degree: 8 });
    await index.add(xb);
    const r = await index.search(xq, 10, { itopk: 48 });
    results.push(Array.from(r.labels));
    await index.dispose();
  }
  for (const r of results.slice(1)) expect(r).toEqual(results[0]);
}

/** Recall@10 the graph must reach on SIFT10K with CAGRA32 and the default itopk 64 (measured: see docs/graph-index.md). */
const SIFT_RECALL_FLOOR = 0.95;

describe('GraphIndex', () => {
  for (const [name, backend] of backends) {
    it.skipIf(!backend)(`${name}: recall@10 on SIFT10K above ${SIFT_RECALL_FLOOR}, and above the default with a wider walk`, async () => {
      const set = loadRealSet('siftsmall', 'siftsmall');
      const index = new GraphIndex(backend!, { dim: set.d, degree: 32 });
      await index.add(set.xb);
      const dist = (q: number, id: number): number => l2Exact(set.xq, q, set.xb, id, set.d);
      const r = await index.search(set.xq, 10);
      const recall = tieAwareRecall(r.labels, 10, set.gt, set.gtK, set.nq, dist);
      expect(recall).toBeGreaterThanOrEqual(SIFT_RECALL_FLOOR);
      const wide = await index.search(set.xq, 10, { itopk: 128, searchWidth: 2 });
      expect(tieAwareRecall(wide.labels, 10, set.gt, set.gtK, set.nq, dist)).toBeGreaterThanOrEqual(recall);
      // Every row has its full degree of distinct out-edges, none to itself.
      const g = index.graphRows!;
      for (let row = 0; row < set.n; row++) {
        const edges = Array.from(g.subarray(row * 32, (row + 1) * 32));
        expect(edges.includes(PAD_ID), `row ${row}`).toBe(false);
        expect(edges.includes(row), `row ${row}`).toBe(false);
        expect(new Set(edges).size).toBe(32);
      }
      expect(index.unreachableRows).toBe(0);
      await index.dispose();
    });
  }

  it.skipIf(!gpu)('WebGPU builds the same graph and returns the same labels as the CPU (small-integer data: exact float32)', async () => {
    const n = 1500;
    const d = 12;
    const xb = randomSmallInts(n * d, 11);
    const xq = randomSmallInts(60 * d, 12);
    const out = [];
    for (const backend of [cpu, gpu!]) {
      const index = new GraphIndex(backend, { dim: d, degree: 16 });
      await index.add(xb);
      const r = await index.search(xq, 10, { itopk: 32 });
      // A list shorter than the re-score's 32 candidates: the walk's 12, padded.
      const short = await index.search(xq, 10, { itopk: 12 });
      expect(short.labels.includes(-1)).toBe(false);
      out.push({ graph: index.graphRows!.slice(), labels: [...r.labels, ...short.labels], distances: [...r.distances, ...short.distances] });
      await index.dispose();
    }
    expect(out[1].graph).toEqual(out[0].graph);
    expect(out[1].labels).toEqual(out[0].labels);
    expect(out[1].distances).toEqual(out[0].distances);
  });

  it.skipIf(!gpu)('the walk scores rows with the device\'s team (tuning.graphTeam): the same labels as the CPU for every team', async () => {
    const n = 800;
    const d = 100; // dpad 100: 25 vec4s a row, `auto` gives teams of 8
    const xb = randomSmallInts(n * d, 21);
    const xq = randomSmallInts(40 * d, 22);
    const search = async (backend: Backend) => {
      const index = new GraphIndex(backend, { dim: d, degree: 16 });
      await index.add(xb);
      const r = await index.search(xq, 10, { itopk: 24 });
      await index.dispose();
      return Array.from(r.labels);
    };
    const want = await search(cpu);
    for (const graphTeam of [4, 'auto', 64] as const) {
      const backend = (await gpuBackend({ graphTeam }))!;
      const dispatch = vi.spyOn(backend.device, 'dispatch');
      expect(await search(backend), `graphTeam ${graphTeam}`).toEqual(want);
      const teams = dispatch.mock.calls.map(([call]) => call).filter((call) => call.kernel === 'graph-search').map((call) => (call as { team?: number }).team);
      expect(teams.length).toBeGreaterThan(0);
      expect(new Set(teams)).toEqual(new Set([graphTeam === 'auto' ? 8 : graphTeam]));
    }
  });

  it.skipIf(!gpu)('rows that span chunks: the walk reads them as halves, with the same labels as the float walk where halves are exact, on both devices', async () => {
    const n = 3000;
    const d = 12;
    const xb = randomSmallInts(n * d, 51);
    const xq = randomSmallInts(50 * d, 52);
    const small = { maxBindingBytes: 100_000 }; // 2,083 float rows a chunk: two chunks; the graph (n x 8 ids) and the halves fit one binding
    await expectSameLabelsWithLimits(d, xb, xq, small);
  });

  it.skipIf(!gpu)('halves past one binding: the walk reads them from two, with the same labels on both devices; past two, a clear error', async () => {
    const n = 3000;
    const d = 40; // 80 bytes a half row: 240,000 bytes for the 3,000
    const xb = randomSmallInts(n * d, 53);
    const xq = randomSmallInts(40 * d, 54);
    const two = { maxBindingBytes: 150_000 }; // 1,875 half rows a binding: two; 937 float rows a chunk; the graph (96,000 bytes) one
    await expectSameLabelsWithLimits(d, xb, xq, two);
    const three = new GraphIndex(cpuBackend({ maxBindingBytes: 100_000 }), { dim: d, degree: 8 }); // 1,250 half rows a binding
    await three.add(xb);
    await expect(three.search(xq, 10)).rejects.toThrow(
      'a CAGRA walk reads its rows in at most two bindings: 3000 rows of 40 dimensions take 240000 bytes as halves; this device binds at most 100000 bytes (maxBindingBytes), 2500 such rows in two',
    );
    await three.dispose();
    // A graph past one binding is refused before the build's work (the walk binds it whole).
    const wide = new GraphIndex(cpuBackend({ maxBindingBytes: 100_000 }), { dim: 4, degree: 64 });
    await wide.add(randomSmallInts(1000 * 4, 55));
    await expect(wide.search(xq.subarray(0, 4), 1)).rejects.toThrow(
      'a CAGRA graph of 1000 rows of degree 64 takes 256000 bytes; this device binds at most 100000 bytes at once (maxBindingBytes)',
    );
    await wide.dispose();
  });

  it('the factory: CAGRA<degree>, float32 rows implied; what it cannot take is refused', () => {
    expect(describeIndexType(parseIndexType('CAGRA32'))).toBe('CAGRA32');
    expect(describeIndexType(parseIndexType('CAGRA16,Flat'))).toBe('CAGRA16');
    expect(parseIndexType('CAGRA8')).toMatchObject({ type: 'CAGRA', degree: 8, codec: null });
    expect(indexFactory(cpu, 8, 'CAGRA4')).toBeInstanceOf(GraphIndex);
    expect(() => parseIndexType('CAGRA0')).toThrow('unknown index description "CAGRA0" (CAGRA<degree>: a degree in [1, 256])');
    expect(() => parseIndexType('CAGRA16,SQ8')).toThrow('(a CAGRA graph walks float32 rows: CAGRA<degree> takes no codec or refine for now)');
    expect(() => parseIndexType('PCA8,CAGRA16')).toThrow(/a transform \(PCA8\) is followed by Flat only for now/);
    expect(() => new GraphIndex(cpu, { dim: 8, degree: 0 })).toThrow('degree must be an integer in [1, 256]; got 0');
    expect(() => new GraphIndex(cpu, { dim: 8, degree: 8, intermediateDegree: 4 })).toThrow('intermediateDegree must be an integer in [degree = 8, 256]; got 4');
  });

  it("search parameters are checked; k beyond the walk's list is refused with the bound", async () => {
    const d = 8;
    const index = new GraphIndex(cpu, { dim: d, degree: 8 });
    await index.add(randomSmallInts(400 * d, 3));
    const q = randomSmallInts(2 * d, 4);
    await expect(index.search(q, 5, { itopk: 0 })).rejects.toThrow(`itopk must be an integer in [1, ${GRAPH_MAX_ITOPK}]; got 0`);
    await expect(index.search(q, 5, { searchWidth: 0 })).rejects.toThrow('searchWidth must be an integer in [1, 32]; got 0');
    await expect(index.search(q, 5, { seeds: 257 })).rejects.toThrow('seeds must be an integer in [1, 256] (GRAPH_MAX_SEEDS); got 257');
    await expect(index.search(q, 5, { entryRows: 4097 })).rejects.toThrow('entryRows must be an integer in [1, 4096] (GRAPH_MAX_ENTRY_ROWS); got 4097');
    await expect(index.search(q, 5, { entryRows: 0 })).rejects.toThrow('entryRows must be an integer in [1, 4096] (GRAPH_MAX_ENTRY_ROWS); got 0');
    await expect(index.search(q, 257)).rejects.toThrow(`k = 257: a CAGRA search walks a list of at least k entries; the walk holds at most ${GRAPH_MAX_ITOPK}: ask for at most 256 results`);
    expect((await index.search(q, 256)).labels.length).toBe(2 * 256);
    const wide = new GraphIndex(cpu, { dim: d, degree: 32 });
    await expect(wide.search(q, 5, { searchWidth: 17 })).rejects.toThrow('searchWidth must be an integer in [1, 16] (the walk scores at most 512 neighbours an iteration: 16 rows of degree 32); got 17');
    await wide.dispose();
    await index.dispose();
  });

  it('filters and removal: a walk through the disallowed rows above half allowed, the exact scan below; never a disallowed or removed id; adds and compaction rebuild the graph', async () => {
    const d = 8;
    const n = 2000;
    const xb = randomSmallInts(n * d, 21);
    const xq = randomSmallInts(40 * d, 22);
    const index = new GraphIndex(cpu, { dim: d, degree: 16 });
    const flat = new FlatIndex(cpu, { dim: d });
    await index.add(xb);
    await flat.add(xb);
    const dist = (q: number, id: number): number => l2Exact(xq, q, xb, id, d);
    /** Recall@10 of `labels` against the flat index's answer, ties counted as hits. */
    const recallOf = (labels: ArrayLike<number>, truth: ArrayLike<number>): number => tieAwareRecall(labels, 10, Int32Array.from(truth), 10, 40, dist);
    // A tenth allowed: the exact scan, equal to Flat's.
    const tenth = BigInt64Array.from({ length: n / 10 }, (_, i) => BigInt(i * 10));
    const timings = emptyTimings();
    const [g, f] = [await index.search(xq, 10, { filter: tenth, timings }), await flat.search(xq, 10, { filter: tenth })];
    expect(Array.from(g.labels)).toEqual(Array.from(f.labels));
    expect(timings.strategy).toBe('scan');
    // Three quarters allowed: the walk, with the mask; only allowed ids, most of the true ones.
    const most = BigInt64Array.from({ length: n }, (_, i) => BigInt(i)).filter((id) => id % 4n !== 0n);
    const [gm, fm] = [await index.search(xq, 10, { filter: most, timings }), await flat.search(xq, 10, { filter: most })];
    expect(timings.strategy).toBe('walk');
    for (const id of gm.labels) expect(id % 4).not.toBe(0);
    expect(recallOf(gm.labels, fm.labels)).toBeGreaterThanOrEqual(0.9);
    const before = index.graphRows!;
    // Removed rows: walked through, never returned.
    const removed = BigInt64Array.from({ length: 100 }, (_, i) => BigInt(i));
    await index.removeIds(removed);
    await flat.removeIds(removed);
    const [g2, f2] = [await index.search(xq, 10), await flat.search(xq, 10)];
    for (const id of g2.labels) expect(id).toBeGreaterThanOrEqual(100);
    expect(recallOf(g2.labels, f2.labels)).toBeGreaterThanOrEqual(0.9);
    expect(index.graphRows).toBe(before);
    await index.compact();
    await index.add(xb.subarray(0, 10 * d));
    await index.search(xq, 10);
    expect(index.graphRows).not.toBe(before);
    expect(index.graphRows!.length).toBe(index.degree * (n - 100 + 10));
    await index.dispose();
    await flat.dispose();
  });

  it('removed rows and filters over rows in several chunks; near-full lists stay full (the walk widened by the allowed share, else the exact scan)', async () => {
    const d = 16;
    const backend = cpuBackend({ maxBindingBytes: 100 * d * 4 }); // chunks of 100 rows
    const xb = randomFloats(150 * d, 7);
    const index = new GraphIndex(backend, { dim: d, degree: 8 });
    await index.add(xb);
    const q = xb.slice(120 * d, 121 * d);
    expect((await index.search(q, 3)).labels[0]).toBe(120);
    await index.removeIds(BigInt64Array.from([5n]));
    expect((await index.search(q, 3)).labels[0]).toBe(120); // row 120 lives in the second chunk
    const allButZero = BigInt64Array.from({ length: 149 }, (_, i) => BigInt(i + 1));
    expect((await index.search(q, 3, { filter: allButZero, filterMode: 'pre' })).labels[0]).toBe(120);
    await index.dispose();
    // Every row an entry row (150 < 256), in two chunks of the entry rows or one: the same seeds,
    // so the same short walks (their labels and work) as from one chunk.
    const walks = [];
    for (const b of [cpu, backend]) {
      const g = new GraphIndex(b, { dim: d, degree: 8 });
      await g.add(xb);
      const timings = emptyTimings();
      const r = await g.search(randomFloats(40 * d, 17), 3, { seeds: 1, maxIterations: 2, itopk: 8, timings });
      walks.push({ labels: Array.from(r.labels), walk: timings.walk });
      await g.dispose();
    }
    expect(walks[1]).toEqual(walks[0]);
    // 20% removed, k near the walk's list: full lists; a post-filter's many candidates: the exact scan.
    const n = 2000;
    const big = new GraphIndex(cpu, { dim: 8, degree: 16 });
    const flat = new FlatIndex(cpu, { dim: 8 });
    const x = randomFloats(n * 8, 8);
    await big.add(x);
    await flat.add(x);
    const removed = BigInt64Array.from({ length: 400 }, (_, i) => BigInt(5 * i));
    await big.removeIds(removed);
    await flat.removeIds(removed);
    const xq = randomFloats(10 * 8, 9);
    const r = await big.search(xq, 112);
    expect(Array.from(r.labels).filter((id) => id < 0)).toEqual([]);
    for (const id of r.labels) expect(id % 5).not.toBe(0);
    const tenth = BigInt64Array.from({ length: n / 10 }, (_, i) => BigInt(10 * i + 1));
    const [p, fp] = [await big.search(xq, 10, { filter: tenth, filterMode: 'post' }), await flat.search(xq, 10, { filter: tenth, filterMode: 'post' })];
    expect(Array.from(p.labels)).toEqual(Array.from(fp.labels));
    await big.dispose();
    await flat.dispose();
  });

  for (const [name, backend] of backends) {
    it.skipIf(!backend)(`${name}: filters allowing 50%, 10%, 1% and 0.1% against a float64 brute force over the allowed rows: the walk above the floor at 50%, exact below`, async () => {
      const n = 5000;
      const d = 16;
      const xb = randomFloats(n * d, 61);
      const nq = 30;
      const xq = randomFloats(nq * d, 62);
      const index = new GraphIndex(backend!, { dim: d, degree: 16 });
      await index.add(xb);
      for (const share of [0.5, 0.1, 0.01, 0.001]) {
        const step = Math.round(1 / share);
        const allowedIds = Array.from({ length: Math.floor(n / step) }, (_, i) => i * step + 3);
        const k = Math.min(10, allowedIds.length);
        const r = await index.search(xq, k, { filter: BigInt64Array.from(allowedIds, BigInt) });
        // The truth: every allowed row by exact float64 distance, ties by id.
        const truth = new Int32Array(nq * k);
        for (let q = 0; q < nq; q++) {
          const order = allowedIds.map((id) => [l2Exact(xq, q, xb, id, d), id]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
          for (let j = 0; j < k; j++) truth[q * k + j] = order[j][1];
        }
        for (const id of r.labels) expect(allowedIds.includes(id), `${share}: id ${id}`).toBe(true);
        const recall = tieAwareRecall(r.labels, k, truth, k, nq, (q, id) => l2Exact(xq, q, xb, id, d));
        if (share >= GRAPH_FILTER_MIN_SELECTIVITY) expect(recall, `${share}`).toBeGreaterThanOrEqual(0.95);
        else expect(recall, `${share}`).toBe(1);
      }
      await index.dispose();
    });
  }

  for (const [name, backend] of backends) {
    it.skipIf(!backend)(`${name}: save and load: the same graph and labels, on the other backend too`, async () => {
      const d = 12;
      const xb = randomSmallInts(800 * d, 31);
      const xq = randomSmallInts(30 * d, 32);
      const index = new GraphIndex(backend!, { dim: d, degree: 12, metric: 'ip' });
      await index.add(xb);
      const r = await index.search(xq, 8);
      const path = join(dir, `${name}.idx`);
      await index.save(path);
      for (const other of [backend!, cpu]) {
        const loaded = await loadIndex(other, path);
        expect(loaded).toBeInstanceOf(GraphIndex);
        expect((loaded as GraphIndex).graphRows).toEqual(index.graphRows);
        const r2 = await loaded.search(xq, 8);
        expect(Array.from(r2.labels)).toEqual(Array.from(r.labels));
        await loaded.dispose();
      }
      await index.dispose();
    });
  }

  it('a saved graph with an edge out of range is refused, naming the entry', async () => {
    const d = 4;
    const index = new GraphIndex(cpu, { dim: d, degree: 4 });
    await index.add(randomSmallInts(20 * d, 41));
    const rows = new Uint32Array(20 * 4).fill(1);
    rows[7] = 20;
    await expect(index.restoreGraph(rows, 'x.idx: graph')).rejects.toThrow('x.idx: graph: graph[7] (row 1) is 20; expected a row in [0, 19] or 0xffffffff (none)');
    await index.dispose();
  });
});
