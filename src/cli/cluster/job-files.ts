/**
 * The files distributed jobs share through the file system (src/cli/cluster/dedup.ts,
 * shard-build.ts, shard-search.ts): result files checked by a SHA-256 at their end, written through
 * a temporary name renamed into place (a job whose file is there with the right checksum need not
 * run again), the folder each run keeps them in, the inputs as the run's plan saw them, the row
 * ranges of an input file that a job reads, and the receipt a run's final job leaves for its
 * producer.
 *
 * Run folders: `.NAME.webgpu-knn-KIND-HOST-PID-RAND` beside the output NAME (KIND: tiles, or shards
 * for knn-graph's own shards), one per run, so that two runs writing the same output never share
 * one. A job works for its run only while the run's producer (the command, HOST and PID) lives:
 * - The producer keeps a heartbeat in its folder (the file `heartbeat`, whose mtime it sets to its
 *   own clock every HEARTBEAT_MS). A job refuses to start, and a job that writes final outputs
 *   refuses to commit them, when the folder is gone, when the producer is a process of the
 *   job's host that no longer exists, or when the heartbeat is older than HEARTBEAT_STALE_MS by
 *   the job's clock (see producerGone: the skew between hosts that tolerates).
 * - The producer removes its folder when the run ends, however it ends (also on SIGINT /
 *   SIGTERM, whose handlers exit the process), so that a job of an ended run, replayed or late,
 *   finds no folder. A folder left by a SIGKILLed producer is removed by the next command that
 *   writes that output on the producer's host (checkOutputs in src/cli/paths.ts, and
 *   claimRunFolder), once the pid is gone from there, as src/io/temp-files.ts does for temporary
 *   files. A job retried within the run finds its finished file in the run's folder.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileError } from '../../io/file-error.js';
import { writeAtomically } from '../../io/stream-writer.js';
import { hostInName, processAlive, removeStaleTemps } from '../../io/temp-files.js';
import { type VectorReader, openVectors } from '../../io/vector-reader.js';

import type { VectorSource } from '../../common/vector-source.js';
import { InvalidArgumentError, DistributedError } from '../../errors.js';

/** Writes `body` and its SHA-256 to `path`, atomically. */
export function writeCheckedFile(path: string, body: ArrayBufferView): void {
  const bytes = new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  writeAtomically(path, Buffer.concat([bytes, createHash('sha256').update(bytes).digest()]));
}

/** The body of a file from writeCheckedFile (in an ArrayBuffer of its own), or null when it is missing or damaged. */
export function readCheckedFile(path: string): ArrayBuffer | null {
  if (!existsSync(path)) return null;
  const buf = readFileSync(path);
  if (buf.length < 32) return null;
  const body = buf.subarray(0, buf.length - 32);
  if (!createHash('sha256').update(body).digest().equals(buf.subarray(buf.length - 32))) return null;
  return body.buffer.slice(body.byteOffset, body.byteOffset + body.length);
}

// ---------------------------------------------------------------- inputs

/**
 * An input file as the run's plan saw it: its size and mtime, compared as the one-process reader
 * compares them (src/io/vector-reader.ts). A job checks its inputs before it reads them and again
 * once it has read them, so that a file changed in place while the run is queued, or while the job
 * reads it, is refused rather than read as another file.
 */
export interface InputFile {
  path: string;
  bytes: number;
  mtimeMs: number;
}

/** The file at `path` as it is now, for a plan; `reader` (opened from it), if given, must be of its size. */
export function inputFile(path: string, reader?: VectorReader): InputFile {
  let st;
  try {
    st = statSync(path);
  } catch (err) {
    throw fileError(path, 'cannot read', err);
  }
  if (reader && reader.bytes !== st.size) throw new InvalidArgumentError(`${path}: the file changed while it was opened (${reader.bytes} bytes then, ${st.size} now); run again`);
  return { path, bytes: st.size, mtimeMs: st.mtimeMs };
}

const when = (ms: number): string => (Number.isFinite(ms) ? new Date(ms).toISOString() : String(ms));

