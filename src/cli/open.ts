/**
 * What the commands open before they work: the cluster (--distributed), the backend, their inputs
 * (queries checked against the index, ids, an index file's header) and the index itself, loaded or
 * built, with progress on stderr; and `naming`, which makes a failed allocation one line.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { type Backend } from '../backend/backend.js';
import { createBackend } from '../backend/create-backend.js';
import { createIndex, prepareIndex } from '../indexes/factory.js';
import { allocationError, bytesText } from '../io/file-error.js';
import { readIdFile, readJsonlIds } from '../io/id-file.js';
import { type IndexFileHeader, readIndexHeader } from '../io/index-file.js';
import { loadIndex } from '../indexes/load-index.js';
import { type VectorReader, openVectors } from '../io/vector-reader.js';
import { MANIFEST_FORMAT, isManifestPath } from '../indexes/shards.js';
import type { VectorIndex } from '../indexes/vector-index.js';
import type { VectorSource } from '../common/vector-source.js';
import { openCluster } from './cluster/flow.js';
import { type Values, text } from './flags.js';
import type { IndexSettings } from './index-flags.js';
import { Progress } from './progress.js';
import { noteBackend } from './report.js';
import { UsageError } from '../errors.js';

/**
 * --distributed URL with --secret-file, checked before any work (openCluster: the URL, the job
 * secret, Redis reached); undefined without --distributed.
 */
export async function clusterOf(v: Values): Promise<string | undefined> {
  const url = text(v, 'distributed');
  if (url === undefined) {
    if (v['secret-file'] !== undefined) throw new UsageError('--secret-file applies with --distributed');
    return undefined;
  }
  return openCluster(url, text(v, 'secret-file'));
}

/**
 * Creates the backend (the last step before heavy work) and checks k against its limit (`spare`:
 * one less for a kNN graph of the input itself, which searches k + 1 to drop each vector's self).
 */
export async function openBackend(choice: 'auto' | 'webgpu' | 'cpu', k?: number, spare = 0): Promise<Backend> {
  const backend = await createBackend({ backend: choice });
  process.stderr.write(`backend: ${backend.description}\n`);
  noteBackend(backend.description);
  if (k !== undefined && k > backend.maxK - spare) {
    backend.dispose();
    throw new UsageError(`--k must be an integer in [1, ${backend.maxK - spare}] on the ${backend.kind} backend; got ${k}`);
  }
  return backend;
}

/**
 * `file` as a source whose every pass reports the bytes it has read, under `label`; `onRead` is
 * called when a pass has read the whole file.
 */
export function reporting(file: VectorReader, label: string, onRead?: () => void): VectorSource {
  return {
    rows: file.rows,
    dim: file.dim,
    path: file.path,
    blocks: () => {
      const p = new Progress(label);
      return file.blocks({
        onProgress: (done, total) => {
          p.update(done, total);
          if (done === total) onRead?.();
        },
      });
    },
  };
}

/**
 * Builds the index `s` describes from `file`, read block by block: trained (IVF: on a sample, the
 * only rows held; Flat: nothing to train), filled (IVF: a pass to assign the rows to lists, a pass
 * to add them) with sequential ids or `ids` (one per row), its nprobe set. `hostCopy` false where
 * nothing will search it (build: save reads the device back instead); default: the device's.
 */
export async function buildIndex(backend: Backend, s: IndexSettings, file: VectorReader, hostCopy?: boolean, ids?: BigInt64Array): Promise<VectorIndex> {
  const index = createIndex(backend, file.dim, s.type, s.metric, { hostCopy, nprobe: s.nprobe });
  const onProgress = phaseProgress();
  // Training is timed from the end of the sample's read, which reports its own time.
  let p: Progress | null = null;
  const sample = reporting(file, 'reading the training sample', () => (p = new Progress('training')));
  await index.train(sample, { onProgress: (e) => (p ??= new Progress('training')).update(e.iteration, e.niter), maxPoints: s.trainSample });
  await index.addFrom(file, { onProgress, ids });
  await prepareIndex(index, s.type.type, onProgress);
  return index;
}

