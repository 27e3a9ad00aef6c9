/**
 * The real data sets shipped in test/data (compact .bvecs copies of the original .fvecs, decoding
 * to the same float32 values; see test/data/README.md). Never reads anything outside the project.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { readBvecs, readIvecs } from '../../src/io/texmex.js';

export const TEST_DATA = fileURLToPath(new URL('../data/', import.meta.url));

/** The shipped sets: folder under test/data and file prefix, with their documented shapes. */
export const REAL_SETS = [
  { folder: 'siftsmall', prefix: 'siftsmall', n: 10_000, nq: 100, d: 128, gtK: 100 },
  { folder: 'fashion-mnist-small', prefix: 'fmnistsmall', n: 1_000, nq: 500, d: 784, gtK: 100 },
] as const;

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
  const dir = `${TEST_DATA}${folder}/`;
  if (!existsSync(dir)) throw new Error(`real data missing: ${dir} (shipped with the project in test/data)`);
  const base = readBvecs(`${dir}${prefix}_base.bvecs`);
  const query = readBvecs(`${dir}${prefix}_query.bvecs`);
  const gt = readIvecs(`${dir}${prefix}_groundtruth.ivecs`);
  return { name: folder, xb: base.data, xq: query.data, gt: gt.data, n: base.n, nq: query.n, d: base.d, gtK: gt.d };
}
