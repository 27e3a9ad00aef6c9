/**
 * `search --index MANIFEST` (here, or with --distributed), `knn-graph --index MANIFEST` and
 * `knn-graph --distributed`: the search-shard and search-merge jobs and their plans
 * (src/cli/cluster/shard-files.ts describes sharded indexes; the jobs' payloads are in
 * src/cli/cluster/job-payloads.ts).
 */
import { join, resolve } from 'node:path';
import type { Backend } from '../../backend/backend.js';
import { readIdFile } from '../../io/id-file.js';
import { loadIndex } from '../../indexes/load-index.js';
import { VectorStreamWriter, commitOutputs } from '../../io/stream-writer.js';
import { type VectorReader, openVectors } from '../../io/vector-reader.js';

import { type ShardResult, mergeTopK } from '../../indexes/shards.js';
import type { VectorIndex } from '../../indexes/vector-index.js';
import { type KindSearchParams, kindSearchParams } from '../../indexes/kind.js';
import { type FlowJob, runFlow } from './flow.js';
import { checkReceipt, checkRunLive, claimRunFolder, inputFile, readCheckedFile, readRowRanges, reading, removeRunFolder, removeStaleOutputTemps, writeCheckedFile, writeReceipt } from './job-files.js';
import { MAX_BLOCKS, MAX_SHARDS, type SearchMergeJob, type SearchPlan, type SearchShardJob } from './job-payloads.js';
import { type ShardSettings, newBuildId, runBuildFlow, trainShards } from './shard-build.js';
import { type ShardRef, checkShardFile, readManifest } from './shard-files.js';

import { Progress } from '../progress.js';
import { UsageError } from '../../errors.js';
import { dropSelf } from '../../common/results.js';

/** Query rows per search-shard job (--query-rows). */
export const DEFAULT_QUERY_ROWS = 65536;

/** Queries per search inside a search-shard job (knn-graph's block). */
const QUERIES_PER_SEARCH = 4096;

export function tilePath(plan: SearchPlan, block: number, shard: number): string {
  return join(plan.tiles, `${block}-${shard}.knn`);
}

/** The result file of `rows * kk` neighbours whose checksum holds, or null (missing or damaged). */
function readResultTile(path: string, rows: number, kk: number): ShardResult | null {
  const n = rows * kk;
  const body = readCheckedFile(path);
  if (body?.byteLength !== n * 20) return null;
  // The scores start at byte 12 n: a copy, since a Float64Array must start at a multiple of 8 (n odd).
  return { labels: new Float64Array(body, 0, n), distances: new Float32Array(body, n * 8, n), scores: new Float64Array(body.slice(n * 12)) };
}

/**
 * The shard index this worker loaded last, kept while jobs of the same shard follow (keyed by
 * path and SHA-256); one still in use by a concurrent job is disposed when that job is done.
 */
let cached: { key: string; index: Promise<VectorIndex>; users: number; stale: boolean } | null = null;

async function withShard<T>(backend: Backend, shard: ShardRef, fn: (index: VectorIndex) => Promise<T>): Promise<T> {
  const key = `${shard.path}\n${shard.sha256}`;
  if (cached?.key !== key) {
    const old = cached;
    if (old && old.users === 0) void old.index.then((i) => i.dispose(), () => {});
    else if (old) old.stale = true;
    process.stderr.write(`loading shard ${shard.path}\n`);
    const index = checkShardFile(shard).then(() => loadIndex(backend, shard.path));
    cached = { key, index, users: 0, stale: false };
  }
  const entry = cached;
  entry.users++;
  try {
    return await fn(await entry.index);
  } catch (err) {
    if (cached === entry) cached = null; // a failed load is tried again by the next job
    entry.stale = true;
    throw err;
  } finally {
    entry.users--;
    if (entry.stale && entry.users === 0) void entry.index.then((i) => i.dispose(), () => {});
  }
}

/** Disposes the cached shard index (the end of a search run in this process). */
export async function releaseShardCache(): Promise<void> {
  const old = cached;
  cached = null;
  if (old && old.users === 0) await old.index.then((i) => i.dispose(), () => {});
  else if (old) old.stale = true;
}

