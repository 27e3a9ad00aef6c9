/**
 * Flat-search benchmark: the same generated data on the WebGPU and CPU backends in one run.
 * Per backend and k: warm-up, repeats, median and spread of upload / compute / readback, queries/s,
 * GFLOP/s (2 * n * d * nq / seconds), recall against exact search, and for WebGPU each kernel's
 * share of GPU time (timestamp queries, where the adapter has them). Writes one JSON line per
 * configuration, then a table with the GPU/CPU throughput ratio.
 */
import type { Backend, Metric, SearchResult, SearchTimings } from 'webgpu-knn';
import { FlatIndex, createBackend, emptyTimings, randomFloats } from 'webgpu-knn';
import { scoresOfIds, tieAwareRecall } from './exact.js';
import { summarize, table } from './stats.js';

export interface FlatBenchOptions {
  n: number;
  d: number;
  nq: number;
  ks: number[];
  metric: Metric;
  backends: ('webgpu' | 'cpu')[];
  warmup: number;
  repeats: number;
  seed: number;
  /** Queries whose exact results (CPU backend) score recall. */
  recallQueries: number;
  log: (line: string) => void;
}

export interface FlatBenchRecord {
  bench: 'flat';
  backend: string;
  adapter: string;
  n: number;
  d: number;
  nq: number;
  k: number;
  metric: Metric;
  repeats: number;
  seconds: { median: number; min: number; max: number; spread: number };
  uploadMs: number;
  computeMs: number;
  readbackMs: number;
  /** Host time of the exact final re-score (src/indexes/rescore.ts). */
  rescoreMs: number;
  qps: number;
  gflops: number;
  recall: number;
  kernelShare?: Record<string, number>;
}

export async function runFlatBench(o: FlatBenchOptions): Promise<FlatBenchRecord[]> {
  o.log(`generating n=${o.n} d=${o.d} nq=${o.nq} (seed ${o.seed})`);
  const xb = randomFloats(o.n * o.d, o.seed);
  const xq = randomFloats(o.nq * o.d, o.seed + 1);
  const nRecall = Math.min(o.nq, o.recallQueries);
  const xqRecall = xq.subarray(0, nRecall * o.d);
  const cpu = await createBackend({ backend: 'cpu' });
  const exactIndex = new FlatIndex(cpu, { dim: o.d, metric: o.metric });
  await exactIndex.add(xb);
  const records: FlatBenchRecord[] = [];
  for (const name of o.backends) {
    const backend: Backend = name === 'cpu' ? cpu : await createBackend({ backend: 'webgpu', timeKernels: true });
    try {
      const index = new FlatIndex(backend, { dim: o.d, metric: o.metric });
      const t0 = performance.now();
      await index.add(xb);
      o.log(`${name}: ${backend.description}; add took ${((performance.now() - t0) / 1000).toFixed(2)} s`);
      for (const k of o.ks) {
        if (k > backend.maxK) {
          o.log(`${name}: skipping k=${k} (above this backend's maximum ${backend.maxK})`);
          continue;
        }
        const exact = await exactIndex.search(xqRecall, k);
        const seconds: number[] = [];
        const phases: SearchTimings[] = [];
        let last: SearchResult | null = null;
        for (let i = 0; i < o.warmup + o.repeats; i++) {
          const timings = emptyTimings();
          const t = performance.now();
          last = await index.search(xq, k, { timings });
          const s = (performance.now() - t) / 1000;
          o.log(`${name} k=${k} ${i < o.warmup ? 'warm-up' : `repeat ${i - o.warmup + 1}/${o.repeats}`}: ${s.toFixed(3)} s`);
          if (i >= o.warmup) {
            seconds.push(s);
            phases.push(timings);
          }
        }
        const sum = summarize(seconds);
        const med = (f: (t: SearchTimings) => number): number => summarize(phases.map(f)).median;
        const record: FlatBenchRecord = {
          bench: 'flat',
          backend: name,
          adapter: backend.description,
          n: o.n,
          d: o.d,
          nq: o.nq,
          k,
          metric: o.metric,
          repeats: o.repeats,
          seconds: sum,
          uploadMs: med((t) => t.uploadMs),
          computeMs: med((t) => t.computeMs),
          readbackMs: med((t) => t.readbackMs),
          rescoreMs: med((t) => t.rescoreMs ?? 0),
          qps: o.nq / sum.median,
          gflops: (2 * o.n * o.d * o.nq) / sum.median / 1e9,
          recall: tieAwareRecall(k, last!.labels.subarray(0, nRecall * k), k, scoresOfIds(xb, xqRecall, nRecall, o.d, exact.labels, k, o.metric), k, xb, xqRecall, o.d, o.metric),
        };
        const kernelMs = phases.map((t) => t.kernelMs).filter((m): m is Record<string, number> => !!m);
        if (kernelMs.length) {
          const names = Object.keys(kernelMs[0]);
          const total = names.reduce((a, n) => a + summarize(kernelMs.map((m) => m[n] ?? 0)).median, 0);
          record.kernelShare = Object.fromEntries(names.map((n) => [n, summarize(kernelMs.map((m) => m[n] ?? 0)).median / total]));
        }
        records.push(record);
        console.log(JSON.stringify(record));
      }
      await index.dispose();
    } finally {
      if (backend !== cpu) backend.dispose();
    }
  }
  const rows = records.map((r) => {
    const cpuQps = records.find((c) => c.backend === 'cpu' && c.k === r.k)?.qps;
    const share = r.kernelShare
      ? `${(100 * ((r.kernelShare.topk ?? 0) + (r.kernelShare['topk-merge'] ?? 0) + (r.kernelShare['select-radix'] ?? 0))).toFixed(1)}%`
      : '-';
    return [
      r.backend,
      String(r.k),
      r.seconds.median.toFixed(3),
      `${(100 * r.seconds.spread).toFixed(1)}%`,
      r.uploadMs.toFixed(1),
      r.computeMs.toFixed(1),
      r.readbackMs.toFixed(1),
      r.rescoreMs.toFixed(1),
      r.qps.toFixed(1),
      r.gflops.toFixed(2),
      r.recall.toFixed(4),
      share,
      r.backend !== 'cpu' && cpuQps ? `${(r.qps / cpuQps).toFixed(2)}x` : '-',
    ];
  });
  console.log(
    `\nflat search: n=${o.n} d=${o.d} nq=${o.nq} metric=${o.metric}, median of ${o.repeats} after ${o.warmup} warm-up\n` +
      table(
        ['backend', 'k', 'median s', 'spread', 'upload ms', 'compute ms', 'readback ms', 'rescore ms', 'queries/s', 'GFLOP/s', 'recall', 'select %', 'vs cpu'],
        rows,
      ),
  );
  return records;
}
