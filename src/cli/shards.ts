/**
 * Sharded indexes on the command line and in workers (issue 17; the manifest and the merge are in
 * src/indexes/shards.ts):
 *
 * - `build --shards S`: the index is trained once and saved empty (the "trained" file: IVF
 *   centroids, nprobe), then each shard is that index loaded again, given its rows [r0, r1) with
 *   their global ids, and saved; the manifest is written last.
 * - `search --index MANIFEST`: a plan of (query block, shard) jobs, each searching its shard for
 *   its query rows and writing a checksummed result file (labels float64, distances float32, the
 *   exact scores float64 the merge orders by, then the SHA-256 of those bytes) into a tiles directory next to --out, then one merge writing the
 *   outputs. Without --distributed the very same job functions run here, shard by shard (each
 *   shard loaded once); with it they are BullMQ jobs (a flow: `search-shard` children, a
 *   `search-merge` parent) run by `webgpu-knn worker`.
 * - `knn-graph --distributed`: `build-shard` jobs (children of `build-manifest`) build the shards
 *   of the input in a temporary directory next to --out; then the search plan of the input
 *   against them, searching k + 1 and dropping each row's own id as knn-graph does.
 *
 * A result file already there with the right checksum is not computed again (a retried job, or a
 * re-run of the same search after a failure); a build-shard job always builds (its save replaces
 * the file atomically), so a retried one is harmless too.
 *
 * Manifests are not trusted (issue 33): what the manifest alone decides is checked by
 * parseManifest; confinement to the manifest's folder by readManifest; each shard file's header,
 * and caller ids across shards, by checkManifest before a search plans anything; each file's
 * SHA-256 and row-number ids by checkShardFile as it is loaded, in the command or in a worker.
 * A build holds the manifest's lock, and its jobs check it (checkProducer).
 *
 * Every job answers to its producer (src/cli/job-files.ts): a search's jobs to the run's tiles
 * folder, a build's to the manifest's lock (whose owner must live: its pid on its host, the lock
 * file's mtime as its heartbeat elsewhere) or, in knn-graph, to the run folder it builds in. The
 * jobs that write final outputs (search-merge, build-manifest) check again right before they
 * commit. Inputs (queries, filter, the build's input, ids and trained index) travel with the size
 * and mtime the plan saw, and a job refuses a file changed since. Once a flow is reported done,
 * the command checks on the file system that it is: a search's receipt against its outputs, a
 * build's manifest against the shards it must list (checkBuilt), before it removes anything.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, existsSync, lstatSync, readFileSync, readdirSync, readlinkSync, realpathSync, rmSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { Backend } from '../backend/backend.js';
import { createIndex, describeIndexType } from '../indexes/factory.js';
import { fileError } from '../io/file-error.js';
import { type FileLock, lockFile } from '../io/file-lock.js';
import { readIdFile } from '../io/id-file.js';
import { INDEX_FORMAT_VERSION, type IndexFileHeader, indexFileBytes, readIndexHeader } from '../io/index-file.js';
import { loadIndex } from '../indexes/load-index.js';
import { VectorStreamWriter, commitOutputs, writeAtomically } from '../io/stream-writer.js';
import { removeStaleTemps } from '../io/temp-files.js';
import { type VectorReader, openVectors } from '../io/vector-reader.js';
import { dropSelf } from '../jobs/knn-graph.js';
import {
  MANIFEST_FORMAT,
  MANIFEST_VERSION,
  type ShardEntry,
  type ShardHeader,
  type ShardManifest,
  type ShardResult,
  checkDisjointIds,
  checkRowIds,
  checkShardHeader,
  isManifestPath,
  isPlainFileName,
  mergeTopK,
  parseManifest,
  shardHeaderOf,
  shardRanges,
  shardableType,
} from '../indexes/shards.js';

import { InvalidArgumentError, type Metric } from '../types.js';
import type { VectorIndex } from '../indexes/vector-index.js';
import { type FlowJob, runFlow } from './flow.js';
import {
  type InputFile,
  checkInputs,
  checkReceipt,
  checkRunLive,
  claimRunFolder,
  inputFile,
  producerGone,
  readCheckedFile,
  readRowRanges,
  reading,
  removeRunFolder,
  removeStaleOutputTemps,
  rowRange,
  runEnded,
  startHeartbeat,
  writeCheckedFile,
  writeReceipt,
} from './job-files.js';
import { MAX_BLOCKS, MAX_SHARDS, checkJobs } from './job-kinds.js';
import { DistributedError } from './redis-link.js';
import { UsageError, intFlag } from './flags.js';
import { type PathFlag, checkOutputs } from './paths.js';
import { Progress } from './progress.js';
import type { IndexType } from '../indexes/kind.js';

/** Query rows per search-shard job (--query-rows). */
export const DEFAULT_QUERY_ROWS = 65536;

