/**
 * Scheduler benchmark: C concurrent callers, each sending single queries in a closed loop (the next
 * as soon as its last returns) through a BatchScheduler over a flat index. Compared, on the same
 * backend and the same queries, with one direct batched search and with single-query searches
 * sent one at a time without the scheduler.
 */
import type { Backend } from 'webgpu-knn';
import { BatchScheduler, FlatIndex, createBackend, randomFloats } from 'webgpu-knn';
import { table } from './stats.js';

export interface SchedulerBenchOptions {
  n: number;
  d: number;
  k: number;
  callers: number[];
  /** Queries per caller (at least 64 in all). */
  perCaller: number;
  maxDelayMs: number;
  seed: number;
  backends: ('webgpu' | 'cpu')[];
  log: (line: string) => void;
}

function percentile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

export async function runSchedulerBench(o: SchedulerBenchOptions): Promise<void> {
  const xb = randomFloats(o.n * o.d, o.seed);
  const maxQ = Math.max(64, ...o.callers.map((c) => c * o.perCaller));
  const xq = randomFloats(maxQ * o.d, o.seed + 1);
  const rows: string[][] = [];
  for (const name of o.backends) {
    const backend: Backend = await createBackend({ backend: name });
    try {
      const index = new FlatIndex(backend, { dim: o.d });
      await index.add(xb);
      await index.search(xq.subarray(0, 8 * o.d), o.k); // warm-up: pipelines, first readback
      // One at a time, no scheduler: 32 queries.
      const single = 32;
      let t = performance.now();
      for (let i = 0; i < single; i++) await index.search(xq.subarray(i * o.d, (i + 1) * o.d), o.k);
      const oneAtATimeQps = single / ((performance.now() - t) / 1000);
      o.log(`${name}: one query at a time without the scheduler: ${oneAtATimeQps.toFixed(1)} queries/s`);
      for (const c of o.callers) {
        const total = Math.max(64, c * o.perCaller);
        const queries = xq.subarray(0, total * o.d);
        t = performance.now();
        await index.search(queries, o.k);
        const batchedQps = total / ((performance.now() - t) / 1000);
        const scheduler = new BatchScheduler(index, { maxBatch: 4096, maxDelayMs: o.maxDelayMs });
        const latencies: number[] = [];
        let next = 0;
        const caller = async (): Promise<void> => {
          for (let i = next++; i < total; i = next++) {
            const t0 = performance.now();
            await scheduler.search(queries.subarray(i * o.d, (i + 1) * o.d), o.k);
            latencies.push(performance.now() - t0);
          }
        };
        t = performance.now();
        await Promise.all(Array.from({ length: c }, caller));
        const seconds = (performance.now() - t) / 1000;
        await scheduler.close();
        const st = scheduler.stats();
        latencies.sort((a, b) => a - b);
        const qps = total / seconds;
        const record = {
          bench: 'scheduler', backend: name, adapter: backend.description, n: o.n, d: o.d, k: o.k, callers: c, queries: total,
          seconds, qps, p50Ms: percentile(latencies, 0.5), p99Ms: percentile(latencies, 0.99), batches: st.batches,
          meanBatch: st.meanBatchSize, directBatchedQps: batchedQps, oneAtATimeQps,
          vsBatched: qps / batchedQps, vsOneAtATime: qps / oneAtATimeQps,
        };
        console.log(JSON.stringify(record));
        o.log(`${name} callers=${c}: ${qps.toFixed(1)} queries/s, p50 ${record.p50Ms.toFixed(1)} ms, p99 ${record.p99Ms.toFixed(1)} ms`);
        rows.push([
          name, String(c), String(total), qps.toFixed(1), record.p50Ms.toFixed(1), record.p99Ms.toFixed(1), st.meanBatchSize.toFixed(1),
          batchedQps.toFixed(1), oneAtATimeQps.toFixed(1), `${record.vsBatched.toFixed(2)}x`, `${record.vsOneAtATime.toFixed(1)}x`,
        ]);
      }
      await index.dispose();
    } finally {
      backend.dispose();
    }
  }
  console.log(
    `\nscheduler: flat index n=${o.n} d=${o.d} k=${o.k}, closed-loop callers sending single queries (maxDelayMs ${o.maxDelayMs})\n` +
      table(['backend', 'callers', 'queries', 'queries/s', 'p50 ms', 'p99 ms', 'mean batch', 'batched q/s', 'one-by-one q/s', 'vs batched', 'vs one-by-one'], rows),
  );
}
