/**
 * The intermediate graph a CAGRA build prunes: each row's `kin` nearest other rows (PAD_ID where a
 * row has fewer), row-major, `n * kin` slots. Two ways to make it (cuVS builds it by IVF-PQ or
 * NN-descent; we use our own plans):
 *   - 'exact': the rows joined with themselves, each pair scored once (src/plans/self-knn.ts;
 *     where its lists exceed one binding, every row searched for against all), n^2 d / 2 work:
 *     exact, and the default while n^2 d <= GRAPH_EXACT_KNN_MAX_WORK (Fashion-MNIST's 60,000 x 784
 *     is 2.8e12);
 *   - 'ivf': an IVF-Flat index of the rows (nlist = round(sqrt(8 n)), k-means on a seeded sample
 *     of 64 rows a list), each row searched in the nprobe lists nearest it, about nprobe / nlist of
 *     the exact work; a row's own list is always among them, so it finds itself and is left out.
 *     Unless nprobe is given, it is chosen: the smallest of 2, 4, 8, 16 (GRAPH_IVF_NPROBE; none
 *     past nlist) whose graph of RECALL_SAMPLE_ROWS sampled rows has recall GRAPH_IVF_TARGET_RECALL
 *     of their exact graph (a search of 256 rows a try: little beside the build), else the last.
 *     The reported recall is measured on another sample of as many rows, so it is not the one
 *     that chose.
 * Both are deterministic (seeded) and run on either backend. 'exact' gives the same graph on every
 * device; 'ivf' may differ in the few rows whose nprobe-th and next nearest lists nearly tie (IVF
 * probes by float32 scores against fractional centroids, rounded differently per device: 1 row in
 * 1,200 in test/index/graph-intermediate.test.ts), and where a try's recall lies within that
 * rounding of the target, in the nprobe chosen, so in most rows: give intermediateNprobe for
 * the same graph on every device.
 */
import type { Backend } from '../../backend/backend.js';
import { dropSelf } from '../../common/results.js';
import { rng } from '../../common/random.js';
import { InvalidArgumentError } from '../../errors.js';
import { type KernelMetric, PAD_ID } from '../../kernel-facts.js';
import type { BaseStore } from '../../contracts.js';
import { IvfFlatIndex } from '../ivf/ivf-flat-index.js';
import { selfKnn, selfKnnFits } from '../../plans/self-knn.js';

export type IntermediateGraph = 'auto' | 'exact' | 'ivf';

/**
 * The phases of a graph's build (GraphBuildProgress), in their order:
 *   'train'        the k-means of an 'ivf' intermediate graph (its iterations);
 *   'intermediate' each row's nearest rows (rows done; for 'ivf', from the filling of its lists on);
 *   'prune'        the pruning, the reverse edges and the graph's upload (0, then 1);
 *   'connect'      the rounds that link the parts no walk reaches (rounds, up to their most: it
 *                  jumps to the end where no part is left);
 *   'extend'       instead of the first three, the rows added to a built graph, linked into it.
 */
export type GraphBuildPhase = 'train' | 'intermediate' | 'prune' | 'connect' | 'extend';

/** Where a graph's build is: its phase, and `done` of `total` units of it. */
export interface GraphBuildProgress {
  phase: GraphBuildPhase;
  done: number;
  total: number;
}

/** Hears of a graph build's progress (each phase it runs ends with a report of done = total). */
export type GraphBuildReport = (progress: GraphBuildProgress) => void;

/** n^2 d at most for which 'auto' makes the intermediate graph exactly (above: 'ivf'); at d = 128, 176,776 rows. */
export const GRAPH_EXACT_KNN_MAX_WORK = 4e12;
/** The most lists an 'ivf' intermediate graph scans a row where nprobe is chosen (the fixed default until 2026-12-03). */
export const GRAPH_IVF_NPROBE = 16;
/** The sampled rows' recall of their exact intermediate graph at which a chosen nprobe stops growing. */
export const GRAPH_IVF_TARGET_RECALL = 0.95;
/** k-means sample rows per list of an 'ivf' intermediate graph. */
const IVF_TRAIN_ROWS_PER_LIST = 64;
const SEED = 1234;
/** The seed of the sample the reported recall is measured on (not the one that chose nprobe). */
const RECALL_SEED = 4321;

/** How a build makes its intermediate graph, and, for 'ivf', with what and how well. */
export interface IntermediateGraphInfo {
  method: 'exact' | 'ivf';
  nlist?: number;
  /** 'ivf': lists scanned a row; in a plan, absent where the build chooses it. */
  nprobe?: number;
  /** 'ivf': its recall of the exact intermediate graph over RECALL_SAMPLE_ROWS seeded rows. */
  recall?: number;
  /** 'ivf' with nprobe chosen: each nprobe tried on the sampled rows, and their recall, in order. */
  tried?: { nprobe: number; recall: number }[];
}

