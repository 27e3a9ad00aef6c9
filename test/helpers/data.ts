/**
 * The real data sets shipped in test/data (compact .bvecs copies of the original .fvecs, decoding
 * to the same float32 values; see test/data/README.md). Never reads anything outside the project.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { readIvecs, readVectors } from '../../src/io/vector-reader.js';

export const TEST_DATA = fileURLToPath(new URL('../data/', import.meta.url));

/** The shipped sets: folder under test/data and file prefix, with their documented shapes. */
export const REAL_SETS = [
  { folder: 'siftsmall', prefix: 'siftsmall', n: 10_000, nq: 100, d: 128, gtK: 100 },
  { folder: 'fashion-mnist-small', prefix: 'fmnistsmall', n: 1_000, nq: 500, d: 784, gtK: 100 },
] as const;

/** Reference data made by a script in test/data (see its README), listed in SHA256SUMS beside the sets. */
export const SQ_FIXTURE = 'sq/faiss-sq-1.7.3.json';
export const DERIVED_FILES = [SQ_FIXTURE] as const;

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

async function readRealSet(folder: string, prefix: string): Promise<RealSet> {
  const dir = `${TEST_DATA}${folder}/`;
  const base = await readVectors(`${dir}${prefix}_base.bvecs`);
  const query = await readVectors(`${dir}${prefix}_query.bvecs`);
  const gt = await readIvecs(`${dir}${prefix}_groundtruth.ivecs`);
  return { name: folder, xb: base.data, xq: query.data, gt: gt.data, n: base.n, nq: query.n, d: base.d, gtK: gt.d };
}

// The reader is asynchronous and tests build their cases from the sets as they are collected, so the
// shipped sets (about 2 MB) are read once, when this module loads.
const shipped = new Map<string, RealSet>();
for (const s of REAL_SETS) {
  if (existsSync(`${TEST_DATA}${s.folder}/`)) shipped.set(`${s.folder}/${s.prefix}`, await readRealSet(s.folder, s.prefix));
}

/** A shipped set, in arrays of its own (the caller may change them). */
export function loadRealSet(folder: string, prefix: string): RealSet {
  const set = shipped.get(`${folder}/${prefix}`);
  if (!set) throw new Error(`real data missing: ${TEST_DATA}${folder}/${prefix}_* (shipped with the project in test/data)`);
  return { ...set, xb: set.xb.slice(), xq: set.xq.slice(), gt: set.gt.slice() };
}