/** The index settings build and knn-graph share (as commands.ts reads them). */
export interface ShardSettings {
  type: IndexType;
  metric: Metric;
  nprobe: number | undefined;
  trainSample: number | undefined;
}

// ---------------------------------------------------------------- files

/**
 * Shard s of build `build` of the manifest at `manifest`: `<manifest name without .json>.<build>.shard-<s>.idx`,
 * beside it. Every build has its own names, so a rebuild over a manifest never touches the files
 * the old manifest lists until the new manifest has replaced it.
 */
export function shardPath(manifest: string, build: string, s: number): string {
  return join(dirname(manifest), `${basename(manifest).replace(/\.json$/i, '')}.${build}.shard-${s}.idx`);
}

/** The name of every shard file of the manifest at `manifest`, of any build: `NAME.<8 hex digits>.shard-<s>.idx` (see shardPath). */
function shardNamePattern(manifest: string): RegExp {
  const name = basename(manifest).replace(/\.json$/i, '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${name}\\.[0-9a-f]{8}\\.shard-\\d+\\.idx$`);
}

/** The trained, empty index a build of the manifest at `manifest` keeps beside it while it builds the shards. */
function trainedPath(manifest: string): string {
  return join(dirname(manifest), `.${basename(manifest)}.webgpu-knn-trained.idx`);
}

/** The shard files the manifest at `path` lists now (none if there is none, or it is not a manifest). */
function listedShards(path: string): string[] {
  try {
    return readManifest(path).shards.map((s) => s.path);
  } catch {
    return [];
  }
}

/** The SHA-256 (hex) of the file at `path`, of `size` bytes, and its last `keep` bytes (all of it if shorter), in one read. */
async function hashFile(path: string, size: number, keep = 0): Promise<{ sha256: string; tail: Buffer }> {
  const hash = createHash('sha256');
  const tail = Buffer.alloc(Math.min(keep, size));
  const from = size - tail.length;
  let at = 0;
  for await (const chunk of createReadStream(path)) {
    const b = chunk as Buffer;
    hash.update(b);
    if (at + b.length > from) b.copy(tail, Math.max(0, at - from), Math.max(0, from - at));
    at += b.length;
  }
  return { sha256: hash.digest('hex'), tail };
}

/** A shard file's size and SHA-256, as the manifest records them. */
async function fileFacts(path: string): Promise<{ bytes: number; sha256: string }> {
  const bytes = statSync(path).size;
  return { bytes, sha256: (await hashFile(path, bytes)).sha256 };
}

/** A shard file of the plan: its absolute path and what the manifest says of it (what a search-shard job checks the file against). */
interface ShardRef {
  path: string;
  bytes: number;
  sha256: string;
  /** Its place in the manifest (shards[place]). */
  place: number;
  firstRow: number;
  rows: number;
  /** Row-number ids: the shard holds exactly the ids [firstRow, firstRow + rows). */
  rowIds: boolean;
  /** What its header says: the manifest's index. */
  header: ShardHeader;
}

/**
 * The names shard `name` leads to in the manifest's folder `dir`: itself, then, while it is a
 * symbolic link, its target. A link whose target is not a file name in the folder (a plain name,
 * or the folder's own path and a plain name) is refused. It is judged by its text alone: nothing
 * outside the folder is looked at, and the error is the same whether the target exists or not.
 */
function linkChain(dir: string, name: string): string[] {
  const folders = [dir, realpathSync(dir)];
  const chain = [name];
  while (chain.length <= 40) {
    let link: string;
    try {
      const at = join(dir, chain[chain.length - 1]);
      if (!lstatSync(at).isSymbolicLink()) break;
      link = readlinkSync(at);
    } catch {
      break; // missing: said when it is read
    }
    const next = isPlainFileName(link) ? link : folders.includes(dirname(link)) && isPlainFileName(basename(link)) ? basename(link) : null;
    if (next === null) throw new InvalidArgumentError(`shard file ${join(dir, name)} is a symbolic link out of the manifest's folder; a shard is a file in the folder`);
    if (chain.includes(next)) break; // a loop: said when it is read
    chain.push(next);
  }
  return chain;
}

/** Throws (naming the file) unless the shard file is there, a regular file of the manifest's size. */
function statShard(shard: ShardRef): void {
  let st;
  try {
    st = statSync(shard.path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new InvalidArgumentError(`shard file ${shard.path} is missing`);
    throw fileError(shard.path, 'cannot read shard file', err);
  }
  if (!st.isFile()) throw new InvalidArgumentError(`shard file ${shard.path} is not a regular file`);
  if (st.size !== shard.bytes) throw new InvalidArgumentError(`shard file ${shard.path} has ${st.size} bytes; the manifest says ${shard.bytes}: it changed since the manifest was written`);
}

/** Bytes of the ids section of an index file of `ntotal` vectors (format version 2): the next id, then one id per vector, 8 bytes each. */
const idSectionBytes = (ntotal: number): number => 8 * (ntotal + 1);

/**
 * The ids of shard file `path` (its header `header`) from its ids section `section` (the
 * idSectionBytes before the file's 32-byte checksum, src/io/index-file.ts); version 1 files hold
 * the sequential ids 0 .. ntotal - 1.
 */
function idsOf(path: string, header: IndexFileHeader, section: Buffer): Float64Array {
  if ((header.version ?? INDEX_FORMAT_VERSION) < 2) return Float64Array.from({ length: header.ntotal }, (_, i) => i);
  const words = new BigInt64Array(new Uint8Array(section).buffer, 8, header.ntotal);
  return Float64Array.from(words, (v, s) => {
    if (v < 0n || v > BigInt(Number.MAX_SAFE_INTEGER)) throw new InvalidArgumentError(`shard file ${path}: the id of vector ${s} is ${v}; expected an integer in [0, ${Number.MAX_SAFE_INTEGER}]`);
    return Number(v);
  });
}

/**
 * Checks a shard file before it is loaded for a search (here, or in a worker's search-shard job):
 * a regular file of the manifest's size and SHA-256, its header the manifest's (type, nlist, dim,
 * metric, nprobe, and `rows` vectors), and with row-number ids exactly the numbers of its rows.
 * The ids come out of the SHA-256 pass, which reads every byte anyway: they cost no read of their
 * own. (That caller ids are disjoint across shards is checked before the search, by checkManifest.)
 */
async function checkShardFile(shard: ShardRef): Promise<void> {
  statShard(shard);
  const { sha256, tail } = await hashFile(shard.path, shard.bytes, idSectionBytes(shard.rows) + 32);
  if (sha256 !== shard.sha256) throw new InvalidArgumentError(`shard file ${shard.path} has SHA-256 ${sha256}; the manifest says ${shard.sha256}: it changed since the manifest was written`);
  const header = await readIndexHeader(shard.path);
  checkShardHeader(shard.path, shard.header, header, shard.rows, shard.place);
  if (shard.rowIds) checkRowIds(shard.path, idsOf(shard.path, header, tail.subarray(0, tail.length - 32)), shard.firstRow);
}

/** The ids of shard file `path` (its header checked as `header`), reading only its ids section. */
async function readShardIds(path: string, header: IndexFileHeader): Promise<Float64Array> {
  const section = Buffer.alloc((header.version ?? INDEX_FORMAT_VERSION) < 2 ? 0 : idSectionBytes(header.ntotal));
  const fh = await open(path, 'r');
  try {
    const { bytesRead } = await fh.read(section, 0, section.length, indexFileBytes(header) - 32 - section.length);
    if (bytesRead !== section.length) throw new InvalidArgumentError(`shard file ${path}: truncated in its ids section`);
  } finally {
    await fh.close();
  }
  return idsOf(path, header, section);
}

/** The manifest at `path`, checked (parseManifest), and its shards: each a file in the manifest's folder, or a link to one there. */
export function readManifest(path: string): { manifest: ShardManifest; shards: ShardRef[] } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new InvalidArgumentError(`${path}: cannot read the shard manifest: ${(err as Error).message}`);
  }
  const manifest = parseManifest(text, path);
  const dir = resolve(dirname(path));
  const header = shardHeaderOf(manifest);
  const shards = manifest.shards.map((s, place) => {
    linkChain(dir, s.file);
    return { path: join(dir, s.file), bytes: s.bytes, sha256: s.sha256, place, firstRow: s.firstRow, rows: s.rows, rowIds: manifest.rowIds, header };
  });
  return { manifest, shards };
}