/** Rows an 'ivf' build checks its intermediate graph's recall on (the flat search of 256 rows: cheap beside the build). */
export const RECALL_SAMPLE_ROWS = 256;

export function checkIntermediateGraph(v: unknown): IntermediateGraph {
  if (v === undefined) return 'auto';
  if (v === 'auto' || v === 'exact' || v === 'ivf') return v;
  throw new InvalidArgumentError(`intermediateGraph must be 'auto', 'exact' or 'ivf'; got ${String(v)}`);
}

/** What 'auto' (or the method asked for) does for n rows of d; `nprobe` undefined: the build chooses it. */
export function intermediatePlan(method: IntermediateGraph, n: number, d: number, nprobe?: number): IntermediateGraphInfo {
  const exact = method === 'exact' || (method === 'auto' && n * n * d <= GRAPH_EXACT_KNN_MAX_WORK);
  if (exact) return { method: 'exact' };
  const nlist = Math.max(1, Math.min(Math.round(Math.sqrt(8 * n)), Math.floor(n / 2)));
  return nprobe === undefined ? { method: 'ivf', nlist } : { method: 'ivf', nlist, nprobe: Math.min(nprobe, nlist) };
}

/** The nprobe values a build tries, smallest first: 2, 4, 8, 16 (GRAPH_IVF_NPROBE), none past nlist. */
export function nprobeTries(nlist: number): number[] {
  const tries: number[] = [];
  for (let p = 2; p < GRAPH_IVF_NPROBE && p < nlist; p *= 2) tries.push(p);
  tries.push(Math.min(GRAPH_IVF_NPROBE, nlist));
  return tries;
}

/**
 * The `n * kin` intermediate graph of the store's rows (the index's prepared rows: normalised for
 * cosine), made as `plan` says, and the plan with, for 'ivf', the graph's measured recall.
 */
export async function intermediateGraph(
  backend: Backend,
  store: BaseStore,
  n: number,
  kin: number,
  metric: KernelMetric,
  plan: IntermediateGraphInfo,
  report: GraphBuildReport = () => {},
): Promise<{ knn: Uint32Array; info: IntermediateGraphInfo }> {
  const knn = new Uint32Array(n * kin);
  /** Puts rows row0 .. row0 + rows - 1's results (kin + 1 a row, the row itself among them) into knn. */
  const put = (labels: ArrayLike<number>, distances: Float32Array, rows: number, row0: number): void => {
    const own = dropSelf(labels, distances, rows, kin, row0).labels;
    for (let j = 0; j < own.length; j++) knn[row0 * kin + j] = own[j] >= 0 ? own[j] : PAD_ID;
  };
  // Every row searched for, a store block a call (progress after each): `search` gives a block's kin + 1 nearest rows.
  const searchAll = async (search: (x: Float32Array, rows: number) => Promise<{ labels: ArrayLike<number>; distances: Float32Array }>): Promise<void> => {
    let row0 = 0;
    for await (const block of store.readRows()) {
      const rows = block.length / store.d;
      const r = await search(block, rows);
      put(r.labels, r.distances, rows, row0);
      row0 += rows;
      report({ phase: 'intermediate', done: row0, total: n });
    }
  };
  if (plan.method === 'exact') {
    report({ phase: 'intermediate', done: 0, total: n });
    if (selfKnnFits(backend.device, store, kin + 1)) {
      // Each pair of rows scored once (the self-join); progress as each tile of rows is final.
      const r = await selfKnn(backend.device, store, kin + 1, metric, (done) => report({ phase: 'intermediate', done, total: n }));
      put(r.labels, r.distances, n, 0);
    } else {
      // Lists past one binding: each row searched for against every row.
      await searchAll((x, rows) => backend.searchFlat(store, x, rows, kin + 1, metric));
    }
    return { knn, info: plan };
  }
  // The rows are prepared already (unit norm for cosine): inner product on them is cosine's order.
  const sample = await exactSample(backend, store, n, kin, metric, RECALL_SAMPLE_ROWS);
  const ivf = new IvfFlatIndex(backend, { dim: store.d, nlist: plan.nlist!, metric: metric === 'l2' ? 'l2' : 'ip' });
  let nprobe = plan.nprobe;
  let tried: { nprobe: number; recall: number }[] = [];
  try {
    const train = (await sampleRows(store, n, Math.min(n, plan.nlist! * IVF_TRAIN_ROWS_PER_LIST))).x;
    await ivf.train(train, { onProgress: (e) => report({ phase: 'train', done: e.iteration, total: e.niter }) });
    // Filling the lists and choosing nprobe belong to the nearest rows' phase.
    report({ phase: 'intermediate', done: 0, total: n });
    for await (const block of store.readRows()) await ivf.add(block);
    if (nprobe === undefined) {
      tried = await tryNprobes(ivf, sample, kin, plan.nlist!);
      nprobe = tried[tried.length - 1].nprobe;
    }
    await searchAll((x) => ivf.search(x, kin + 1, { nprobe }));
  } finally {
    await ivf.dispose();
  }
  const check = tried.length ? await exactSample(backend, store, n, kin, metric, RECALL_SAMPLE_ROWS, RECALL_SEED) : sample;
  const recall = check.recall((i) => knn.subarray(check.rows[i] * kin, (check.rows[i] + 1) * kin));
  return { knn, info: { ...plan, nprobe, recall, ...(tried.length ? { tried } : {}) } };
}

