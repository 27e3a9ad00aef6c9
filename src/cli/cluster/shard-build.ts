/**
 * `build --shards S` and the build-shard / build-manifest jobs (src/cli/cluster/shard-files.ts
 * describes sharded indexes; the jobs' payloads are in src/cli/cluster/job-payloads.ts).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { Backend } from '../../backend/backend.js';
import { createIndex, describeIndexType } from '../../indexes/factory.js';
import { type FileLock, lockFile } from '../../io/file-lock.js';
import { readIdFile } from '../../io/id-file.js';
import { loadIndex } from '../../indexes/load-index.js';
import { writeAtomically } from '../../io/stream-writer.js';
import { type VectorReader, openVectors } from '../../io/vector-reader.js';
import { MANIFEST_FORMAT, MANIFEST_VERSION, type ShardEntry, type ShardManifest, shardRanges, shardableType } from '../../indexes/shards.js';

import { type Metric } from '../../types.js';
import { runFlow } from './flow.js';
import { type InputFile, checkInputs, inputFile, producerGone, rowRange, runEnded, startHeartbeat, removeStaleOutputTemps } from './job-files.js';
import { type BuildManifestJob, type BuildProducer, type BuildShardJob, checkJobs } from './job-payloads.js';

import { checkManifest, checkShardFile, fileFacts, listedShards, readManifest, removeOrphans, shardPath, trainedPath } from './shard-files.js';
import { intFlag } from '../flags.js';
import { Progress } from '../progress.js';
import type { IndexType } from '../../indexes/kind.js';
import { indexKind } from '../../indexes/registry.js';
import { InvalidArgumentError, DistributedError, UsageError } from '../../errors.js';

/** The index settings build and knn-graph share (as src/cli/index-flags.ts reads them). */
export interface ShardSettings {
  type: IndexType;
  metric: Metric;
  nprobe: number | undefined;
  trainSample: number | undefined;
}

/** --shards S for `rows` rows: an integer in [1, rows] (every shard holds at least one row). */
export function shardsOf(text: string | undefined, rows: number, fallback?: number): number {
  if (rows < 1) throw new UsageError('--shards: the input has no rows to shard');
  return intFlag('shards', text, 1, rows, fallback === undefined ? undefined : Math.min(fallback, rows));
}