/**
 * The checks of a manifest before a search plans anything (search and knn-graph --index): every
 * shard file there, a regular file of the manifest's size, its header the manifest's (reading its
 * first bytes only), and with caller ids no id in two shards (reading their ids sections, 8 bytes
 * a vector). The rest (SHA-256, row-number ids) is checked as each shard is loaded, by
 * checkShardFile. Returns the first shard's header, for checking flags against.
 */
export async function checkManifest(path: string): Promise<IndexFileHeader> {
  const { manifest, shards } = readManifest(path);
  const headers: IndexFileHeader[] = [];
  for (const s of shards) {
    statShard(s);
    const header = await readIndexHeader(s.path);
    checkShardHeader(s.path, s.header, header, s.rows, s.place);
    headers.push(header);
  }
  if (!manifest.rowIds) {
    const ids: Float64Array[] = [];
    for (const [i, s] of shards.entries()) ids.push(await readShardIds(s.path, headers[i]));
    checkDisjointIds(ids, shards.map((s) => s.path));
  }
  return headers[0];
}

/** The largest file read as another manifest of a folder (one listing MAX_SHARDS shards takes about 15 MB). */
const MAX_MANIFEST_BYTES = 64 << 20;

/**
 * The shard file names (and the names their links lead to) that the file at `path` lists, judged
 * leniently: any JSON object of the manifest format with a shards list (one that fails
 * parseManifest may still be repaired and used); null when it is not one.
 */
