/**
 * Beyond one machine (issue 17): `webgpu-knn worker` takes jobs of every kind (JOB_HANDLERS) from
 * a BullMQ queue in Redis, and `dedup --distributed URL` cuts the self-join into block pairs
 * (i <= j) run as the children of one reduce job (a FlowProducer flow). Jobs carry references (paths, row ranges), never vectors:
 * workers share a file system with the CLI.
 *
 * - A tile job writes its candidate pairs to `<tiles dir>/<i>-<j>.pairs` (uint32 (a, b) pairs, then
 *   the SHA-256 of those bytes) through a temporary file renamed into place; a job whose file is
 *   already there with the right checksum is skipped, so a retried or re-run job is harmless.
 * - The reduce reads the rows once, then each row block's pair files in (i, j) order through the
 *   very PairConfirmation and writeDedupOutputs of the single-process dedup: the same output bytes.
 *
 * BullMQ settings (see README, "Distributed dedup"):
 * - lockDuration 60 s (--lock-ms): a job's lock, renewed every lockDuration / 2 while the worker's
 *   event loop turns. A worker that dies (SIGKILL, lost machine) stops renewing; after the lock
 *   expires the next stalled check (stalledInterval = lockDuration) moves the job back to wait and
 *   another worker runs it. Tiles should take well under lockDuration between event-loop turns.
 * - maxStalledCount 3: a job that stalls more often (a tile that kills its workers) fails.
 * - attempts, backoff, removal of finished jobs, and children failing their parent: src/cli/flow.ts,
 *   shared with the sharded search and build (src/cli/shards.ts).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { type Job, UnrecoverableError, Worker } from 'bullmq';
import type { Backend } from '../backend.js';
import { createBackend } from '../create-backend.js';
import { openVectors } from '../io/vector-reader.js';
import { type DedupMetric, PairConfirmation, blockPairCandidates } from '../jobs/dedup.js';
import { TooManyCandidatesError, sortTilePairs } from '../pairs.js';
import { InvalidArgumentError } from '../types.js';
import { checkedBlocks } from '../vector-source.js';
import { writeDedupOutputs } from './commands.js';
import { type BuildManifestJob, type BuildShardJob, type SearchMergeJob, type SearchShardJob, releaseShardCache, runBuildManifest, runBuildShard, runSearchMerge, runSearchShard } from './shards.js';
import { type FlowJob, QUEUE, connection, runFlow } from './flow.js';
import { readCheckedFile, readRowRanges, writeCheckedFile } from './job-files.js';

const DEFAULT_LOCK_MS = 60_000;

/** What every job of one distributed dedup shares. */
interface DedupPlan {
  input: string;
  metric: DedupMetric;
  threshold: number;
  d: number;
  tiles: string;
  /** --max-candidates: the bound on candidate pairs, per tile and in all (null: none). */
  maxCandidates: number | null;
}
/** Block pair (i, j): rows [ri[0], ri[1]) against rows [rj[0], rj[1]) (i == j: the block with itself). Its own rows only, so that B^2 / 2 jobs do not each carry all B blocks. */
interface TileJob extends DedupPlan {
  i: number;
  j: number;
  ri: [number, number];
  rj: [number, number];
}
interface ReduceJob extends DedupPlan {
  n: number;
  /** Row block starts, and n at the end. */
  starts: number[];
  out: string;
  clusters?: string;
}

function tileFile(job: DedupPlan, i: number, j: number): string {
  return join(job.tiles, `${i}-${j}.pairs`);
}

/** The pairs of a tile file whose checksum holds, or null (missing or damaged). */
function readTile(path: string): Uint32Array | null {
  const body = readCheckedFile(path);
  return body && body.byteLength % 8 === 0 ? new Uint32Array(body) : null;
}