/** A usage error unless `type` can be sharded (see shardableType). */
export function checkShardable(type: IndexType): void {
  try {
    shardableType(type);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/**
 * Throws unless the build that queued a job lives. With a lock: the lock file still holds what
 * the producer wrote in it, and that process lives (its pid on its host; elsewhere the lock file's
 * mtime, which it keeps fresh, is its heartbeat: src/cli/cluster/job-files.ts, producerGone). A producer
 * killed by SIGKILL leaves its flow in Redis and its lock on disk; its jobs write nothing, so the
 * late build's manifest never replaces a newer one. With a run folder: that run lives (runEnded).
 */
function checkProducer(job: BuildProducer, what: string): void {
  if (job.run !== undefined) {
    const why = runEnded(job.run);
    if (why !== null) throw new InvalidArgumentError(`${what}: ${why}`);
    return;
  }
  const { lock } = job;
  if (lock === undefined) throw new InvalidArgumentError(`${what}: the job names neither the manifest's lock nor a run folder`);
  let now: string | null = null;
  try {
    now = readFileSync(lock.path, 'utf8');
  } catch {
    // gone: released
  }
  if (now !== lock.owner) {
    throw new InvalidArgumentError(`${what}: the build that queued it no longer holds the lock ${lock.path} (it ended, or was killed and another build took the lock); nothing written`);
  }
  let owner: { pid?: unknown; host?: unknown } = {};
  try {
    owner = JSON.parse(lock.owner) as typeof owner;
  } catch {
    // said below
  }
  const { pid, host } = owner ?? {};
  if (typeof pid !== 'number' || typeof host !== 'string') throw new InvalidArgumentError(`${what}: the lock ${lock.path} does not name its owner; nothing written`);
  const why = producerGone({ pid, host }, lock.path);
  if (why !== null) throw new InvalidArgumentError(`${what}: the build that queued it has ended: ${why}; nothing written`);
}

/** Adds rows [r0, r1) of the input, with their global ids, to the trained index, and saves it as the shard. */
export async function runBuildShard(backend: Backend, job: BuildShardJob): Promise<{ bytes: number; sha256: string }> {
  const what = `shard ${job.out}`;
  checkProducer(job, what);
  const inputs = [job.trained, job.input, job.ids];
  checkInputs(...inputs);
  const index = await loadIndex(backend, job.trained.path, { hostCopy: false });
  try {
    const file = await openVectors(job.input.path);
    const { r0, r1 } = job;
    const ids = job.ids === undefined ? BigInt64Array.from({ length: r1 - r0 }, (_, i) => BigInt(r0 + i)) : (await readIdFile(job.ids.path, { unique: true })).slice(r0, r1);
    await index.addFrom(rowRange(file, r0, r1), { ids });
    // What was read is the plan's: only then is the shard saved.
    checkInputs(...inputs);
    await index.save(job.out);
  } finally {
    await index.dispose();
  }
  try {
    checkProducer(job, what);
  } catch (err) {
    rmSync(job.out, { force: true }); // lost while building: an orphan otherwise
    throw err;
  }
  return fileFacts(job.out);
}

/** Writes the manifest (atomically, last) from the shard files as they are now. */
export async function runBuildManifest(job: BuildManifestJob): Promise<{ shards: number }> {
  const dir = dirname(job.manifest);
  const shards: ShardEntry[] = [];
  for (const s of job.shards) shards.push({ ...s, ...(await fileFacts(join(dir, s.file))) });
  const manifest: ShardManifest = { ...job.draft, shards };
  checkProducer(job, `manifest ${job.manifest}`);
  writeAtomically(job.manifest, `${JSON.stringify(manifest, null, 2)}\n`);
  return { shards: shards.length };
}

/**
 * Trains an index of `s` on all of `file` (IVF: the seeded sample an unsharded build takes) and
 * saves it empty to `trained`; returns the build-shard and build-manifest jobs of its S shards.
 * Jobs that will be `queued` for workers are checked against the workers' schemas first, before
 * the training's time is spent.
 */
export async function trainShards(
  backend: Backend,
  s: ShardSettings,
  file: VectorReader,
  shards: number,
  manifest: string,
  trained: string,
  ids: string | undefined,
  build: string,
  producer: BuildProducer,
  queued: boolean,
): Promise<{ children: BuildShardJob[]; parent: BuildManifestJob }> {
  const ranges = shardRanges(file.rows, shards);
  const input = inputFile(resolve(file.path), file);
  const plan = { input, ...(ids === undefined ? {} : { ids: inputFile(ids) }), ...producer };
  const jobs = (trainedFile: InputFile): { children: BuildShardJob[]; parent: BuildManifestJob } => {
    const children: BuildShardJob[] = ranges.map(([r0, r1], i) => ({ ...plan, trained: trainedFile, r0, r1, out: shardPath(manifest, build, i) }));
    const draft: Omit<ShardManifest, 'shards'> = {
      format: MANIFEST_FORMAT,
      version: MANIFEST_VERSION,
      dim: file.dim,
      metric: s.metric,
      type: describeIndexType(s.type),
      nprobe: indexKind(s.type.type).searchParams(s.type).nprobe ? s.nprobe ?? 1 : null,
      ntotal: file.rows,
      rowIds: ids === undefined,
      input,
    };
    return { children, parent: { manifest, draft, shards: children.map((c) => ({ file: basename(c.out), firstRow: c.r0, rows: c.r1 - c.r0 })), ...producer } };
  };
  if (queued) {
    // The jobs as the workers will check them, but for the trained file's facts.
    const draft = jobs({ path: trained, bytes: 0, mtimeMs: 0 });
    checkJobs([{ name: 'build-manifest', data: draft.parent }, ...draft.children.map((data) => ({ name: 'build-shard', data }))]);
  }
  const index = createIndex(backend, file.dim, s.type, s.metric, { hostCopy: false, nprobe: s.nprobe });
  try {
    if (indexKind(s.type.type).training(s.type)) {
      const p = new Progress('training');
      await index.train(file, { onProgress: (e) => p.update(e.iteration, e.niter), maxPoints: s.trainSample });
    }
    await index.save(trained);
  } finally {
    await index.dispose();
  }
  const { children, parent } = jobs(inputFile(trained));
  return { children, parent };
}

/**
 * `build --shards S`: trains on `backend`, then builds the shards one after another here, or with
 * `url` as build-shard jobs (children of build-manifest) on the workers there; the manifest `out`
 * last. The whole build holds the manifest's lock: a second build of it is refused, naming this
 * one; and, holding it, the build first removes what interrupted builds left (removeOrphans).
 */
export async function buildShards(
  backend: Backend,
  s: ShardSettings,
  file: VectorReader,
  shards: number,
  out: string,
  ids: string | undefined,
  url?: string,
): Promise<void> {
  const manifest = resolve(out);
  const lock = lockFile(manifest, 'build --shards');
  // The lock file's mtime is this producer's heartbeat for its jobs on other hosts.
  const stopHeartbeat = startHeartbeat(lock.lockPath);
  let build: string;
  try {
    removeOrphans(manifest);
    build = await buildLocked(backend, s, file, shards, manifest, ids, url, lock);
  } finally {
    stopHeartbeat();
    lock.release();
  }
  process.stderr.write(`wrote ${out} and ${shards} shard files (${basename(shardPath(manifest, build, 0))} ...): ${file.rows} vectors of dim ${file.dim}\n`);
}

/** buildShards' work, holding `lock`; returns the build's id. */
async function buildLocked(backend: Backend, s: ShardSettings, file: VectorReader, shards: number, manifest: string, ids: string | undefined, url: string | undefined, lock: FileLock): Promise<string> {
  const trained = trainedPath(manifest);
  const build = newBuildId();
  const previous = listedShards(manifest);
  let done = false;
  try {
    const owner = { path: lock.lockPath, owner: readFileSync(lock.lockPath, 'utf8') };
    const { children, parent } = await trainShards(backend, s, file, shards, manifest, trained, ids === undefined ? undefined : resolve(ids), build, { lock: owner }, url !== undefined);
    if (url !== undefined) {
      await runBuildFlow(url, parent, children);
      removeStaleOutputTemps([manifest, ...children.map((c) => c.out)]);
    } else {
      const p = new Progress('building shards');
      for (const [i, job] of children.entries()) {
        await runBuildShard(backend, job);
        p.update(i + 1, children.length, `shards (${job.r1} of ${file.rows} rows)`);
      }
      await runBuildManifest(parent);
    }
    done = true;
  } finally {
    rmSync(trained, { force: true });
    // After a failure: this build's shards go (but any the manifest now lists), the old manifest
    // and its shards stay as they were. After success: the old manifest's shards go, now that
    // nothing lists them.
    const listed = done ? [] : listedShards(manifest);
    const stale = done ? previous : Array.from({ length: shards }, (_, i) => shardPath(manifest, build, i)).filter((f) => !listed.includes(f));
    for (const f of stale) rmSync(f, { force: true });
  }
  return build;
}

/**
 * The build's flow on the workers at `url`; once it is reported done, the manifest must list
 * exactly this build's shards (checkBuilt), or nothing of the old index is touched.
 */
export async function runBuildFlow(url: string, parent: BuildManifestJob, children: BuildShardJob[]): Promise<void> {
  await runFlow(url, 'building shards (distributed)', { name: 'build-manifest', data: parent }, children.map((data) => ({ name: 'build-shard', data })));
  await checkBuilt(parent, children);
}

/**
 * After the workers report a build done: its manifest must now be the one this build's
 * build-manifest job writes (the plan's fields, exactly this build's shards by name and rows),
 * each shard file of the manifest's size and SHA-256 with the manifest's header and ids, and
 * checkManifest must pass. Otherwise the completion was not the workers' (Redis written by someone
 * without the job secret): a DistributedError saying what is wrong, before anything is removed.
 */
async function checkBuilt(parent: BuildManifestJob, children: BuildShardJob[]): Promise<void> {
  const path = parent.manifest;
  const wrong = (what: string): DistributedError => new DistributedError(`the workers reported the build done but ${what}: was Redis tampered with?`);
  let read: ReturnType<typeof readManifest>;
  try {
    read = readManifest(path);
  } catch (err) {
    throw wrong(`${path} is not this build's manifest (${(err as Error).message})`);
  }
  const { manifest, shards } = read;
  const draft = parent.draft as unknown as Record<string, unknown>;
  const field = Object.keys(draft).find((k) => JSON.stringify((manifest as unknown as Record<string, unknown>)[k]) !== JSON.stringify(draft[k]));
  if (field !== undefined) throw wrong(`${path} is not this build's manifest (its ${field} is not the plan's)`);
  if (shards.length !== children.length || shards.some((s, i) => s.path !== children[i].out || s.firstRow !== children[i].r0 || s.rows !== children[i].r1 - children[i].r0)) {
    throw wrong(`${path} does not list this build's shards (${basename(children[0].out)} ...)`);
  }
  try {
    for (const s of shards) await checkShardFile(s);
    await checkManifest(path);
  } catch (err) {
    throw wrong(`${path}'s shards do not check (${(err as Error).message})`);
  }
}

/** 8 hex digits naming one build's shard files. */
export function newBuildId(): string {
  return randomBytes(4).toString('hex');
}
