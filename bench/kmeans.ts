/**
 * k-means benchmark: the same data and initial centroids on each backend; seconds per iteration
 * (median over iterations), the objective per iteration, and the GPU/CPU ratio, in one run.
 */
import type { Backend } from 'webgpu-knn';
import { KMeans, createBackend } from 'webgpu-knn';
import type { BenchData } from './data.js';
import { summarize, table } from './stats.js';

export interface KMeansBenchOptions {
  data: BenchData;
  k: number;
  niter: number;
  seed: number;
  backends: ('webgpu' | 'cpu')[];
  log: (line: string) => void;
}

export async function runKMeansBench(o: KMeansBenchOptions): Promise<void> {
  const { data } = o;
  const rows: string[][] = [];
  const perIter: Record<string, number> = {};
  for (const name of o.backends) {
    const backend: Backend = await createBackend({ backend: name });
    try {
      const times: number[] = [];
      let last = 0;
      const km = new KMeans(backend, { dim: data.d });
      const t0 = performance.now();
      const result = await km.train(data.xb, {
        k: o.k,
        niter: o.niter,
        seed: o.seed,
        // Sample nothing away: the benchmark times all n points.
        maxPointsPerCentroid: Math.ceil(data.n / o.k),
        onProgress: (p) => {
          times.push(p.seconds - last);
          last = p.seconds;
          o.log(`${name} iteration ${p.iteration}/${p.niter}: ${p.seconds.toFixed(2)} s so far, objective ${p.objective.toPrecision(7)}${p.repaired ? `, ${p.repaired} empty clusters repaired` : ''}`);
        },
      });
      const total = (performance.now() - t0) / 1000;
      const s = summarize(times);
      perIter[name] = s.median;
      const record = {
        bench: 'kmeans', backend: name, adapter: backend.description, data: data.name, n: result.n, d: data.d, k: o.k,
        niter: o.niter, secondsPerIteration: s, totalSeconds: total, objective: result.objective,
      };
      console.log(JSON.stringify(record));
      rows.push([
        name, String(result.n), String(o.k), s.median.toFixed(3), `${(100 * s.spread).toFixed(1)}%`, total.toFixed(1),
        result.objective[0].toPrecision(6), result.objective[result.objective.length - 1].toPrecision(6),
      ]);
    } finally {
      backend.dispose();
    }
  }
  for (const r of rows) r.push(r[0] !== 'cpu' && perIter.cpu ? `${(perIter.cpu / perIter[r[0]]).toFixed(2)}x` : '-');
  console.log(
    `\nk-means: ${data.name}, d=${data.d}, ${o.niter} iterations, random init (seed ${o.seed})\n` +
      table(['backend', 'n', 'k', 's/iter', 'spread', 'total s', 'objective first', 'objective last', 'vs cpu'], rows),
  );
}
