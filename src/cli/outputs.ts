/**
 * The commands' output writers: neighbour lists (search, knn-graph), range-search results (also
 * dedup --against's pairs), and dedup's pairs and clusters (also the distributed reduce's:
 * src/cli/cluster/dedup.ts). Each writes through temporary files committed together at the end,
 * or none after a failure.
 */
import { extname } from 'node:path';
import { AtomicFile, type Output, VectorStreamWriter, commitOutputs } from '../io/stream-writer.js';
import type { VectorReader } from '../io/vector-reader.js';
import type { DedupResult } from '../jobs/dedup.js';
import { knnGraph } from '../jobs/knn-graph.js';
import type { RangeSearchResult } from '../types.js';
import type { SearchParams, VectorIndex } from '../indexes/vector-index.js';
import { type SearchTimings, emptyTimings } from '../types.js';
import { type Values, checkExt, required, text } from './flags.js';
import { Progress } from './progress.js';
import { jsonWanted } from './report.js';

/** Pairs formatted per write of the dedup and range-search outputs (bounded memory however many pairs there are). */
const PAIRS_PER_WRITE = 1 << 16;

/** Queries per range search: its results are held until written. */
const RANGE_QUERIES_PER_SEARCH = 1024;

/** The types of the outputs: neighbour ids (search, knn-graph --out), their distances (--distances), pairs and range-search results. */
export const NEIGHBOUR_FORMATS = ['.ivecs', '.npy', '.csv', '.jsonl'];
export const DISTANCE_FORMATS = ['.fvecs', '.npy', '.csv', '.jsonl'];
export const PAIR_FORMATS = ['.csv', '.jsonl'];

/** The formats of search and knn-graph's outputs as --stdout-format names them (src/cli/stdio.ts). */
export const NEIGHBOUR_STREAMS = { out: NEIGHBOUR_FORMATS.map((f) => f.slice(1)), distances: DISTANCE_FORMATS.map((f) => f.slice(1)) };

/** --out (ids) and --distances, checked for types that can hold them. */
export function neighbourOutputs(v: Values): { out: string; dist: string | undefined } {
  const out = required(v, 'out');
  checkExt(out, NEIGHBOUR_FORMATS, '--out');
  const dist = text(v, 'distances');
  if (dist !== undefined) checkExt(dist, DISTANCE_FORMATS, '--distances');
  return { out, dist };
}

/** Adds `t` (one search's timings) to `total`: every time, and each kernel's. */
function addTimings(total: SearchTimings, t: SearchTimings): void {
  total.uploadMs += t.uploadMs;
  total.computeMs += t.computeMs;
  total.readbackMs += t.readbackMs;
  if (t.rescoreMs !== undefined) total.rescoreMs = (total.rescoreMs ?? 0) + t.rescoreMs;
  for (const [name, ms] of Object.entries(t.kernelMs ?? {})) (total.kernelMs ??= {})[name] = (total.kernelMs[name] ?? 0) + ms;
  if (t.strategy !== undefined) total.strategy = t.strategy;
}

/**
 * The k nearest neighbours in `index` of every row of `source.queries` (or, as a kNN graph, of
 * `source.self`, each row's own vector left out), written block by block as they are found: ids
 * to `out`, distances to `dist`; committed together at the end. Returns the rows written, and with
 * --json the searches' timings summed (SearchTimings; `strategy`: the last block's).
 */
export async function writeNeighbours(
  index: VectorIndex,
  source: { queries?: VectorReader; self?: VectorReader },
  k: number,
  out: string,
  dist: string | undefined,
  label: string,
  params: SearchParams = {},
  /**
   * With `self`: the ids the index was built with, where they are not the row numbers; each row's
   * own id is then left out of its neighbours (knnGraph's `self` leaves out the row number).
   */
  selfIds?: BigInt64Array,
): Promise<{ rows: number; timings?: SearchTimings }> {
  const n = (source.queries ?? source.self)!.rows;
  // Timed only for --json's summary: each block's timings are added up, then the block gets fresh ones.
  const timings = jsonWanted() ? emptyTimings() : undefined;
  if (timings) params = { ...params, timings: emptyTimings() };
  const outputs: VectorStreamWriter[] = [];
  try {
    const ids = new VectorStreamWriter(out, n, k, 'id');
    outputs.push(ids);
    const ds = dist ? new VectorStreamWriter(dist, n, k, 'float') : null;
    if (ds) outputs.push(ds);
    const p = new Progress(label);
    const ownIds = selfIds && source.self;
    await knnGraph(index, {
      ...(ownIds ? { k: k + 1, queries: source.self } : { k, ...source }),
      params,
      onBlock: async (start, rows, found, foundDistances) => {
        const { labels, distances } = ownIds ? dropOwnIds(found, foundDistances, rows, k, (i) => Number(selfIds[start + i])) : { labels: found, distances: foundDistances };
        ids.write(labels, rows);
        ds?.write(distances, rows);
        if (timings) {
          addTimings(timings, params.timings!);
          params.timings = emptyTimings();
        }
        // Let the event loop turn, so that Ctrl-C (which removes the temporary files) is handled
        // between blocks even when the backend computes synchronously (CPU).
        await new Promise((resolve) => setImmediate(resolve));
      },
      onProgress: (done, total) => p.update(done, total),
    });
  } catch (err) {
    for (const o of outputs) o.abort();
    throw err;
  }
  commitOutputs(outputs);
  process.stderr.write(`wrote ${out}${dist ? ` and ${dist}` : ''}: ${n} rows of ${k}\n`);
  return { rows: n, timings };
}

