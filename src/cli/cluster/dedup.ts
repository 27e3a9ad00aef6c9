/**
 * Beyond one machine (issue 17): `dedup --distributed URL` cuts the self-join into block pairs
 * (i <= j) run as the children of one reduce job (a FlowProducer flow) by `webgpu-knn worker`
 * processes (src/cli/cluster/worker.ts). Jobs carry references (paths, row ranges), never vectors:
 * workers share a file system with the CLI.
 *
 * - A tile job writes its candidate pairs to `<tiles dir>/<i>-<j>.pairs` (uint32 (a, b) pairs, then
 *   the SHA-256 of those bytes) through a temporary file renamed into place; a job whose file is
 *   already there with the right checksum is skipped, so a retried or re-delivered job is harmless.
 *   The tiles folder is the run's own (src/cli/cluster/job-files.ts, claimRunFolder), removed when the
 *   command ends, however it ends; the jobs work only while the command lives (its heartbeat).
 * - The plan carries the input's size and mtime: every job refuses a file changed since.
 * - The reduce reads the rows once, then each row block's pair files in (i, j) order through the
 *   very PairConfirmation and writeDedupOutputs of the single-process dedup: the same output bytes.
 *   Right before it commits them it looks at its run and input once more; once they are in place
 *   it leaves a receipt in the tiles folder, which the command checks against the outputs before
 *   it reports the receipt's figures (Redis's word that the run is done is not enough).
 */
import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Job } from 'bullmq';
import { queuePackages } from './queue-packages.js';
import type { Backend } from '../../backend/backend.js';
import { openVectors } from '../../io/vector-reader.js';
import { type DedupMetric, PairConfirmation, blockPairCandidates } from '../../jobs/dedup.js';
import { sortTilePairs } from '../../common/pairs.js';
import { checkVectors } from '../../types.js';
import { checkedBlocks } from '../../common/vector-source.js';
import { writeDedupOutputs } from '../outputs.js';
import { type FlowJob, runFlow } from './flow.js';
import { checkInputs, checkReceipt, checkRunLive, claimRunFolder, inputFile, readCheckedFile, readRowRanges, removeRunFolder, removeStaleOutputTemps, writeCheckedFile, writeReceipt } from './job-files.js';
import { type DedupPlan, MAX_BLOCKS, type ReduceJob, type TileJob } from './job-payloads.js';
import { TooManyCandidatesError, UsageError } from '../../errors.js';

export function tileFile(job: DedupPlan, i: number, j: number): string {
  return join(job.tiles, `${i}-${j}.pairs`);
}

/** The pairs of a tile file whose checksum holds, or null (missing or damaged). */
function readTile(path: string): Uint32Array | null {
  const body = readCheckedFile(path);
  return body && body.byteLength % 8 === 0 ? new Uint32Array(body) : null;
}

export async function runTile(backend: Backend, job: TileJob): Promise<number> {
  const path = tileFile(job, job.i, job.j);
  const done = readTile(path);
  if (done) return done.length / 2; // a re-run: the result is already there
  const { ri, rj, i, j } = job;
  // One pass over the file for both blocks (block j's rows lie beyond block i's).
  const [xi, xj = null] = await readRowRanges(job.input, i === j ? [ri] : [ri, rj]);
  // Checked as dedup and the reduce check them, so that a non-finite value fails the run at its first tile.
  checkVectors(xi, job.d, `${job.input.path}:`, true, job.metric !== 'cosine', ri[0]);
  if (xj) checkVectors(xj, job.d, `${job.input.path}:`, true, job.metric !== 'cosine', rj[0]);
  const max = job.maxCandidates ?? Infinity;
  let pairs: Uint32Array;
  try {
    pairs = await blockPairCandidates(backend, job.d, job.metric, job.threshold, xi, ri[0], xj, rj[0], max);
  } catch (err) {
    if (err instanceof TooManyCandidatesError) throw new (await queuePackages()).bullmq.UnrecoverableError(tooMany(job, ` in tile ${i}-${j} alone`));
    throw err;
  }
  writeCheckedFile(path, pairs);
  return pairs.length / 2;
}

