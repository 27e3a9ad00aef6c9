/**
 * k-means benchmark: the same data and initial centroids on each backend, with and without bounds
 * (tuning.kmeansBounds); seconds per iteration (median over iterations), the objective per
 * iteration, the GPU/CPU ratio, and whether the bounds gave the same centroids as scoring every
 * point, in one run. Different centroids fail the run (after the table): the bounds promise them.
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
  /** Runs with bounds on (true) and off (false), in this order, for each backend. */
  bounds: boolean[];
  log: (line: string) => void;
}

export async function runKMeansBench(o: KMeansBenchOptions): Promise<void> {
  const { data } = o;
  const rows: string[][] = [];
  const perIter: Record<string, number> = {};
  const centroidsOf: Record<string, Float32Array> = {};
  for (const [name, bounds] of o.backends.flatMap((b) => o.bounds.map((on) => [b, on] as const))) {
    const backend: Backend = await createBackend({ backend: name, tuning: { kmeansBounds: bounds } });
    const config = `${name}, bounds ${bounds ? 'on' : 'off'}`;
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
          o.log(`${config}: iteration ${p.iteration}/${p.niter}: ${p.seconds.toFixed(2)} s so far, objective ${p.objective.toPrecision(7)}${p.repaired ? `, ${p.repaired} empty clusters repaired` : ''}`);
        },
      });
      const total = (performance.now() - t0) / 1000;
      const s = summarize(times);
      perIter[config] = s.median;
      centroidsOf[config] = result.centroids;
      const other = centroidsOf[`${name}, bounds ${bounds ? 'off' : 'on'}`];
      const same = other ? other.every((v, i) => v === result.centroids[i]) : null;
      const record = {
        bench: 'kmeans', backend: name, kmeansBounds: bounds, adapter: backend.description, data: data.name, n: result.n, d: data.d, k: o.k,
        niter: o.niter, secondsPerIteration: s, totalSeconds: total, objective: result.objective, sameCentroidsAsOtherBounds: same,
      };
      console.log(JSON.stringify(record));
      rows.push([
        name, bounds ? 'on' : 'off', same === null ? '-' : same ? 'yes' : 'NO', String(result.n), String(o.k), s.median.toFixed(3), `${(100 * s.spread).toFixed(1)}%`, total.toFixed(1),
        result.objective[0].toPrecision(6), result.objective[result.objective.length - 1].toPrecision(6),
      ]);
    } finally {
      backend.dispose();
    }
  }
  for (const r of rows) {
    const cpu = perIter[`cpu, bounds ${r[1]}`];
    r.push(r[0] !== 'cpu' && cpu ? `${(cpu / perIter[`${r[0]}, bounds ${r[1]}`]).toFixed(2)}x` : '-');
  }
  console.log(
    `\nk-means: ${data.name}, d=${data.d}, ${o.niter} iterations, random init (seed ${o.seed}); same: the centroids equal, bit for bit, those of the other bounds setting\n` +
      table(['backend', 'bounds', 'same', 'n', 'k', 's/iter', 'spread', 'total s', 'objective first', 'objective last', 'vs cpu'], rows),
  );
  const differing = rows.filter((r) => r[2] === 'NO').map((r) => r[0]);
  if (differing.length) throw new Error(`k-means with and without bounds gave different centroids on ${differing.join(', ')}`);
}
