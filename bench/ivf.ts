/**
 * IVF-Flat benchmark: an nprobe sweep against flat search on the same backend. Per nprobe:
 * recall@1 and recall@k against exact (flat) results, queries/s, and the speed-up over flat.
 * Centroids are trained once, on the first backend, and shared, so every backend searches the same
 * lists.
 */
import type { Backend, SearchResult } from 'webgpu-knn';
import { FlatIndex, IvfFlatIndex, createBackend } from 'webgpu-knn';
import type { BenchData } from './data.js';
import { scoresOfIds, tieAwareRecall } from './exact.js';
import { summarize, table } from './stats.js';

export interface IvfBenchOptions {
  data: BenchData;
  k: number;
  nlist: number;
  nprobes: number[];
  niter: number;
  seed: number;
  warmup: number;
  repeats: number;
  backends: ('webgpu' | 'cpu')[];
  log: (line: string) => void;
}

async function timeSearch(o: IvfBenchOptions, run: () => Promise<SearchResult>): Promise<{ seconds: number; spread: number; result: SearchResult }> {
  const times: number[] = [];
  let result: SearchResult | null = null;
  for (let i = 0; i < o.warmup + o.repeats; i++) {
    const t = performance.now();
    result = await run();
    if (i >= o.warmup) times.push((performance.now() - t) / 1000);
  }
  const s = summarize(times);
  return { seconds: s.median, spread: s.spread, result: result! };
}

export async function runIvfBench(o: IvfBenchOptions): Promise<void> {
  const { data, k } = o;
  let centroids: Float32Array | null = null;
  const rows: string[][] = [];
  for (const name of o.backends) {
    const backend: Backend = await createBackend({ backend: name });
    try {
      const flat = new FlatIndex(backend, { dim: data.d });
      await flat.add(data.xb);
      o.log(`${name}: flat search of ${data.nq} queries over ${data.n}`);
      const exact = await timeSearch(o, () => flat.search(data.xq, k));
      await flat.dispose();
      const reference = scoresOfIds(data.xb, data.xq, data.nq, data.d, exact.result.labels, k, 'l2');
      const flatQps = data.nq / exact.seconds;
      rows.push([name, 'flat', '-', '1.000', '1.000', flatQps.toFixed(1), '1.00x']);
      console.log(JSON.stringify({ bench: 'ivf', backend: name, adapter: backend.description, data: data.name, n: data.n, d: data.d, nq: data.nq, k, index: 'Flat', seconds: exact.seconds, qps: flatQps }));

      const ivf = new IvfFlatIndex(backend, { dim: data.d, nlist: o.nlist, niter: o.niter, seed: o.seed,
        onTrainProgress: (p) => o.log(`${name}: k-means iteration ${p.iteration}/${p.niter}, ${p.seconds.toFixed(1)} s`) });
      const t0 = performance.now();
      if (centroids) await ivf.setCentroids(centroids);
      else {
        await ivf.train(data.xb);
        centroids = ivf.centroids;
        o.log(`${name}: trained IVF${o.nlist} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      }
      const t1 = performance.now();
      await ivf.add(data.xb);
      const sizes = ivf.listSizes();
      o.log(`${name}: added ${data.n} vectors in ${((performance.now() - t1) / 1000).toFixed(1)} s; list sizes ${Math.min(...sizes)} .. ${Math.max(...sizes)}`);
      for (const nprobe of o.nprobes.filter((p) => p <= o.nlist)) {
        const run = await timeSearch(o, () => ivf.search(data.xq, k, { nprobe }));
        const r1 = tieAwareRecall(1, run.result.labels, k, reference, k, data.xb, data.xq, data.d, 'l2');
        const rk = tieAwareRecall(k, run.result.labels, k, reference, k, data.xb, data.xq, data.d, 'l2');
        const qps = data.nq / run.seconds;
        o.log(`${name} nprobe=${nprobe}: ${run.seconds.toFixed(3)} s, recall@${k} ${rk.toFixed(3)}`);
        console.log(JSON.stringify({ bench: 'ivf', backend: name, adapter: backend.description, data: data.name, n: data.n, d: data.d, nq: data.nq, k, index: `IVF${o.nlist},Flat`, nprobe, seconds: run.seconds, spread: run.spread, qps, recall1: r1, recallK: rk, speedupOverFlat: qps / flatQps }));
        rows.push([name, `IVF${o.nlist}`, String(nprobe), r1.toFixed(3), rk.toFixed(3), qps.toFixed(1), `${(qps / flatQps).toFixed(2)}x`]);
      }
      await ivf.dispose();
    } finally {
      backend.dispose();
    }
  }
  console.log(
    `\nIVF nprobe sweep: ${data.name}, n=${data.n} d=${data.d} nq=${data.nq} k=${k}, recall against exact search on the same backend\n` +
      table(['backend', 'index', 'nprobe', 'recall@1', `recall@${k}`, 'queries/s', 'vs flat'], rows),
  );
}
