/**
 * Clustered dedup against exact dedup on one data set: for each (partitions, overlap), the pairs
 * found, pair recall (found / exact; precision is checked to be 1), the share of row pairs scored,
 * and the seconds and speed-up over the exact dedup on the same backend. One JSON line per
 * configuration on stdout, then a table.
 */
import type { Backend, DedupMetric } from 'webgpu-knn';
import { clusteredDedup, createBackend, dedup } from 'webgpu-knn';
import { table } from './stats.js';

export interface ClusteredDedupBenchOptions {
  name: string;
  x: Float32Array;
  n: number;
  d: number;
  metric: DedupMetric;
  threshold: number;
  /** (partitions, overlap) configurations. */
  grid: [number, number][];
  backend: 'webgpu' | 'cpu';
  seed: number;
  log: (line: string) => void;
}

export interface ClusteredDedupRecord {
  data: string;
  n: number;
  d: number;
  metric: DedupMetric;
  threshold: number;
  backend: string;
  partitions: number | null;
  overlap: number | null;
  pairs: number;
  exactPairs: number;
  recall: number;
  scoredFraction: number;
  largestPartition: number;
  seconds: number;
  speedup: number;
}

export async function runClusteredDedupBench(o: ClusteredDedupBenchOptions): Promise<ClusteredDedupRecord[]> {
  const backend: Backend = await createBackend({ backend: o.backend });
  const { x, n, d, metric, threshold } = o;
  const base = { data: o.name, n, d, metric, threshold, backend: backend.description };
  const records: ClusteredDedupRecord[] = [];
  try {
    o.log(`${o.name}: ${n} x ${d}, ${metric} ${threshold}, on ${backend.description}`);
    let t0 = performance.now();
    const exact = await dedup(backend, x, d, { metric, threshold, maxCandidates: Infinity });
    const exactSeconds = (performance.now() - t0) / 1000;
    const truth = new Set<number>();
    for (let p = 0; p < exact.pairs; p++) truth.add(exact.i[p] * n + exact.j[p]);
    const first: ClusteredDedupRecord = {
      ...base, partitions: null, overlap: null, pairs: exact.pairs, exactPairs: exact.pairs, recall: 1, scoredFraction: 1,
      largestPartition: n, seconds: exactSeconds, speedup: 1,
    };
    records.push(first);
    console.log(JSON.stringify(first));
    o.log(`exact: ${exact.pairs} pairs in ${exactSeconds.toFixed(2)} s`);
    for (const [partitions, overlap] of o.grid) {
      t0 = performance.now();
      const r = await clusteredDedup(backend, x, d, { metric, threshold, partitions, overlap, seed: o.seed, maxCandidates: Infinity });
      const seconds = (performance.now() - t0) / 1000;
      let hit = 0;
      for (let p = 0; p < r.pairs; p++) {
        if (!truth.has(r.i[p] * n + r.j[p])) throw new Error(`clustered dedup reported (${r.i[p]}, ${r.j[p]}), which exact dedup did not: precision below 1`);
        hit++;
      }
      const rec: ClusteredDedupRecord = {
        ...base, partitions, overlap, pairs: r.pairs, exactPairs: exact.pairs, recall: exact.pairs === 0 ? 1 : hit / exact.pairs,
        scoredFraction: r.scoredFraction, largestPartition: r.partitionRows.reduce((a, b) => Math.max(a, b), 0), seconds, speedup: exactSeconds / seconds,
      };
      records.push(rec);
      console.log(JSON.stringify(rec));
      o.log(`C ${partitions} m ${overlap}: ${r.pairs} pairs, recall ${rec.recall.toFixed(4)}, ${seconds.toFixed(2)} s`);
    }
  } finally {
    backend.dispose();
  }
  console.log(clusteredDedupTable(records));
  return records;
}

/** The records as a text table: one row per configuration, the exact dedup first. */
export function clusteredDedupTable(records: ClusteredDedupRecord[]): string {
  return table(
    ['partitions', 'overlap', 'pairs found', 'pair recall', 'pairs scored', 'largest partition', 'seconds', 'speed-up'],
    records.map((r) => [
      r.partitions === null ? 'exact' : String(r.partitions),
      r.overlap === null ? '-' : String(r.overlap),
      `${r.pairs} / ${r.exactPairs}`,
      r.recall.toFixed(4),
      `${(100 * r.scoredFraction).toFixed(2)}%`,
      String(r.largestPartition),
      r.seconds.toFixed(2),
      `${r.speedup.toFixed(2)}x`,
    ]),
  );
}
