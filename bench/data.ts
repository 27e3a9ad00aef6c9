/**
 * Bench data: generated (seeded), the real sets shipped in test/data, Debian's Fashion-MNIST, or any
 * vector file the library reads, with ground truth where the set has one.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { clusteredFloats, loadFioriCorpus, randomFloats, readIvecs, readVectors } from 'webgpu-knn';

export const DATA_SETS = ['clustered', 'uniform', 'siftsmall', 'fashion-mnist-small', 'fashion-mnist'] as const;
export type DataSet = (typeof DATA_SETS)[number];

/** The project root: the nearest folder above this file with a package.json (bench/ or dist/bench/). */
export const PROJECT_ROOT = ((): string => {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
})();

/** The project's copy of the real sets (uint8 .bvecs that decode to the original float32 values). */
export const PROJECT_DATA = join(PROJECT_ROOT, 'test', 'data');

/** Debian's `dataset-fashion-mnist`: 60,000 train images (the base) and 10,000 test images (queries). */
export const DEBIAN_FASHION_MNIST = '/usr/share/datasets/fashion-mnist';

export interface BenchData {
  name: string;
  xb: Float32Array;
  xq: Float32Array;
  n: number;
  nq: number;
  d: number;
  /** Published neighbour ids, `nq * k`, nearest first (by squared L2), where the set has them. */
  groundTruth: { ids: Int32Array; k: number; source: string } | null;
  /**
   * Self-queries: query q is base row selfRows[q] (xq holds copies of those rows), and its true
   * neighbours are the nearest OTHER rows. Absent for queries apart from the base.
   */
  selfRows?: Int32Array;
}

/**
 * Real sets ignore n and d (they have their own); nq cuts their query set (default: all of it,
 * except Debian's Fashion-MNIST, whose 10,000 test images are cut to nq = 1000 by default).
 */
export async function loadBenchData(set: DataSet, n: number, d: number, nq: number | undefined, seed: number): Promise<BenchData> {
  if (set === 'clustered' || set === 'uniform') {
    const q = nq ?? 1000;
    if (set === 'uniform') {
      return { name: 'uniform', xb: randomFloats(n * d, seed), xq: randomFloats(q * d, seed + 1), n, nq: q, d, groundTruth: null };
    }
    // As many blobs as sqrt(n): lists of a sqrt-rule IVF hold about one blob each.
    const clusters = Math.max(1, Math.round(Math.sqrt(n)));
    const all = clusteredFloats(n + q, d, clusters, seed, 0.25);
    return { name: `clustered(${clusters} blobs)`, xb: all.subarray(0, n * d), xq: all.subarray(n * d), n, nq: q, d, groundTruth: null };
  }
  if (set === 'fashion-mnist') {
    const base = `${DEBIAN_FASHION_MNIST}/train-images-idx3-ubyte.gz`;
    if (!existsSync(base)) throw new Error(`fashion-mnist: ${base} not found (apt-get install dataset-fashion-mnist)`);
    return loadFileData(base, `${DEBIAN_FASHION_MNIST}/t10k-images-idx3-ubyte.gz`, undefined, nq ?? 1000, 'fashion-mnist');
  }
  const [folder, prefix] = set === 'siftsmall' ? ['siftsmall', 'siftsmall'] : ['fashion-mnist-small', 'fmnistsmall'];
  const dir = join(PROJECT_DATA, folder);
  if (!existsSync(dir)) throw new Error(`${set}: ${dir} not found (the real sets ship with the project in test/data)`);
  return loadFileData(join(dir, `${prefix}_base.bvecs`), join(dir, `${prefix}_query.bvecs`), join(dir, `${prefix}_groundtruth.ivecs`), nq, set);
}

/**
 * Any vector files the library reads (`readVectors`). Without a query file the last `nq` rows of
 * the base file (default 1000) are held out as queries. The ground truth is an .ivecs of neighbour
 * ids, one row per query, nearest first, by squared L2.
 */