export async function runReduce(job: ReduceJob): Promise<{ pairs: number; candidates: number; clusters: number; drop: number }> {
  const { starts, n, d } = job;
  // The bound in all, checked from the tiles' sizes before anything is written.
  const blocks = starts.length - 1;
  let candidates = 0;
  for (let i = 0; i < blocks; i++) for (let j = i; j < blocks; j++) candidates += existsSync(tileFile(job, i, j)) ? (statSync(tileFile(job, i, j)).size - 32) / 8 : 0;
  if (candidates > (job.maxCandidates ?? Infinity)) throw new (await queuePackages()).bullmq.UnrecoverableError(tooMany(job, ` in all (${candidates})`));
  checkInputs(job.input);
  const file = await openVectors(job.input.path);
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
  }, () => {
    // What was read is the plan's input, and the run still wants it: only then are the outputs replaced.
    checkInputs(job.input);
    checkRunLive(job.tiles);
  });
  const result = { pairs: r.pairs, candidates: r.candidates, clusters: r.clusters.length, drop: r.drop.length };
  writeReceipt(job.tiles, reduceOutputs(job), result);
  return result;
}

/** The outputs of a dedup's reduce, as its receipt lists them. */
function reduceOutputs(job: ReduceJob): string[] {
  return job.clusters === undefined ? [job.out] : [job.out, job.clusters];
}

function tooMany(job: DedupPlan, where: string): string {
  return `the threshold lets through more than ${job.maxCandidates} candidate pairs${where}; use a stricter threshold or raise --max-candidates`;
}

/** `dedup --distributed URL`: enqueues the flow and waits for its reduce, with progress on stderr; returns the reduce's counts and the tiles. */
export async function distributedDedup(
  url: string,
  opts: { input: string; metric: DedupMetric; threshold: number; out: string; clusters?: string; tileRows: number; maxCandidates: number },
): Promise<Record<string, number>> {
  const out = resolve(opts.out);
  const file = await openVectors(resolve(opts.input));
  const input = inputFile(file.path, file);
  const n = file.rows;
  const starts: number[] = [];
  for (let r = 0; r < n; r += opts.tileRows) starts.push(r);
  starts.push(n);
  if (starts.length - 1 > MAX_BLOCKS) throw new UsageError(`--tile-rows ${opts.tileRows} cuts the ${n} rows into ${starts.length - 1} blocks; at most ${MAX_BLOCKS} (raise --tile-rows)`);
  // This run's own tiles folder (a second run writing the same output has its own), removed however the run ends.
  const tiles = claimRunFolder(out, 'tiles');
  try {
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
      // Counts from Redis, for the progress line only: anything but a count is left out.
      const values = Object.values(await job.getChildrenValues<unknown>()).filter((v): v is number => Number.isSafeInteger(v));
      return `tiles; ${values.reduce((s, v) => s + v, 0)} candidate pairs so far`;
    };
    await runFlow(url, 'dedup (distributed)', { name: 'dedup-reduce', data: reduce }, children, candidatesSoFar);
    const r = checkReceipt(tiles, reduceOutputs(reduce), ['pairs', 'candidates', 'clusters', 'drop']);
    removeStaleOutputTemps(reduceOutputs(reduce));
    process.stderr.write(
      `${r.pairs} pairs (${r.candidates} candidates checked) in ${r.clusters} clusters; ${r.drop} ids to drop; ` +
        `${children.length} tiles; ${((performance.now() - t0) / 1000).toFixed(2)} s; wrote ${opts.out}${opts.clusters ? ` and ${opts.clusters}` : ''}\n`,
    );
    return { rows: n, ...r, tiles: children.length };
  } finally {
    removeRunFolder(tiles);
  }
}
