/** The real data sets in ../shared/data (never copied into the project). */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { readFvecs, readIvecs } from '../../src/io/texmex.js';

export const SHARED_DATA = fileURLToPath(new URL('../../../shared/data/', import.meta.url));

export interface RealSet {
  name: string;
  xb: Float32Array;
  xq: Float32Array;
  gt: Int32Array;
  n: number;
  nq: number;
  d: number;
  gtK: number;
}

export function loadRealSet(folder: string, prefix: string): RealSet {
  const dir = `${SHARED_DATA}${folder}/`;
  if (!existsSync(dir)) throw new Error(`real data missing: ${dir} (expected ../shared/data beside the project)`);
  const base = readFvecs(`${dir}${prefix}_base.fvecs`);
  const query = readFvecs(`${dir}${prefix}_query.fvecs`);
  const gt = readIvecs(`${dir}${prefix}_groundtruth.ivecs`);
  return { name: folder, xb: base.data, xq: query.data, gt: gt.data, n: base.n, nq: query.n, d: base.d, gtK: gt.d };
}