function namesListedBy(dir: string, path: string): string[] | null {
  let m: { format?: unknown; shards?: unknown };
  try {
    if (statSync(path).size > MAX_MANIFEST_BYTES) return null;
    m = JSON.parse(readFileSync(path, 'utf8')) as typeof m;
  } catch {
    return null;
  }
  if (m?.format !== MANIFEST_FORMAT || !Array.isArray(m.shards)) return null;
  const files = m.shards.map((e) => (e as { file?: unknown } | null)?.file).filter((f): f is string => typeof f === 'string' && isPlainFileName(f));
  return files.flatMap((f) => {
    try {
      return linkChain(dir, f);
    } catch {
      return [f];
    }
  });
}

/**
 * Removes what interrupted builds of the manifest at `manifest` left beside it: shard files of its
 * naming pattern that it does not list, the trained index, and their temporary files whose process
 * is gone. Run holding the manifest's lock (so no other build of it is writing them). A manifest
 * that cannot be read leaves every file alone, since it may list them. So do the folder's other
 * manifests: what any of them lists stays (man.JSON's shards are named as man.json's, and a
 * manifest may list any file of its folder), and while a build of a manifest whose shards are
 * named as this one's holds its lock (man.JSON beside man.json), nothing is removed.
 */
function removeOrphans(manifest: string): void {
  const dir = dirname(manifest);
  const keep = new Set<string>();
  if (existsSync(manifest)) {
    try {
      for (const s of readManifest(manifest).manifest.shards) for (const name of linkChain(dir, s.file)) keep.add(name);
    } catch (err) {
      process.stderr.write(`${manifest} cannot be read as a shard manifest (${(err as Error).message}); the shard files beside it are left alone\n`);
      return;
    }
  }
  const pattern = shardNamePattern(manifest);
  const ours = (name: string): boolean => (pattern.test(name) || name === basename(trainedPath(manifest))) && !keep.has(name);
  /** The output a temporary file is of, whatever the rest of its name (src/io/temp-files.ts). */
  const tempOf = (name: string): string | undefined => /^\.(.+)\.webgpu-knn-tmp-/.exec(name)?.[1];
  const names = readdirSync(dir);
  const orphans = (): string[] => names.filter((name) => ours(name) || ours(tempOf(name) ?? ''));
  if (orphans().length === 0) return;
  for (const name of names) {
    const path = join(dir, name);
    if (path === manifest) continue;
    const locked = /^\.(.+)\.webgpu-knn-lock$/.exec(name)?.[1];
    if (locked !== undefined && join(dir, locked) !== manifest && isManifestPath(locked) && shardNamePattern(join(dir, locked)).source === pattern.source) {
      process.stderr.write(`${join(dir, locked)} is being built (its lock ${path} is there) and names its shard files as ${manifest} does; the shard files beside them are left alone\n`);
      return;
    }
    if (isManifestPath(name)) for (const f of namesListedBy(dir, path) ?? []) keep.add(f);
  }
  const temps = new Set<string>();
  for (const name of orphans()) {
    const temp = tempOf(name);
    if (temp !== undefined) {
      temps.add(temp);
      continue;
    }
    rmSync(join(dir, name), { force: true });
    process.stderr.write(`removed ${join(dir, name)}, left by an interrupted build of ${manifest} (which does not list it)\n`);
  }
  for (const name of temps) for (const stale of removeStaleTemps(join(dir, name))) process.stderr.write(`removed ${stale}, a temporary file left by an interrupted build\n`);
}