/** Throws (an InvalidArgumentError naming the file: a job is not retried for it) unless each file given is as the plan saw it. */
export function checkInputs(...files: (InputFile | undefined)[]): void {
  for (const f of files) {
    if (f === undefined) continue;
    let st;
    try {
      st = statSync(f.path);
    } catch (err) {
      throw new InvalidArgumentError(`${f.path}: the file is gone since the run started (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); run again`);
    }
    if (st.size !== f.bytes || st.mtimeMs !== f.mtimeMs) {
      throw new InvalidArgumentError(`${f.path}: the file changed since the run started (${f.bytes} bytes, modified ${when(f.mtimeMs)} then; ${st.size} bytes, modified ${when(st.mtimeMs)} now); run again`);
    }
  }
}

/** `read()` between two checks of `files` (checkInputs): what it read is of the files the plan saw. */
export async function reading<T>(files: (InputFile | undefined)[], read: () => Promise<T>): Promise<T> {
  checkInputs(...files);
  const r = await read();
  checkInputs(...files);
  return r;
}

/** The rows of block `b` (its first row is `b.start`) that fall in [r0, r1), or null: none do. */
function clip(b: { data: Float32Array; start: number; rows: number }, r0: number, r1: number, d: number): Float32Array | null {
  const lo = Math.max(r0, b.start);
  const hi = Math.min(r1, b.start + b.rows);
  return lo < hi ? b.data.subarray((lo - b.start) * d, (hi - b.start) * d) : null;
}

/** Rows [r0, r1) of `file` as a source (each pass reads the file from its start and stops after r1). */
export function rowRange(file: VectorReader, r0: number, r1: number): VectorSource {
  const d = file.dim;
  return {
    rows: r1 - r0,
    dim: d,
    async *blocks() {
      for await (const b of file.blocks()) {
        const data = clip(b, r0, r1, d);
        if (data) yield { data, rows: data.length / d };
        if (b.start + b.rows >= r1) break;
      }
    },
  };
}

/** Rows [r0, r1) of the vector file `input` for each range, read in one pass that stops after the last range, the file checked against the plan before and after. */
export async function readRowRanges(input: InputFile, ranges: [number, number][]): Promise<Float32Array[]> {
  return reading([input], async () => {
    const file = await openVectors(input.path);
    const d = file.dim;
    const outs = ranges.map(([r0, r1]) => new Float32Array((r1 - r0) * d));
    const end = Math.max(...ranges.map(([, r1]) => r1));
    for await (const b of file.blocks()) {
      ranges.forEach(([r0, r1], k) => {
        const data = clip(b, r0, r1, d);
        if (data) outs[k].set(data, (Math.max(r0, b.start) - r0) * d);
      });
      if (b.start + b.rows >= end) break;
    }
    return outs;
  });
}

// ---------------------------------------------------------------- producers

/** How often a producer refreshes its heartbeats. */
export const HEARTBEAT_MS = 5_000;
/**
 * How old (by the checking job's clock) a heartbeat may be before its producer is taken for gone.
 * A producer's clock behind the job's by more than HEARTBEAT_STALE_MS - HEARTBEAT_MS (55 s) makes
 * its live runs look ended (their jobs are refused: the run fails, nothing is lost); one ahead
 * lets its jobs run that much longer after it died.
 */
export const HEARTBEAT_STALE_MS = 60_000;

/** Files whose mtime this process keeps fresh. */
const beating = new Set<string>();
let beat: NodeJS.Timeout | null = null;

function touch(file: string): void {
  const now = new Date();
  try {
    utimesSync(file, now, now);
  } catch {
    // gone (the run ended): nothing to keep fresh
  }
}

/**
 * Refreshes every heartbeat of this process now: before jobs are queued, since a producer's event
 * loop may have been held for longer than HEARTBEAT_STALE_MS since the last beat (training an
 * index on the CPU backend, say), and a job taken at once would take its run for ended.
 */
export function refreshHeartbeats(): void {
  beating.forEach(touch);
}

/** Keeps the mtime of `file` (which exists) fresh every HEARTBEAT_MS until the returned function is called. */
export function startHeartbeat(file: string): () => void {
  touch(file);
  beating.add(file);
  // Unref'd: a heartbeat never keeps a process alive that has nothing else to do.
  beat ??= setInterval(() => beating.forEach(touch), HEARTBEAT_MS).unref();
  return () => {
    beating.delete(file);
    if (beating.size === 0 && beat) {
      clearInterval(beat);
      beat = null;
    }
  };
}

/** The process that produced a run: its host name and pid. */
export interface Producer {
  host: string;
  pid: number;
}