async function runTile(backend: Backend, job: TileJob): Promise<number> {
  const path = tileFile(job, job.i, job.j);
  const done = readTile(path);
  if (done) return done.length / 2; // a re-run: the result is already there
  const { ri, rj, i, j } = job;
  // One pass over the file for both blocks (block j's rows lie beyond block i's).
  const [xi, xj = null] = await readRowRanges(job.input, i === j ? [ri] : [ri, rj]);
  const max = job.maxCandidates ?? Infinity;
  let pairs: Uint32Array;
  try {
    pairs = await blockPairCandidates(backend, job.d, job.metric, job.threshold, xi, ri[0], xj, rj[0], max);
  } catch (err) {
    if (err instanceof TooManyCandidatesError) throw new UnrecoverableError(tooMany(job, ` in tile ${i}-${j} alone`));
    throw err;
  }
  writeCheckedFile(path, pairs);
  return pairs.length / 2;
}

async function runReduce(job: ReduceJob): Promise<{ pairs: number; candidates: number; clusters: number; drop: number }> {
  const { starts, n, d } = job;
  // The bound in all, checked from the tiles' sizes before anything is written.
  const blocks = starts.length - 1;
  let candidates = 0;
  for (let i = 0; i < blocks; i++) for (let j = i; j < blocks; j++) candidates += existsSync(tileFile(job, i, j)) ? (statSync(tileFile(job, i, j)).size - 32) / 8 : 0;
  if (candidates > (job.maxCandidates ?? Infinity)) throw new UnrecoverableError(tooMany(job, ` in all (${candidates})`));
  const file = await openVectors(job.input);
  const r = await writeDedupOutputs(job.out, job.clusters, async (sink) => {
    const exact = new PairConfirmation(n, d, job.metric, job.threshold, sink);
    // Checked as dedup checks its input (finite values; l2: norms in range): the same refusal.
    for await (const b of checkedBlocks(file, 'vectors', job.metric !== 'cosine', (x) => x)) exact.addRows(b.data, b.rows, b.start);
    for (let i = 0; i < blocks; i++) {
      const parts: Uint32Array[] = [];
      for (let j = i; j < blocks; j++) {
        const t = readTile(tileFile(job, i, j));
        if (!t) throw new Error(`tile ${i}-${j} of ${job.tiles} is missing or damaged`);
        parts.push(t);
      }
      const all = new Uint32Array(parts.reduce((s, p) => s + p.length, 0));
      parts.reduce((o, p) => (all.set(p, o), o + p.length), 0);
      exact.confirm(sortTilePairs(all, starts[i], starts[i + 1] - starts[i], false), starts[i + 1]);
      // Let the worker renew its lock between row blocks.
      await new Promise((res) => setImmediate(res));
    }
    return { ...exact.groups.result(), pairs: exact.pairs, candidates: exact.candidates };
  });
  return { pairs: r.pairs, candidates: r.candidates, clusters: r.clusters.length, drop: r.drop.length };
}

function tooMany(job: DedupPlan, where: string): string {
  return `the threshold lets through more than ${job.maxCandidates} candidate pairs${where}; use a stricter threshold or raise --max-candidates`;
}

/** What a worker does with each job name (the data is the job's, as its producer wrote it). */
const JOB_HANDLERS: Record<string, (backend: Backend, data: unknown) => Promise<unknown>> = {
  'self-join-tile': (backend, data) => runTile(backend, data as TileJob),
  'dedup-reduce': (_, data) => runReduce(data as ReduceJob),
  'build-shard': (backend, data) => runBuildShard(backend, data as BuildShardJob),
  'build-manifest': (_, data) => runBuildManifest(data as BuildManifestJob),
  'search-shard': (backend, data) => runSearchShard(backend, data as SearchShardJob),
  'search-merge': (_, data) => runSearchMerge(data as SearchMergeJob),
};

