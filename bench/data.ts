/** Bench data: generated (seeded) or one of the real sets in ../shared/data. */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { clusteredFloats, readFvecs } from 'webgpu-knn';

export const DATA_SETS = ['clustered', 'siftsmall', 'fmnist'] as const;
export type DataSet = (typeof DATA_SETS)[number];

/** ../shared/data beside the project root (dist/bench/ is two levels below it). */
export const SHARED_DATA = fileURLToPath(new URL('../../../shared/data/', import.meta.url));

export interface BenchData {
  name: string;
  xb: Float32Array;
  xq: Float32Array;
  n: number;
  nq: number;
  d: number;
}

/** Real sets ignore n, nq and d (they have their own). */
export function loadBenchData(set: DataSet, n: number, d: number, nq: number, seed: number): BenchData {
  if (set === 'clustered') {
    // As many blobs as sqrt(n): lists of a sqrt-rule IVF hold about one blob each.
    const clusters = Math.max(1, Math.round(Math.sqrt(n)));
    const all = clusteredFloats(n + nq, d, clusters, seed, 0.25);
    return { name: `clustered(${clusters} blobs)`, xb: all.subarray(0, n * d), xq: all.subarray(n * d), n, nq, d };
  }
  const [folder, prefix] = set === 'siftsmall' ? ['siftsmall', 'siftsmall'] : ['fashion-mnist-small', 'fmnistsmall'];
  const dir = `${SHARED_DATA}${folder}/`;
  if (!existsSync(dir)) throw new Error(`${set}: ${dir} not found (the real sets live in ../shared/data)`);
  const base = readFvecs(`${dir}${prefix}_base.fvecs`);
  const query = readFvecs(`${dir}${prefix}_query.fvecs`);
  return { name: set, xb: base.data, xq: query.data, n: base.n, nq: query.n, d: base.d };
}
