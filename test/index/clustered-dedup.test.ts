/**
 * Clustered dedup: with every row in every partition it is dedup; with fewer, every pair it reports
 * is one of dedup's (precision 1, the same exact scores), and the clusters are those of its pairs.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { clusteredDedup } from '../../src/jobs/clustered-dedup.js';
import { dedup, groupPairs } from '../../src/jobs/dedup.js';
import { arraySource } from '../../src/common/vector-source.js';
import { cpuBackend } from '../helpers/cpu.js';
import { fioriEmbeddings } from '../helpers/embeddings.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);
const backends = [['cpu', cpuBackend()], ['webgpu', gpu]] as const;

const { x, n, d } = fioriEmbeddings();
const keys = (r: { i: Uint32Array; j: Uint32Array }): string[] => Array.from(r.i, (a, p) => `${a},${r.j[p]}`);

describe('clusteredDedup on the 778 MiniLM embeddings', () => {
  for (const [name, backend] of backends) {
    it.skipIf(!backend)(`${name}: overlap = partitions gives dedup's pairs, scores and clusters`, async () => {
      const exact = await dedup(backend!, x, d, { metric: 'cosine', threshold: 0.9 });
      expect(exact.pairs).toBeGreaterThan(50);
      const r = await clusteredDedup(backend!, x, d, { metric: 'cosine', threshold: 0.9, partitions: 4, overlap: 4 });
      expect(keys(r)).toEqual(keys(exact));
      expect(Array.from(r.score)).toEqual(Array.from(exact.score));
      expect(r.clusters).toEqual(exact.clusters);
      expect(Array.from(r.partitionRows)).toEqual([n, n, n, n]);
      expect(r.scoredFraction).toBe(4);
    });

    it.skipIf(!backend)(`${name}: fewer partitions per row: a subset of dedup's pairs, each with its exact score; more overlap finds more`, async () => {
      const exact = await dedup(backend!, x, d, { metric: 'cosine', threshold: 0.9 });
      const want = new Map(keys(exact).map((k, p) => [k, exact.score[p]]));
      let last = 0;
      for (const overlap of [1, 2, 3]) {
        const r = await clusteredDedup(backend!, x, d, { metric: 'cosine', threshold: 0.9, partitions: 8, overlap });
        const got = keys(r);
        got.forEach((k, p) => expect(want.get(k), k).toBe(r.score[p]));
        expect(got).toEqual([...got].sort((a, b) => Number(a.split(',')[0]) - Number(b.split(',')[0]) || Number(a.split(',')[1]) - Number(b.split(',')[1])));
        expect(r.clusters).toEqual(groupPairs(n, r.i, r.j).clusters);
        expect(r.partitionRows.reduce((s, v) => s + v, 0)).toBe(overlap * n);
        // Partitions nest as overlap grows (the same k-means, the m nearest), so the pairs do too.
        expect(r.pairs).toBeGreaterThanOrEqual(last);
        last = r.pairs;
      }
      expect(last).toBeGreaterThan(0);
    });
  }

  it('a source read block by block gives the same as the array', async () => {
    const backend = cpuBackend();
    const a = await clusteredDedup(backend, x, d, { metric: 'l2', threshold: 0.2, partitions: 6, overlap: 2 });
    const b = await clusteredDedup(backend, arraySource(x, d, 100), d, { metric: 'l2', threshold: 0.2, partitions: 6, overlap: 2 });
    expect(a.pairs).toBeGreaterThan(0);
    expect(keys(b)).toEqual(keys(a));
  });

  it('bad partitions or overlap are refused with the value and the range', async () => {
    const backend = cpuBackend();
    await expect(clusteredDedup(backend, x, d, { metric: 'cosine', threshold: 0.9, partitions: 0 })).rejects.toThrow('partitions must be an integer in [1, 778] (the rows); got 0');
    await expect(clusteredDedup(backend, x, d, { metric: 'cosine', threshold: 0.9, partitions: 779 })).rejects.toThrow('got 779');
    await expect(clusteredDedup(backend, x, d, { metric: 'cosine', threshold: 0.9, partitions: 4, overlap: 5 })).rejects.toThrow('overlap must be an integer in [1, 4] (the partitions); got 5');
    await expect(clusteredDedup(backend, x, d, { metric: 'cosine', threshold: 0.9, partitions: 4, overlap: 1.5 })).rejects.toThrow('got 1.5');
  });
});