// ---------------------------------------------------------------- build

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
 * The manifest's lock as a build's producer took it (src/io/file-lock.ts): its file and what the
 * file held. A build's jobs run only while the file still holds that (see checkProducer).
 */
export interface BuildLock {
  path: string;
  owner: string;
}

/**
 * What a build's jobs answer to, one of the two (the schemas refuse both or neither): the
 * manifest's lock (build --shards), or the run folder they build in (knn-graph --distributed,
 * whose manifest does not outlive the run).
 */
interface BuildProducer {
  lock?: BuildLock;
  run?: string;
}

export interface BuildShardJob extends BuildProducer {
  /** The trained, empty index every shard starts from. */
  trained: InputFile;
  input: InputFile;
  r0: number;
  r1: number;
  /** The caller's ids for every row of the input (the shard takes rows r0..r1 of them); absent: the row numbers. */
  ids?: InputFile;
  out: string;
}

/** Everything in a manifest but the shards' sizes and checksums, which build-manifest reads from the files. */
export interface BuildManifestJob extends BuildProducer {
  manifest: string;
  draft: Omit<ShardManifest, 'shards'>;
  shards: { file: string; firstRow: number; rows: number }[];
}

/**
 * Throws unless the build that queued a job lives. With a lock: the lock file still holds what
 * the producer wrote in it, and that process lives (its pid on its host; elsewhere the lock file's
 * mtime, which it keeps fresh, is its heartbeat: src/cli/job-files.ts, producerGone). A producer
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
async function trainShards(
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
      nprobe: s.type.type === 'IVF' ? s.nprobe ?? 1 : null,
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
    if (s.type.type === 'IVF') {
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
async function runBuildFlow(url: string, parent: BuildManifestJob, children: BuildShardJob[]): Promise<void> {
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
function newBuildId(): string {
  return randomBytes(4).toString('hex');
}

// ---------------------------------------------------------------- search

/** A search of a sharded index: what every search-shard and the search-merge job share. */
interface SearchPlan {
  shards: ShardRef[];
  metric: Metric;
  queries: InputFile;
  /** Query block starts, and nq at the end. */
  starts: number[];
  /** Neighbours searched per shard (k, or k + 1 for a graph of the index's own vectors). */
  kk: number;
  nprobe?: number;
  kFactor?: number;
  /** An id file: only these ids may be neighbours. */
  filter?: InputFile;
  tiles: string;
}
export interface SearchShardJob extends SearchPlan {
  block: number;
  shard: number;
}
export interface SearchMergeJob extends SearchPlan {
  out: string;
  dist?: string;
  k: number;
  /** A graph of the index's own vectors: query row i is the vector of id i, dropped from its list. */
  excludeSelf: boolean;
}

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
      const r = await index.search(xq.subarray(r0 * d, (r0 + n) * d), kk, { nprobe: job.nprobe, kFactor: job.kFactor, filter, exactScores: true });
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