/**
 * Rows' k + 1 neighbours (`labelsIn`, `distancesIn`) without each row's own id (`own(i)` for row
 * i), or, where ties pushed it out of the k + 1, without the last: knnGraph's dropSelf for an
 * index whose ids are not its row numbers.
 */
function dropOwnIds(labelsIn: Float64Array, distancesIn: Float32Array, rows: number, k: number, own: (row: number) => number): { labels: Float64Array; distances: Float32Array } {
  const labels = new Float64Array(rows * k);
  const distances = new Float32Array(rows * k);
  for (let i = 0; i < rows; i++) {
    const from = i * (k + 1);
    const skip = labelsIn.subarray(from, from + k + 1).indexOf(own(i));
    for (let j = 0, o = i * k; o < (i + 1) * k; j++) {
      if (j === skip) continue;
      labels[o] = labelsIn[from + j];
      distances[o++] = distancesIn[from + j];
    }
  }
  return { labels, distances };
}

/**
 * Range-searches every row of `queries` in `index` and writes each result to `out` (.csv with a
 * header of `names`, or .jsonl with those fields): query row, id, distance, each query's results
 * best first; atomically. Returns the number of results.
 */
export async function writeRange(
  index: VectorIndex,
  queries: VectorReader,
  radius: number,
  params: SearchParams,
  out: string,
  names: [string, string, string],
  label: string,
): Promise<number> {
  const csv = extname(out).toLowerCase() === '.csv';
  const file = new AtomicFile(out);
  let results = 0;
  try {
    if (csv) file.write(`${names.join(',')}\n`);
    const p = new Progress(label);
    const d = index.dim;
    for await (const b of queries.blocks()) {
      for (let r0 = 0; r0 < b.rows; r0 += RANGE_QUERIES_PER_SEARCH) {
        const rows = Math.min(RANGE_QUERIES_PER_SEARCH, b.rows - r0);
        const res = await index.rangeSearch(b.data.subarray(r0 * d, (r0 + rows) * d), radius, params);
        writeRangeResults(file, csv, names, b.start + r0, res);
        results += res.labels.length;
        p.update(b.start + r0 + rows, queries.rows, `${results} results so far`);
        // Let Ctrl-C be handled between searches (see writeNeighbours).
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
  } catch (err) {
    file.abort();
    throw err;
  }
  commitOutputs([file]);
  return results;
}

/** Writes range-search results (Faiss's lims layout) of queries q0, q0 + 1, ... as CSV or JSON Lines lines with fields `names`. */
function writeRangeResults(file: AtomicFile, csv: boolean, names: [string, string, string], q0: number, res: RangeSearchResult): void {
  const nq = res.lims.length - 1;
  let lines: string[] = [];
  for (let q = 0; q < nq; q++) {
    for (let j = res.lims[q]; j < res.lims[q + 1]; j++) {
      const values = [q0 + q, res.labels[j], res.distances[j]];
      lines.push(csv ? `${values.join(',')}\n` : `${JSON.stringify(Object.fromEntries(names.map((n, f) => [n, values[f]])))}\n`);
      if (lines.length === PAIRS_PER_WRITE) {
        file.write(lines.join(''));
        lines = [];
      }
    }
  }
  if (lines.length > 0) file.write(lines.join(''));
}

type PairSink = (i: Uint32Array, j: Uint32Array, score: Float64Array) => void;

/**
 * dedup's outputs, shared by the single-process and the distributed dedup: `run` feeds the
 * confirmed pairs, in (i, j) order, to the sink it is given (written as they come: nothing but one
 * block is held); then the clusters; all committed together, or none after a failure (also one
 * that `beforeCommit` throws: the distributed reduce's last look at its run and input).
 */
export async function writeDedupOutputs<R extends Pick<DedupResult, 'clusters' | 'drop'>>(
  out: string,
  clusters: string | undefined,
  run: (onPairs: PairSink) => Promise<R>,
  beforeCommit?: () => void,
): Promise<R> {
  const outputs: Output[] = [];
  let r: R;
  try {
    const pairs = new AtomicFile(out);
    outputs.push(pairs);
    const csv = extname(out).toLowerCase() === '.csv';
    if (csv) pairs.write('i,j,score\n');
    r = await run((i, j, score) => {
      for (let q0 = 0; q0 < i.length; q0 += PAIRS_PER_WRITE) {
        const lines: string[] = [];
        for (let q = q0; q < Math.min(q0 + PAIRS_PER_WRITE, i.length); q++) {
          lines.push(csv ? `${i[q]},${j[q]},${score[q]}\n` : `${JSON.stringify({ i: i[q], j: j[q], score: score[q] })}\n`);
        }
        pairs.write(lines.join(''));
      }
    });
    if (clusters !== undefined) {
      const c = new AtomicFile(clusters);
      outputs.push(c);
      c.write(JSON.stringify({ clusters: r.clusters, drop: Array.from(r.drop) }) + '\n');
    }
    beforeCommit?.();
  } catch (err) {
    for (const o of outputs) o.abort();
    throw err;
  }
  commitOutputs(outputs);
  return r;
}