/** The sample's recall at each of nprobeTries(nlist) in turn, up to the first that reaches GRAPH_IVF_TARGET_RECALL (the last tried is the one to use). */
async function tryNprobes(ivf: IvfFlatIndex, sample: ExactSample, kin: number, nlist: number): Promise<{ nprobe: number; recall: number }[]> {
  const tried: { nprobe: number; recall: number }[] = [];
  for (const nprobe of nprobeTries(nlist)) {
    const r = await ivf.search(sample.x, kin + 1, { nprobe });
    const recall = sample.recall((i) => ownNeighbours(r, i, kin, sample.rows[i]));
    tried.push({ nprobe, recall });
    if (recall >= GRAPH_IVF_TARGET_RECALL) break;
  }
  return tried;
}

/** A seeded sample of `m` of the store's `n` rows, in row order: their row numbers and vectors. */
async function sampleRows(store: BaseStore, n: number, m: number, seed = SEED): Promise<{ rows: Uint32Array; x: Float32Array }> {
  const random = rng(seed);
  const pick = new Uint8Array(n);
  // Floyd's sampling: m distinct rows.
  for (let j = n - m; j < n; j++) {
    const t = Math.floor(random() * (j + 1));
    pick[pick[t] ? j : t] = 1;
  }
  const d = store.d;
  const rows = new Uint32Array(m);
  const x = new Float32Array(m * d);
  let row = 0;
  let o = 0;
  for await (const block of store.readRows()) {
    const nb = block.length / d;
    for (let i = 0; i < nb; i++, row++) {
      if (!pick[row]) continue;
      x.set(block.subarray(i * d, (i + 1) * d), d * o);
      rows[o++] = row;
    }
  }
  return { rows, x };
}

interface ExactSample {
  rows: Uint32Array;
  x: Float32Array;
  recall: (graphRow: (i: number) => ArrayLike<number>) => number;
}

/**
 * `m` rows of the store sampled with `seed` (sampleRows) with their exact `kin` nearest other
 * rows (a flat search), and `recall(graphRow)`: the share of those found in the graph rows that `graphRow(i)`
 * gives for sample row i. A neighbour tied with an exact one but not itself among them is not
 * credited: a lower bound where distances tie.
 */
async function exactSample(backend: Backend, store: BaseStore, n: number, kin: number, metric: KernelMetric, m: number, seed = SEED): Promise<ExactSample> {
  const { rows, x } = await sampleRows(store, n, Math.min(m, n), seed);
  const r = await backend.searchFlat(store, x, rows.length, kin + 1, metric);
  const exact = Array.from(rows, (row, i) => Array.from(ownNeighbours(r, i, kin, row)).filter((v) => v >= 0));
  const recall = (graphRow: (i: number) => ArrayLike<number>): number => {
    let found = 0;
    let total = 0;
    exact.forEach((want, i) => {
      const have = new Set(Array.from(graphRow(i), Number));
      total += want.length;
      for (const v of want) if (have.has(v)) found++;
    });
    return total ? found / total : 1;
  };
  return { rows, x, recall };
}

/** Row `i` of a search for `kin + 1` neighbours a query, the query's own row `row` left out: its `kin` nearest other rows. */
function ownNeighbours(r: { labels: Float64Array | Int32Array; distances: Float32Array }, i: number, kin: number, row: number): Float64Array {
  const at = i * (kin + 1);
  return dropSelf(r.labels.subarray(at, at + kin + 1), r.distances.subarray(at, at + kin + 1), 1, kin, row).labels;
}