/** `webgpu-knn worker`: runs until SIGTERM / SIGINT, then finishes its current jobs and exits. */
export async function runWorker(url: string, choice: 'auto' | 'webgpu' | 'cpu', concurrency: number, lockMs = DEFAULT_LOCK_MS): Promise<void> {
  const backend = await createBackend({ backend: choice });
  process.stderr.write(`worker: backend ${backend.description}; queue ${QUEUE} at ${url}\n`);
  const worker = new Worker(
    QUEUE,
    async (job: Job) => {
      const handler = JOB_HANDLERS[job.name];
      if (!handler) throw new UnrecoverableError(`unknown job ${job.name}: is this worker older than the command that queued it?`);
      // A search's cached shard index is let go once other work comes (its memory is the device's).
      if (job.name !== 'search-shard') await releaseShardCache();
      try {
        return await handler(backend, job.data as unknown);
      } catch (err) {
        // Bad input (a changed shard, a bad file) fails the same way again: no retries.
        if (err instanceof InvalidArgumentError) throw new UnrecoverableError(err.message);
        throw err;
      }
    },
    { connection: connection(url), concurrency, lockDuration: lockMs, stalledInterval: lockMs, maxStalledCount: 3 },
  );
  // One line per job taken and finished: what an operator (and the kill test) reads to see which worker held which job.
  worker.on('active', (job) => process.stderr.write(`worker: job ${job.name} ${job.id} started\n`));
  worker.on('completed', (job) => process.stderr.write(`worker: job ${job.name} ${job.id} completed\n`));
  worker.on('failed', (job, err) => process.stderr.write(`worker: job ${job?.name} ${job?.id} failed: ${err.message}\n`));
  await new Promise<void>((res) => {
    const stop = () => res();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  await worker.close();
  await releaseShardCache();
  backend.dispose();
}

/** `dedup --distributed URL`: enqueues the flow and waits for its reduce, with progress on stderr. */
export async function distributedDedup(
  url: string,
  opts: { input: string; metric: DedupMetric; threshold: number; out: string; clusters?: string; tileRows: number; maxCandidates: number },
): Promise<void> {
  const input = resolve(opts.input);
  const out = resolve(opts.out);
  const file = await openVectors(input);
  const n = file.rows;
  const starts: number[] = [];
  for (let r = 0; r < n; r += opts.tileRows) starts.push(r);
  starts.push(n);
  const st = statSync(input);
  // Tile files of one (input, settings): a re-run of the same dedup reuses finished tiles.
  const key = createHash('sha256').update(JSON.stringify([input, st.size, st.mtimeMs, opts.metric, opts.threshold, opts.tileRows])).digest('hex').slice(0, 12);
  const tiles = join(dirname(out), `.${basename(out)}.webgpu-knn-tiles-${key}`);
  mkdirSync(tiles, { recursive: true });
  const maxCandidates = Number.isFinite(opts.maxCandidates) ? opts.maxCandidates : null;
  const base: DedupPlan = { input, metric: opts.metric, threshold: opts.threshold, d: file.dim, tiles, maxCandidates };
  const children: FlowJob[] = [];
  const rows = (b: number): [number, number] => [starts[b], starts[b + 1]];
  for (let i = 0; i + 1 < starts.length; i++) {
    for (let j = i; j + 1 < starts.length; j++) children.push({ name: 'self-join-tile', data: { ...base, i, j, ri: rows(i), rj: rows(j) } satisfies TileJob });
  }
  const reduce: ReduceJob = { ...base, n, starts, out, clusters: opts.clusters === undefined ? undefined : resolve(opts.clusters) };
  const t0 = performance.now();
  const candidatesSoFar = async (job: Job): Promise<string> => {
    const values = await job.getChildrenValues<number>();
    return `tiles; ${Object.values(values).reduce((s, v) => s + v, 0)} candidate pairs so far`;
  };
  const r = (await runFlow(url, 'dedup (distributed)', { name: 'dedup-reduce', data: reduce }, children, candidatesSoFar)) as {
    pairs: number;
    candidates: number;
    clusters: number;
    drop: number;
  };
  // Removed here, once the reduce is recorded as done: a reduce re-run (its worker lost) still finds them.
  rmSync(tiles, { recursive: true, force: true });
  process.stderr.write(
    `${r.pairs} pairs (${r.candidates} candidates checked) in ${r.clusters} clusters; ${r.drop} ids to drop; ` +
      `${children.length} tiles; ${((performance.now() - t0) / 1000).toFixed(2)} s; wrote ${opts.out}${opts.clusters ? ` and ${opts.clusters}` : ''}\n`,
  );
}