/** One (query block, shard) of a plan: the shard's kk best for the block's query rows, to a result file. */
export async function runSearchShard(backend: Backend, job: SearchShardJob): Promise<number> {
  const { starts, block, kk } = job;
  const rows = starts[block + 1] - starts[block];
  const path = tilePath(job, block, job.shard);
  if (readResultTile(path, rows, kk)) return rows; // done before (a retried job, or a re-run)
  const [xq] = await readRowRanges(job.queries, [[starts[block], starts[block + 1]]]);
  const { filter: filterFile } = job;
  const filter = filterFile === undefined ? undefined : await reading([filterFile], () => readIdFile(filterFile.path));
  const labels = new Float64Array(rows * kk);
  const distances = new Float32Array(rows * kk);
  const scores = new Float64Array(rows * kk);
  const d = rows > 0 ? xq.length / rows : 0;
  await withShard(backend, job.shards[job.shard], async (index) => {
    for (let r0 = 0; r0 < rows; r0 += QUERIES_PER_SEARCH) {
      const n = Math.min(QUERIES_PER_SEARCH, rows - r0);
      const r = await index.search(xq.subarray(r0 * d, (r0 + n) * d), kk, { ...kindSearchParams(job), kFactor: job.kFactor, filter, exactScores: true });
      labels.set(r.labels, r0 * kk);
      distances.set(r.distances, r0 * kk);
      scores.set(r.scores!, r0 * kk);
      // Let the worker renew its lock between searches.
      await new Promise((res) => setImmediate(res));
    }
  });
  writeCheckedFile(path, Buffer.concat([Buffer.from(labels.buffer), Buffer.from(distances.buffer), Buffer.from(scores.buffer)]));
  return rows;
}

/** The outputs of a search's merge, as its receipt lists them. */
function mergeOutputs(job: SearchMergeJob): string[] {
  return job.dist === undefined ? [job.out] : [job.out, job.dist];
}

/**
 * Merges each query block's shard results, in block order, into the outputs (committed together,
 * once the run is seen to live still), and leaves a receipt for the producer; the caller removes
 * the tiles.
 */
export async function runSearchMerge(job: SearchMergeJob): Promise<{ rows: number }> {
  const { starts, kk, k } = job;
  const nq = starts[starts.length - 1];
  const outputs: VectorStreamWriter[] = [];
  try {
    const ids = new VectorStreamWriter(job.out, nq, k, 'id');
    outputs.push(ids);
    if (job.dist !== undefined) outputs.push(new VectorStreamWriter(job.dist, nq, k, 'float'));
    for (let b = 0; b + 1 < starts.length; b++) {
      const rows = starts[b + 1] - starts[b];
      const parts = job.shards.map((_, s) => {
        const t = readResultTile(tilePath(job, b, s), rows, kk);
        if (!t) throw new Error(`result ${b}-${s} of ${job.tiles} is missing or damaged`);
        return t;
      });
      const merged = mergeTopK(parts, rows, kk, job.metric);
      const r = job.excludeSelf ? dropSelf(merged.labels, merged.distances, rows, k, starts[b]) : merged;
      ids.write(r.labels, rows);
      outputs[1]?.write(r.distances, rows);
      await new Promise((res) => setImmediate(res));
    }
    checkRunLive(job.tiles);
  } catch (err) {
    for (const o of outputs) o.abort();
    throw err;
  }
  commitOutputs(outputs);
  writeReceipt(job.tiles, mergeOutputs(job), { rows: nq });
  return { rows: nq };
}

export interface ShardedSearch extends KindSearchParams {
  manifest: string;
  queries: string;
  k: number;
  out: string;
  dist?: string;
  kFactor?: number;
  filter?: string;
  queryRows: number;
  /** A kNN graph of the index's own vectors (queries = the manifest's input): search k + 1, drop each row's id. */
  excludeSelf?: boolean;
}

/** The plan of a search: query blocks, and the run's own tiles folder (claimed last; the caller removes it). */
async function planSearch(o: ShardedSearch): Promise<SearchMergeJob> {
  const { manifest, shards } = readManifest(o.manifest);
  const file = await openVectors(resolve(o.queries));
  const queries = inputFile(file.path, file);
  if (file.rows > 0 && file.dim !== manifest.dim) throw new UsageError(`the queries have dim ${file.dim}; the index has dim ${manifest.dim}`);
  const starts: number[] = [];
  for (let r = 0; r < file.rows; r += o.queryRows) starts.push(r);
  starts.push(file.rows);
  if (starts.length - 1 > MAX_BLOCKS) throw new UsageError(`--query-rows ${o.queryRows} cuts the ${file.rows} queries into ${starts.length - 1} blocks; at most ${MAX_BLOCKS} (raise --query-rows)`);
  if (shards.length > MAX_SHARDS) throw new UsageError(`${o.manifest} lists ${shards.length} shards; a sharded search takes at most ${MAX_SHARDS}`);
  const kk = o.excludeSelf ? o.k + 1 : o.k;
  const out = resolve(o.out);
  return {
    shards,
    metric: manifest.metric,
    queries,
    starts,
    kk,
    ...kindSearchParams(o),
    kFactor: o.kFactor,
    filter: o.filter === undefined ? undefined : inputFile(resolve(o.filter)),
    out,
    dist: o.dist === undefined ? undefined : resolve(o.dist),
    k: o.k,
    excludeSelf: o.excludeSelf ?? false,
    // This run's own (a second run writing the same output has its own), removed however the run ends.
    tiles: claimRunFolder(out, 'tiles'),
  };
}