/**
 * Why the producer `p`, whose heartbeat is the mtime of `heartbeat`, is taken for gone ("its
 * producer ... is gone"), or null while it lives: this process is alive; a process of this host
 * must exist and keep its heartbeat fresh (one clock: a pid reused since fails the second test);
 * one of another host must keep its heartbeat fresh.
 */
export function producerGone(p: Producer, heartbeat: string): string | null {
  const here = hostInName();
  if (p.host === here && p.pid === process.pid) return null;
  if (p.host === here && !processAlive(p.pid)) return `its producer (pid ${p.pid} on ${p.host}) is gone`;
  let age: number;
  try {
    age = Date.now() - statSync(heartbeat).mtimeMs;
  } catch {
    return `its producer's heartbeat ${heartbeat} is gone`;
  }
  if (age > HEARTBEAT_STALE_MS) {
    return `its producer on ${p.host} has not refreshed its heartbeat ${heartbeat} for ${(age / 1000).toFixed(0)} s (at most ${HEARTBEAT_STALE_MS / 1000} s are allowed)`;
  }
  return null;
}

// ---------------------------------------------------------------- run folders

/** What a run keeps in a run folder. */
export type RunFolderKind = 'tiles' | 'shards';
const KINDS: RunFolderKind[] = ['tiles', 'shards'];

/** The heartbeat file in a run folder. */
const HEARTBEAT = 'heartbeat';

/** A run folder's name: `.NAME.webgpu-knn-KIND-HOST-PID-RAND`. */
const RUN_FOLDER = /^\.(.+)\.webgpu-knn-(tiles|shards)-(.+)-(\d+)-[0-9a-f]{8}$/;

/** The producer a run folder's name records, or null when it is not the name of a run folder. */
function producerOf(folder: string): Producer | null {
  const m = RUN_FOLDER.exec(basename(folder));
  return m ? { host: m[3], pid: Number(m[4]) } : null;
}

const liveFolders = new Map<string, () => void>();
let hooked = false;

/**
 * Removes the run folders (of every kind) of output `out` whose producer was a process of this
 * host that is gone; returns them, for the caller to report. Folders of other hosts stay (their
 * pids cannot be checked from here; their jobs are refused once their heartbeat is stale); so
 * does one whose pid a live process has taken since.
 */
export function removeStaleRunFolders(out: string): string[] {
  const host = hostInName();
  let names: string[] = [];
  try {
    names = readdirSync(dirname(out));
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!KINDS.some((kind) => name.startsWith(`.${basename(out)}.webgpu-knn-${kind}-`))) continue;
    const p = producerOf(name);
    if (!p || p.host !== host || p.pid === process.pid || processAlive(p.pid)) continue;
    rmSync(join(dirname(out), name), { recursive: true, force: true });
    removed.push(join(dirname(out), name));
  }
  return removed;
}

/** Reports (on stderr) each run folder of `out` that removeStaleRunFolders removes. */
export function reportStaleRunFolders(out: string): void {
  for (const f of removeStaleRunFolders(out)) process.stderr.write(`removed ${f}, a ${RUN_FOLDER.exec(basename(f))![2]} folder left by an interrupted run\n`);
}

/**
 * A new, empty run folder for output `out` with its heartbeat, kept fresh while it exists
 * (created here, removed by removeRunFolder or when the process exits); first removes the folders
 * of this output left by producers gone from this host, saying so on stderr.
 */
export function claimRunFolder(out: string, kind: RunFolderKind): string {
  reportStaleRunFolders(out);
  const dir = join(dirname(out), `.${basename(out)}.webgpu-knn-${kind}-${hostInName()}-${process.pid}-${randomBytes(4).toString('hex')}`);
  mkdirSync(dir);
  writeFileSync(join(dir, HEARTBEAT), '');
  liveFolders.set(dir, startHeartbeat(join(dir, HEARTBEAT)));
  if (!hooked) {
    hooked = true;
    process.on('exit', () => {
      for (const d of liveFolders.keys()) rmSync(d, { recursive: true, force: true });
    });
  }
  return dir;
}

/** Removes a run folder and everything in it. */
export function removeRunFolder(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  liveFolders.get(dir)?.();
  liveFolders.delete(dir);
}

