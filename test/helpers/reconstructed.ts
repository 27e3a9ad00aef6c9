/**
 * Checking coded indexes: a search ranks by the distance to each vector's reconstruction, so its
 * answer must equal a float64 brute force over the reconstructions (rows by id).
 */
import { expect } from 'vitest';
import type { Metric, SearchResult } from '../../src/types.js';
import { normalizeRows } from '../../src/types.js';

export type BruteForce = { labels: number[]; distances: number[] }[];

/**
 * Float64 brute force of the `nq` queries `xq` over `rows` (n * d, by id = row; an id whose row
 * `allowed` refuses is skipped), ties on the smaller id. Cosine on codes: the normalised query
 * against the reconstruction of the normalised vector (whose norm is not 1), by inner product, as
 * Faiss ranks normalised data; pass `exactCosine` for float32 rows (true cosine).
 */
export function bruteForce(metric: Metric, xq: Float32Array, nq: number, d: number, rows: Float32Array, allowed: (id: number) => boolean, k: number): BruteForce {
  const q = metric === 'cosine' ? normalizeRows(xq, d) : xq;
  const n = rows.length / d;
  const out: BruteForce = [];
  for (let r = 0; r < nq; r++) {
    const scored: { id: number; s: number }[] = [];
    for (let i = 0; i < n; i++) {
      if (!allowed(i)) continue;
      let s = 0;
      if (metric === 'l2') for (let j = 0; j < d; j++) s += (q[r * d + j] - rows[i * d + j]) ** 2;
      else for (let j = 0; j < d; j++) s += q[r * d + j] * rows[i * d + j];
      scored.push({ id: i, s });
    }
    scored.sort((a, b) => (metric === 'l2' ? a.s - b.s : b.s - a.s) || a.id - b.id);
    const top = scored.slice(0, k);
    out.push({ labels: top.map((t) => t.id), distances: top.map((t) => Math.fround(t.s)) });
  }
  return out;
}

/**
 * Distances position by position; labels run by run of equal distances (codes make exact ties),
 * the last run of a row only as far as it goes, since the kernels' cut decides which of more tied
 * rows than the re-score margin come back (src/indexes/rescore.ts).
 */
export function expectEqual(got: SearchResult, want: BruteForce, k: number, what: string): void {
  want.forEach((w, r) => {
    const m = w.labels.length;
    w.distances.forEach((v, j) => expect(Math.abs(got.distances[r * k + j] - v) <= 1e-5 * Math.max(1, Math.abs(v)), `${what}: row ${r} distance ${j}: ${got.distances[r * k + j]} vs ${v}`).toBe(true));
    for (let j = 0; j < m; ) {
      let e = j + 1;
      while (e < m && w.distances[e] === w.distances[j]) e++;
      const gotRun = Array.from(got.labels.subarray(r * k + j, r * k + e)).sort((a, b) => a - b);
      const wantRun = w.labels.slice(j, e).sort((a, b) => a - b);
      if (e < m || m < k) expect(gotRun, `${what}: row ${r} positions ${j}..${e - 1}`).toEqual(wantRun);
      j = e;
    }
    expect(Array.from(got.labels.subarray(r * k + m, (r + 1) * k)).every((l) => l === -1), `${what}: row ${r} padding`).toBe(true);
  });
}