export async function loadFileData(basePath: string, queryPath: string | undefined, gtPath: string | undefined, nq: number | undefined, name?: string): Promise<BenchData> {
  const base = await readVectors(basePath);
  let xb = base.data;
  let n = base.n;
  let xq: Float32Array;
  let q: number;
  if (queryPath) {
    const query = await readVectors(queryPath);
    if (query.d !== base.d) throw new Error(`${queryPath}: queries have d = ${query.d}; the base ${basePath} has d = ${base.d}`);
    q = Math.min(nq ?? query.n, query.n);
    xq = query.data.subarray(0, q * base.d);
  } else {
    q = nq ?? 1000;
    if (q >= n) throw new Error(`${basePath}: holding out nq = ${q} queries needs more than ${q} rows; the file has ${n}`);
    n -= q;
    xq = xb.subarray(n * base.d);
    xb = xb.subarray(0, n * base.d);
  }
  let groundTruth: BenchData['groundTruth'] = null;
  if (gtPath) {
    const gt = await readIvecs(gtPath);
    if (gt.n < q) throw new Error(`${gtPath}: ${gt.n} ground-truth rows for ${q} queries`);
    for (let i = 0; i < q * gt.d; i++) {
      if (gt.data[i] < 0 || gt.data[i] >= n) throw new Error(`${gtPath}: id ${gt.data[i]} at row ${Math.floor(i / gt.d)} is outside the base (n = ${n})`);
    }
    groundTruth = { ids: gt.data.subarray(0, q * gt.d), k: gt.d, source: gtPath };
  }
  return { name: name ?? basePath, xb, xq, n, nq: q, d: base.d, groundTruth };
}

/**
 * Self-queries over a set's base: nq rows (default all), evenly spread over the base (row
 * floor(i n / nq), so a file sorted by some key is sampled across it), as queries whose own row is
 * not a neighbour. The set's own queries and ground truth are dropped.
 */
export function asSelfQueries(data: BenchData, nq: number | undefined): BenchData {
  const { xb, n, d } = data;
  const q = Math.min(nq ?? n, n);
  const selfRows = Int32Array.from({ length: q }, (_, i) => Math.floor((i * n) / q));
  const xq = new Float32Array(q * d);
  selfRows.forEach((row, i) => xq.set(xb.subarray(row * d, (row + 1) * d), i * d));
  return { name: data.name, xb, n, d, xq, nq: q, groundTruth: null, selfRows };
}

/** A vector file's every row as the base, with self-queries (no rows held out). */
export async function loadSelfData(basePath: string, nq: number | undefined): Promise<BenchData> {
  const base = await readVectors(basePath);
  return asSelfQueries({ name: basePath, xb: base.data, n: base.n, d: base.d, xq: new Float32Array(0), nq: 0, groundTruth: null }, nq);
}

/**
 * `minilm`: the 778 real all-MiniLM-L6-v2 embeddings (384-d) of npm @sap-ux/fiori-docs-embeddings
 * (a devDependency; the demo's corpus), as self-queries: the documents are the queries.
 */
export function loadMiniLm(nq: number | undefined): BenchData {
  const c = loadFioriCorpus();
  return asSelfQueries({ name: 'minilm', xb: c.x, n: c.n, d: c.d, xq: new Float32Array(0), nq: 0, groundTruth: null }, nq);
}

/**
 * `planted`: n rows of d, generated: sqrt(n) blobs (centres uniform in [-1, 1], spread 0.5, so rows
 * of one blob sit near cosine 0.84), of which a `fraction` are replaced by near-copies of other
 * rows: the source plus noise of relative size eps, uniform in [0.01, 0.3] (cosine to the source
 * 1 / sqrt(1 + eps^2): 0.958 .. 0.99995), so some planted pairs fall on either side of a
 * threshold like 0.97. Copies of copies make chains. Seeded.
 */
export function plantedDuplicates(n: number, d: number, seed: number, fraction = 0.05): Float32Array {
  const x = clusteredFloats(n, d, Math.max(1, Math.round(Math.sqrt(n))), seed, 0.5);
  let s = seed * 2654435761 + 1;
  const r = (): number => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const copies = Math.floor(n * fraction);
  for (let c = 0; c < copies; c++) {
    const row = Math.floor(r() * n);
    const src = Math.floor(r() * n);
    if (row === src) continue;
    let norm = 0;
    for (let t = 0; t < d; t++) norm += x[src * d + t] ** 2;
    // Uniform noise of variance 1/3 per coordinate, scaled to a norm of eps * ||source||.
    const scale = (0.01 + 0.29 * r()) * Math.sqrt(norm / d) * Math.sqrt(3);
    for (let t = 0; t < d; t++) x[row * d + t] = x[src * d + t] + (2 * r() - 1) * scale;
  }
  return x;
}
