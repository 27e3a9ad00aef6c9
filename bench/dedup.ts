/**
 * Dedup benchmark: near-duplicate pairs of a vector file on each backend in one run, timed, and
 * checked against an exact float64 brute force over all pairs.
 *
 * The brute force visits rows in order of their norm and compares a row only with rows whose norm
 * differs by at most sqrt(threshold) (for l2; |‖a‖ - ‖b‖| <= ‖a - b‖, so no pair within the radius
 * is skipped), stopping each sum once it passes the threshold: exact, and fast enough for 60,000
 * Fashion-MNIST images. For cosine it compares every pair.
 */
import type { Backend, DedupMetric } from 'webgpu-knn';
import { createBackend, dedup, readVectors } from 'webgpu-knn';
import { table } from './stats.js';

export interface DedupBenchOptions {
  input: string;
  metric: DedupMetric;
  threshold: number;
  backends: ('webgpu' | 'cpu')[];
  verify: boolean;
  log: (line: string) => void;
}

/** Exact float64 pairs, as "i,j" keys sorted by (i, j). */
export function bruteForcePairs(x: Float32Array, n: number, d: number, metric: DedupMetric, t: number): Uint32Array {
  const norm = new Float64Array(n);
  for (let a = 0; a < n; a++) {
    let s = 0;
    for (let k = 0; k < d; k++) s += x[a * d + k] * x[a * d + k];
    norm[a] = Math.sqrt(s);
  }
  const out: number[] = [];
  if (metric === 'l2') {
    const order = Array.from({ length: n }, (_, a) => a).sort((a, b) => norm[a] - norm[b]);
    const reach = Math.sqrt(t);
    for (let p = 0; p < n; p++) {
      const a = order[p];
      for (let q = p + 1; q < n && norm[order[q]] - norm[a] <= reach * (1 + 1e-12) + 1e-12; q++) {
        const b = order[q];
        let s = 0;
        for (let k = 0; k < d && s <= t; k++) {
          const diff = x[a * d + k] - x[b * d + k];
          s += diff * diff;
        }
        if (s <= t) out.push(Math.min(a, b), Math.max(a, b));
      }
    }
  } else {
    for (let a = 0; a < n; a++) {
      for (let b = a + 1; b < n; b++) {
        let s = 0;
        for (let k = 0; k < d; k++) s += x[a * d + k] * x[b * d + k];
        const den = norm[a] * norm[b];
        if ((den > 0 ? s / den : 0) >= t) out.push(a, b);
      }
    }
  }
  const pairs = Array.from({ length: out.length / 2 }, (_, p) => [out[2 * p], out[2 * p + 1]]).sort((u, v) => u[0] - v[0] || u[1] - v[1]);
  return Uint32Array.from(pairs.flat());
}

export async function runDedupBench(o: DedupBenchOptions): Promise<void> {
  const file = await readVectors(o.input);
  o.log(`${o.input}: ${file.n} x ${file.d}`);
  const rows: string[][] = [];
  const found: Record<string, Uint32Array> = {};
  for (const name of o.backends) {
    const backend: Backend = await createBackend({ backend: name });
    try {
      const t0 = performance.now();
      let last = 0;
      const r = await dedup(backend, file.data, file.d, {
        metric: o.metric,
        threshold: o.threshold,
        onProgress: (p) => {
          const now = performance.now();
          if (now - last > 10_000 || p.rowsDone === p.n) {
            last = now;
            o.log(`${name}: ${p.rowsDone}/${p.n} rows, ${p.candidates} candidates, ${((now - t0) / 1000).toFixed(0)} s`);
          }
        },
      });
      const seconds = (performance.now() - t0) / 1000;
      const pairs = new Uint32Array(r.i.length * 2);
      r.i.forEach((a, p) => pairs.set([a, r.j[p]], 2 * p));
      found[name] = pairs;
      console.log(JSON.stringify({ bench: 'dedup', backend: name, adapter: backend.description, input: o.input, n: file.n, d: file.d, metric: o.metric, threshold: o.threshold, seconds, pairs: r.i.length, candidates: r.candidates, clusters: r.clusters.length, drop: r.drop.length }));
      rows.push([name, String(r.i.length), String(r.candidates), String(r.clusters.length), String(r.drop.length), seconds.toFixed(1)]);
    } finally {
      backend.dispose();
    }
  }
  let verdict = '';
  if (o.verify) {
    const t0 = performance.now();
    const exact = bruteForcePairs(file.data, file.n, file.d, o.metric, o.threshold);
    const secs = (performance.now() - t0) / 1000;
    const same = (a: Uint32Array): boolean => a.length === exact.length && a.every((v, k) => v === exact[k]);
    verdict = `\nfloat64 brute force: ${exact.length / 2} pairs in ${secs.toFixed(1)} s; ` +
      Object.entries(found).map(([name, p]) => `${name} ${same(p) ? 'matches it exactly' : 'DIFFERS'}`).join(', ');
    console.log(JSON.stringify({ bench: 'dedup', backend: 'float64 brute force', pairs: exact.length / 2, seconds: secs, matches: Object.fromEntries(Object.entries(found).map(([k, p]) => [k, same(p)])) }));
  }
  console.log(
    `\ndedup: ${o.input} (${file.n} x ${file.d}), ${o.metric} ${o.metric === 'l2' ? '<=' : '>='} ${o.threshold}\n` +
      table(['backend', 'pairs', 'candidates', 'clusters', 'drop', 'seconds'], rows) + verdict,
  );
}
