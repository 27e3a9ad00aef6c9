/**
 * Sharded indexes on the command line and in workers (issue 17; the manifest and the merge are in
 * src/indexes/shards.ts). This file: the manifest and the shard files as a command or a job reads them;
 * the build's jobs are in src/cli/cluster/shard-build.ts, the search's in
 * src/cli/cluster/shard-search.ts, their payloads in src/cli/cluster/job-payloads.ts.
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
 * Every job answers to its producer (src/cli/cluster/job-files.ts): a search's jobs to the run's
 * tiles folder, a build's to the manifest's lock (whose owner must live: its pid on its host, the
 * lock file's mtime as its heartbeat elsewhere) or, in knn-graph, to the run folder it builds in.
 * The jobs that write final outputs (search-merge, build-manifest) check again right before they
 * commit. Inputs (queries, filter, the build's input, ids and trained index) travel with the size
 * and mtime the plan saw, and a job refuses a file changed since. Once a flow is reported done, the
 * command checks on the file system that it is: a search's receipt against its outputs, a build's
 * manifest against the shards it must list (checkBuilt), before it removes anything.
 */
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, lstatSync, readFileSync, readdirSync, readlinkSync, realpathSync, rmSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { fileError } from '../../io/file-error.js';
import { INDEX_FORMAT_VERSION, type IndexFileHeader, indexFileBytes, readIndexHeader } from '../../io/index-file.js';
import { removeStaleTemps } from '../../io/temp-files.js';
import {
  MANIFEST_FORMAT,
  type ShardHeader,
  type ShardManifest,
  checkDisjointIds,
  checkRowIds,
  checkShardHeader,
  isManifestPath,
  isPlainFileName,
  parseManifest,
  shardHeaderOf,
} from '../../indexes/shards.js';

import { type PathFlag, checkOutputs } from '../paths.js';
import { InvalidArgumentError, UsageError } from '../../errors.js';

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
export function trainedPath(manifest: string): string {
  return join(dirname(manifest), `.${basename(manifest)}.webgpu-knn-trained.idx`);
}

/** The shard files the manifest at `path` lists now (none if there is none, or it is not a manifest). */
export function listedShards(path: string): string[] {
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
export async function fileFacts(path: string): Promise<{ bytes: number; sha256: string }> {
  const bytes = statSync(path).size;
  return { bytes, sha256: (await hashFile(path, bytes)).sha256 };
}

/** A shard file of the plan: its absolute path and what the manifest says of it (what a search-shard job checks the file against). */
export interface ShardRef {
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
export async function checkShardFile(shard: ShardRef): Promise<void> {
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
export function removeOrphans(manifest: string): void {
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
