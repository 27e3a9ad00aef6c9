/**
 * Growth of the CAGRA graph (GraphIndex's extend): rows added to a built graph are linked into it
 * rather than rebuilt, the same graph on WebGPU and the CPU; the grown graph's recall against a
 * float64 brute force stays above a floor, every row stays reachable, each row's first half of
 * edges (its best pruned ones) never changes, and growth past GRAPH_EXTEND_MAX_GROWTH (or
 * rebuildGraph) builds the graph anew.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { randomSmallInts } from '../../src/common/random.js';
import { GRAPH_EXTEND_MAX_GROWTH, GraphIndex } from '../../src/indexes/graph/graph-index.js';
import { PAD_ID } from '../../src/kernel-facts.js';
import { cpuBackend } from '../helpers/cpu.js';
import { l2Exact, tieAwareRecall } from '../helpers/compare.js';
import { loadRealSet } from '../helpers/data.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

const gpu = await gpuBackend();
const cpu = cpuBackend();
afterAll(disposeGpuBackends);
const backends = [['cpu', cpu], ['webgpu', gpu]] as const;

/** Recall@10 of a SIFT10K graph grown from half its rows to all (measured 0.999 at itopk 64 from 5,000 to 10,000: docs/graph-index.md). */
const GROWN_RECALL_FLOOR = 0.95;

/** Float64 brute-force k nearest (ids) of each query among the first n rows. */
function bruteForce(xb: Float32Array, n: number, xq: Float32Array, nq: number, d: number, k: number): Int32Array {
  const out = new Int32Array(nq * k);
  for (let q = 0; q < nq; q++) {
    const best = Array.from({ length: n }, (_, i) => [l2Exact(xq, q, xb, i, d), i]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    for (let j = 0; j < k; j++) out[q * k + j] = best[j][1];
  }
  return out;
}

function checkRows(g: Uint32Array, n: number, degree: number): void {
  for (let row = 0; row < n; row++) {
    const edges = Array.from(g.subarray(row * degree, (row + 1) * degree)).filter((e) => e !== PAD_ID);
    expect(edges.includes(row), `row ${row} links itself`).toBe(false);
    expect(new Set(edges).size, `row ${row} repeats an edge`).toBe(edges.length);
    expect(edges.every((e) => e < n), `row ${row} links past ${n}`).toBe(true);
    expect(edges.length, `row ${row} has no edge`).toBeGreaterThan(0);
  }
}

describe('GraphIndex growth', () => {
  for (const [name, backend] of backends) {
    it.skipIf(!backend)(`${name}: SIFT10K's first 2,000 rows grown to 4,000 by two adds: linked, reachable, recall above ${GROWN_RECALL_FLOOR}, first halves kept`, async () => {
      const set = loadRealSet('siftsmall', 'siftsmall');
      const d = set.d;
      const degree = 32;
      const index = new GraphIndex(backend!, { dim: d, degree });
      await index.add(set.xb.subarray(0, 2000 * d));
      const nq = 30;
      const xq = set.xq.subarray(0, nq * d);
      await index.search(xq, 10);
      expect(index.extendedRows).toBe(0);
      const first = index.graphRows!.slice();
      for (const [from, to] of [[2000, 2600], [2600, 4000]]) {
        await index.add(set.xb.subarray(from * d, to * d));
        const r = await index.search(xq, 10);
        expect(index.extendedRows).toBe(to - 2000);
        const g = index.graphRows!;
        expect(g.length).toBe(to * degree);
        checkRows(g, to, degree);
        expect(index.unreachableRows).toBe(0);
        for (let row = 0; row < 2000; row++) {
          expect(Array.from(g.subarray(row * degree, row * degree + degree / 2)), `row ${row}'s first half`).toEqual(Array.from(first.subarray(row * degree, row * degree + degree / 2)));
        }
        const truth = bruteForce(set.xb, to, xq, nq, d, 10);
        const recall = tieAwareRecall(r.labels, 10, truth, 10, nq, (q, id) => l2Exact(xq, q, set.xb, id, d));
        expect(recall).toBeGreaterThanOrEqual(GROWN_RECALL_FLOOR);
      }
      await index.dispose();
    });
  }

  it('more than GRAPH_EXTEND_MAX_GROWTH of the built rows added builds the graph anew, as rebuildGraph does', async () => {
    const d = 8;
    const xb = randomSmallInts(700 * d, 63);
    const index = new GraphIndex(cpu, { dim: d, degree: 8 });
    const xq = xb.subarray(0, 5 * d);
    await index.add(xb.subarray(0, 300 * d));
    await index.search(xq, 5);
    await index.add(xb.subarray(300 * d, (301 + GRAPH_EXTEND_MAX_GROWTH * 300) * d));
    await index.search(xq, 5);
    expect(index.extendedRows).toBe(0);
    const n = index.ntotal;
    await index.add(xb.subarray(n * d, (n + 50) * d));
    await index.search(xq, 5);
    expect(index.extendedRows).toBe(50);
    checkRows(index.graphRows!, n + 50, 8);
    await index.rebuildGraph();
    expect(index.extendedRows).toBe(0);
    checkRows(index.graphRows!, n + 50, 8);
    await index.dispose();
  });

  it.skipIf(!gpu)('WebGPU grows the same graph and returns the same labels as the CPU (small-integer data: exact float32)', async () => {
    const d = 12;
    const xb = randomSmallInts(2400 * d, 61);
    const xq = randomSmallInts(50 * d, 62);
    const out = [];
    for (const backend of [cpu, gpu!]) {
      const index = new GraphIndex(backend, { dim: d, degree: 16 });
      await index.add(xb.subarray(0, 1200 * d));
      await index.search(xq, 10, { itopk: 32 });
      await index.add(xb.subarray(1200 * d, 1500 * d));
      await index.search(xq, 10, { itopk: 32 });
      await index.add(xb.subarray(1500 * d));
      const r = await index.search(xq, 10, { itopk: 32 });
      expect(index.extendedRows).toBe(1200);
      out.push({ graph: index.graphRows!.slice(), labels: Array.from(r.labels), distances: Array.from(r.distances) });
      await index.dispose();
    }
    expect(out[1].graph).toEqual(out[0].graph);
    expect(out[1].labels).toEqual(out[0].labels);
    expect(out[1].distances).toEqual(out[0].distances);
  });
});