/** Why the run whose folder is `folder` has ended ("the run that queued it has ended: ..."), or null while its producer lives. */
export function runEnded(folder: string): string | null {
  const p = producerOf(folder);
  if (!p) return `${folder} is not a run folder (.NAME.webgpu-knn-KIND-HOST-PID-RAND)`;
  let dir = false;
  try {
    dir = statSync(folder).isDirectory();
  } catch {
    // gone
  }
  const why = dir ? producerGone(p, join(folder, HEARTBEAT)) : `${folder} is gone`;
  return why === null ? null : `the run that queued it has ended: ${why}`;
}

/** Throws (an InvalidArgumentError: a job is not retried for it) once the run whose folder is `folder` has ended (runEnded). */
export function checkRunLive(folder: string): void {
  const why = runEnded(folder);
  if (why !== null) throw new InvalidArgumentError(why);
}

// ---------------------------------------------------------------- receipts

/** What a run's final job leaves in the run's folder once its outputs are in place, for the producer to check. */
interface Receipt {
  outputs: ({ path: string } & Identity)[];
  /** The job's figures (pairs, rows, ...), which the producer prints. */
  result: Record<string, number>;
}

/** A file's identity: device, inode, size and mtime (ns), as decimal strings (exact). */
interface Identity {
  dev: string;
  ino: string;
  size: string;
  mtimeNs: string;
}

const RECEIPT = 'receipt.json';

function identity(path: string): Identity {
  const st = statSync(path, { bigint: true });
  return { dev: String(st.dev), ino: String(st.ino), size: String(st.size), mtimeNs: String(st.mtimeNs) };
}

/** Records, in run folder `folder`, that `outputs` are now the files this job wrote, with its figures `result`. */
export function writeReceipt(folder: string, outputs: string[], result: Record<string, number>): void {
  const receipt: Receipt = { outputs: outputs.map((path) => ({ path, ...identity(path) })), result };
  writeAtomically(join(folder, RECEIPT), `${JSON.stringify(receipt)}\n`);
}

/**
 * The figures (`fields` of them) of the receipt the final job of the run in `folder` left for
 * `outputs`, once it is checked: a DistributedError when there is none or it names other files
 * (the run did not write them: a completion forged in Redis), or an output is not there. An
 * output that is there but not the file the receipt names was replaced since the run wrote it
 * (another command writing it at the same time): said on stderr, not an error.
 */
export function checkReceipt(folder: string, outputs: string[], fields: string[]): Record<string, number> {
  const tampered = (what: string): DistributedError => new DistributedError(`the workers reported the run done but ${what}: was Redis tampered with?`);
  let r: Partial<Receipt> | null = null;
  try {
    r = JSON.parse(readFileSync(join(folder, RECEIPT), 'utf8')) as Partial<Receipt>;
  } catch {
    // said below
  }
  if (r === null || typeof r !== 'object') throw tampered(`its final job left no receipt in ${folder}`);
  const listed = Array.isArray(r.outputs) ? r.outputs.map((o) => (o as { path?: unknown })?.path) : [];
  if (listed.length !== outputs.length || listed.some((p, i) => p !== outputs[i])) throw tampered(`the receipt in ${folder} does not name this run's outputs`);
  const result: Record<string, number> = {};
  for (const f of fields) {
    const v = (r.result as Record<string, unknown> | undefined)?.[f];
    if (!Number.isSafeInteger(v) || (v as number) < 0) throw tampered(`the receipt in ${folder} has no count ${f}`);
    result[f] = v as number;
  }
  r.outputs!.forEach((o, i) => {
    let now: Identity;
    try {
      now = identity(outputs[i]);
    } catch {
      throw tampered(`${outputs[i]} is not there`);
    }
    if (now.dev !== o.dev || now.ino !== o.ino || now.size !== o.size || now.mtimeNs !== o.mtimeNs) {
      process.stderr.write(`note: ${outputs[i]} has been replaced since this run wrote it (by another command writing it at the same time?)\n`);
    }
  });
  return result;
}

/**
 * Removes (and reports) the temporary files of `outputs` left by processes gone from this host: a
 * worker of this host killed while it wrote them (removeStaleTemps judges by pid; what a worker of
 * another host leaves is for a command writing that output on that host).
 */
export function removeStaleOutputTemps(outputs: (string | undefined)[]): void {
  for (const o of outputs) if (o !== undefined) for (const stale of removeStaleTemps(o)) process.stderr.write(`removed ${stale}, a temporary file left by an interrupted run\n`);
}