/** `search --index MANIFEST` without --distributed: every job of the plan here, shard by shard (each loaded once), then the merge; returns the number of shards. */
export async function searchShards(backend: Backend, o: ShardedSearch): Promise<number> {
  const plan = await planSearch(o);
  const blocks = plan.starts.length - 1;
  try {
    const p = new Progress('search (sharded)');
    try {
      for (let shard = 0; shard < plan.shards.length; shard++) {
        for (let block = 0; block < blocks; block++) {
          await runSearchShard(backend, { ...plan, block, shard });
          p.update(shard * blocks + block + 1, plan.shards.length * blocks, `(query block, shard) results`);
        }
      }
    } finally {
      await releaseShardCache();
    }
    await runSearchMerge(plan);
  } finally {
    removeRunFolder(plan.tiles);
  }
  process.stderr.write(`wrote ${o.out}${o.dist ? ` and ${o.dist}` : ''}: ${plan.starts[blocks]} rows of ${o.k} (${plan.shards.length} shards)\n`);
  return plan.shards.length;
}

/** The search plan as search-shard children of one search-merge job, on the workers at `url`. */
async function runSearchFlow(url: string, plan: SearchMergeJob): Promise<void> {
  // Shard by shard: consecutive jobs of one shard, so that a worker mostly finds its shard loaded.
  // Each carries the search plan, not the merge's outputs.
  const { out: _out, dist: _dist, k: _k, excludeSelf: _excludeSelf, ...search } = plan;
  const children: FlowJob[] = [];
  for (let shard = 0; shard < plan.shards.length; shard++) {
    for (let block = 0; block + 1 < plan.starts.length; block++) children.push({ name: 'search-shard', data: { ...search, block, shard } satisfies SearchShardJob });
  }
  await runFlow(url, 'search (distributed)', { name: 'search-merge', data: plan }, children);
}

/**
 * `search --index MANIFEST --distributed URL`. Once the merge is reported done, its receipt must
 * name the outputs as they are (checkReceipt): its row count is what is reported. Returns the
 * number of shards.
 */
export async function distributedSearchShards(url: string, o: ShardedSearch): Promise<number> {
  const t0 = performance.now();
  const plan = await planSearch(o);
  let rows: number;
  try {
    await runSearchFlow(url, plan);
    ({ rows } = checkReceipt(plan.tiles, mergeOutputs(plan), ['rows']));
  } finally {
    // Once the merge is recorded as done (a merge re-run, its worker lost, still finds the tiles), or the run failed.
    removeRunFolder(plan.tiles);
  }
  removeStaleOutputTemps(mergeOutputs(plan));
  const blocks = plan.starts.length - 1;
  process.stderr.write(
    `wrote ${o.out}${o.dist ? ` and ${o.dist}` : ''}: ${rows} rows of ${o.k}; ${blocks * plan.shards.length} (query block, shard) jobs; ${((performance.now() - t0) / 1000).toFixed(2)} s\n`,
  );
  return plan.shards.length;
}

/**
 * `knn-graph --distributed URL` (without --index): trains here on `backend`, builds the shards of
 * the input as build-shard jobs in a directory next to --out, searches the input against them
 * (its own rows, or --queries), writes the outputs and removes the shards.
 */
export async function distributedKnnGraph(
  url: string,
  backend: Backend,
  s: ShardSettings,
  file: VectorReader,
  o: KindSearchParams & { shards: number; k: number; out: string; dist?: string; queries?: string; queryRows: number },
): Promise<void> {
  const t0 = performance.now();
  // This run's own shards (a second run writing the same output has its own), removed however the run ends.
  const dir = claimRunFolder(resolve(o.out), 'shards');
  const manifest = join(dir, 'index.json');
  try {
    const { children, parent } = await trainShards(backend, s, file, o.shards, manifest, join(dir, 'trained.idx'), undefined, newBuildId(), { run: dir }, true);
    await runBuildFlow(url, parent, children);
    await distributedSearchShards(url, { manifest, queries: o.queries ?? file.path, k: o.k, out: o.out, dist: o.dist, queryRows: o.queryRows, ...kindSearchParams(o), excludeSelf: o.queries === undefined });
  } finally {
    // Shards of this run only (they are rebuilt by every run): not worth keeping after a failure.
    removeRunFolder(dir);
  }
  process.stderr.write(`knn-graph: ${((performance.now() - t0) / 1000).toFixed(2)} s in all (${o.shards} shards)\n`);
}