export interface ShardedSearch {
  manifest: string;
  queries: string;
  k: number;
  out: string;
  dist?: string;
  nprobe?: number;
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
    nprobe: o.nprobe,
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

/** `search --index MANIFEST` without --distributed: every job of the plan here, shard by shard (each loaded once), then the merge. */
export async function searchShards(backend: Backend, o: ShardedSearch): Promise<void> {
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
 * name the outputs as they are (checkReceipt): its row count is what is reported.
 */
export async function distributedSearchShards(url: string, o: ShardedSearch): Promise<void> {
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
  o: { shards: number; k: number; out: string; dist?: string; queries?: string; queryRows: number },
): Promise<void> {
  const t0 = performance.now();
  // This run's own shards (a second run writing the same output has its own), removed however the run ends.
  const dir = claimRunFolder(resolve(o.out), 'shards');
  const manifest = join(dir, 'index.json');
  try {
    const { children, parent } = await trainShards(backend, s, file, o.shards, manifest, join(dir, 'trained.idx'), undefined, newBuildId(), { run: dir }, true);
    await runBuildFlow(url, parent, children);
    await distributedSearchShards(url, { manifest, queries: o.queries ?? file.path, k: o.k, out: o.out, dist: o.dist, queryRows: o.queryRows, excludeSelf: o.queries === undefined });
  } finally {
    // Shards of this run only (they are rebuilt by every run): not worth keeping after a failure.
    removeRunFolder(dir);
  }
  process.stderr.write(`knn-graph: ${((performance.now() - t0) / 1000).toFixed(2)} s in all (${o.shards} shards)\n`);
}

/**
 * The input a manifest was built from, for a kNN graph of the index's own vectors: refused unless
 * its ids are the row numbers and the file is as it was (size and mtime).
 */
export function manifestInput(path: string): string {
  const { manifest } = readManifest(path);
  if (!manifest.rowIds) throw new UsageError(`${path} was built with --ids: a kNN graph of its own vectors needs row-number ids (build it without --ids), or give --queries`);
  const { path: input, bytes, mtimeMs } = manifest.input;
  let st;
  try {
    st = statSync(input);
  } catch {
    throw new InvalidArgumentError(`${path}: its input ${input} is missing; a kNN graph of the index's own vectors reads it`);
  }
  // Not the file's own size and mtime in the message: the manifest names any file, and says nothing of one it does not match.
  if (st.size !== bytes || st.mtimeMs !== mtimeMs) {
    throw new InvalidArgumentError(`${path}: its input ${input} changed since the build (its size or mtime is not the manifest's ${bytes} bytes, mtime ${mtimeMs})`);
  }
  return input;
}

/** Refuses (usage error) a manifest `out` whose shards' directory is not writable. */
export function checkShardOutputs(out: string, shards: number, inputs: PathFlag[]): void {
  checkOutputs(
    Array.from({ length: shards }, (_, s) => ({ flag: `--out (shard ${s})`, path: shardPath(out, 'new', s) })),
    inputs,
  );
}
