/**
 * A graph build's progress (GraphIndex.buildGraph, GraphBuildProgress): each phase it runs, in
 * order, its reports counting up to done = total; the exact intermediate graph (src/plans/self-knn.ts)
 * is, on rows whose scores are exact, the graph of one search of every row; an extension reports its added rows;
 * an up-to-date graph reports nothing and a search after buildGraph builds nothing. The CLI's
 * `build` prints the phases (test/cli: the kind's prepare).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { clusteredFloats, randomSmallInts } from '../../src/common/random.js';
import { dropSelf } from '../../src/common/results.js';
import { GraphIndex } from '../../src/indexes/graph/graph-index.js';
import { type GraphBuildProgress, intermediateGraph } from '../../src/indexes/graph/intermediate.js';
import { PAD_ID } from '../../src/kernel-facts.js';
import { cpuBackend } from '../helpers/cpu.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

const cpu = cpuBackend();
const gpu = await gpuBackend();
afterAll(disposeGpuBackends);

/** The phases of `reports` in the order they first came, and checks each counts up to its total. */
function phasesOf(reports: GraphBuildProgress[]): string[] {
  const phases: string[] = [];
  for (const [i, p] of reports.entries()) {
    expect(p.done).toBeGreaterThanOrEqual(0);
    expect(p.done).toBeLessThanOrEqual(p.total);
    if (phases[phases.length - 1] !== p.phase) {
      expect(phases).not.toContain(p.phase); // a phase runs once, all its reports together
      phases.push(p.phase);
    } else expect(p.done).toBeGreaterThanOrEqual(reports[i - 1].done);
    const last = i === reports.length - 1 || reports[i + 1].phase !== p.phase;
    if (last) expect(p.done, `the last report of ${p.phase}`).toBe(p.total);
  }
  return phases;
}

describe('graph build progress', () => {
  it('an exact build: the nearest rows (as each tile of rows is final), pruning, connecting; nothing more once built', async () => {
    const n = 5000;
    const d = 8;
    const index = new GraphIndex(cpu, { dim: d, degree: 8 });
    await index.add(randomSmallInts(n * d, 3));
    const reports: GraphBuildProgress[] = [];
    await index.buildGraph({ onProgress: (p) => reports.push({ ...p }) });
    expect(phasesOf(reports)).toEqual(['intermediate', 'prune', 'connect']);
    const rowsDone = reports.filter((p) => p.phase === 'intermediate').map((p) => p.done);
    expect(rowsDone.length).toBeGreaterThan(3);
    expect(rowsDone[0]).toBe(0);
    expect(reports.find((p) => p.phase === 'intermediate')!.total).toBe(n);
    const rows = index.graphRows;
    // Up to date: no build, no report; a search uses the same graph.
    const again: GraphBuildProgress[] = [];
    await index.buildGraph({ onProgress: (p) => again.push(p) });
    await index.search(randomSmallInts(3 * d, 4), 5);
    expect(again).toEqual([]);
    expect(index.graphRows).toBe(rows);
    await index.dispose();
  });

  for (const [name, backend] of [
    ['cpu', cpu],
    ['webgpu', gpu],
  ] as const) {
    it.skipIf(!backend)(`${name}: the exact intermediate graph (each pair scored once) is the graph of one search of every row`, async () => {
      const n = 4500;
      const d = 6;
      const kin = 16;
      const xb = randomSmallInts(n * d, 5, 8); // small integers: many exact ties
      const index = new GraphIndex(backend!, { dim: d, degree: 8 });
      await index.add(xb);
      const store = (index as unknown as { store: Parameters<typeof intermediateGraph>[1] }).store;
      const { knn } = await intermediateGraph(backend!, store, n, kin, 'l2', { method: 'exact' });
      const whole = await backend!.searchFlat(store, xb, n, kin + 1, 'l2');
      const own = dropSelf(whole.labels, whole.distances, n, kin, 0).labels;
      expect(Array.from(knn)).toEqual(Array.from(own, (v) => (v >= 0 ? v : PAD_ID)));
      await index.dispose();
    });
  }

  it("an 'ivf' build reports its k-means first; an extension reports the added rows it links", async () => {
    const d = 8;
    const x = clusteredFloats(3000, d, 20, 6);
    const index = new GraphIndex(cpu, { dim: d, degree: 8, intermediateGraph: 'ivf', intermediateNprobe: 4 });
    await index.add(x.subarray(0, 2000 * d));
    const reports: GraphBuildProgress[] = [];
    await index.rebuildGraph({ onProgress: (p) => reports.push({ ...p }) });
    expect(phasesOf(reports)).toEqual(['train', 'intermediate', 'prune', 'connect']);
    expect(reports.at(-1)).toEqual({ phase: 'connect', done: 4, total: 4 });
    await index.add(x.subarray(2000 * d, 2500 * d));
    const grown: GraphBuildProgress[] = [];
    await index.buildGraph({ onProgress: (p) => grown.push({ ...p }) });
    expect(phasesOf(grown)).toEqual(['extend', 'connect']);
    expect(grown.filter((p) => p.phase === 'extend').every((p) => p.total === 500)).toBe(true);
    expect(index.extendedRows).toBe(500);
    await index.dispose();
  });
});