/** Progress on stderr with a bar for each phase reported (RowProgress's phase; 'adding' when none is named). */
export function phaseProgress(): (done: number, total: number, phase?: string) => void {
  const progress = new Map<string, Progress>();
  return (done, total, phase = 'adding') => {
    if (!progress.has(phase)) progress.set(phase, new Progress(phase === 'assign' ? 'assigning to lists' : phase === 'add' ? 'adding to lists' : phase));
    progress.get(phase)!.update(done, total);
  };
}

/**
 * The ids of `file`'s vectors and the file that holds them: --ids (`idsPath`), or else a JSON Lines
 * input's own `id` fields (refused when both give ids); undefined where neither does (the row
 * numbers are the ids).
 */
export async function vectorIds(idsPath: string | undefined, file: VectorReader): Promise<{ ids: BigInt64Array; path: string } | undefined> {
  const own = file.format === '.jsonl' ? await readJsonlIds(file.path, { unique: true }) : null;
  if (own && idsPath !== undefined) throw new UsageError(`--ids ${idsPath} and the 'id' fields of --input ${file.path} both give the vectors' ids; give one of them`);
  const given = own ? { ids: own, path: file.path } : idsPath === undefined ? undefined : { ids: await readIdFile(idsPath, { unique: true }), path: idsPath };
  if (given && given.ids.length !== file.rows) {
    const from = own ? `the 'id' fields of ${file.path} hold` : `--ids ${idsPath} holds`;
    throw new UsageError(`${from} ${given.ids.length} ids; --input ${file.path} has ${file.rows} vectors (one id per vector expected)`);
  }
  return given;
}

/** `file`'s rows and their size as float32, for an out-of-memory message. */
export const sizeOf = (file: VectorReader): string => `${file.rows} x ${file.dim} float32, ${bytesText(4 * file.rows * file.dim)}`;
/** What building an index of `file` allocates. */
export const indexOf = (file: VectorReader): string => `the index of ${file.path} (${sizeOf(file)})`;

/** Runs `fn`; an allocation in it that fails (out of memory, a ulimit) is one line naming `what`, never a stack trace. */
export async function naming<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw allocationError(err, what);
  }
}

/** The queries file, checked against the index's dim. */
export async function openQueries(path: string, header: IndexFileHeader): Promise<VectorReader> {
  const queries = await openVectors(path);
  if (queries.rows > 0 && queries.dim !== header.dim) throw new UsageError(`the queries have dim ${queries.dim}; the index has dim ${header.dim}`);
  return queries;
}

/** Loads a saved index with a progress bar; `hostCopy` false where it will only be saved again (default: the device's). */
export async function loadWithProgress(backend: Backend, path: string, hostCopy?: boolean): Promise<VectorIndex> {
  const p = new Progress('loading');
  return loadIndex(backend, path, { hostCopy, onProgress: (done, total) => p.update(done, total) });
}

/**
 * The header of the index file at `path` (given as `flag` to `command`, which takes one index
 * file); a shard manifest, by its name or its contents, is a usage error that says which commands
 * take one (else it would be "no WGPUKNN magic").
 */
export async function indexHeaderOf(flag: string, path: string, command: string): Promise<IndexFileHeader> {
  if (isManifestPath(path) || looksLikeManifest(path)) {
    throw new UsageError(`${flag} ${path} is a shard manifest (from 'build --shards'); ${command} takes one index file (search and knn-graph --index take a manifest)`);
  }
  return readIndexHeader(path);
}

/** Whether the file at `path` begins as a shard manifest does (false if it cannot be read: the header read then says why). */
function looksLikeManifest(path: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const head = Buffer.alloc(4096);
    const text = head.subarray(0, readSync(fd, head, 0, head.length, 0)).toString('utf8');
    return /^\s*\{/.test(text) && text.includes(`"format"`) && text.includes(`"${MANIFEST_FORMAT}"`);
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
