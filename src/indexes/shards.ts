/**
 * Sharded indexes (issue 17): the rows of one input split into S contiguous ranges, each an index
 * file of its own whose ids are the global row numbers (or the matching slice of the caller's
 * ids), trained once and searched shard by shard, the per-shard top-k merged. This module is the
 * part without files: the manifest that lists the shards, the row ranges, and the merge. The CLI
 * and the worker jobs are in src/cli/cluster/ (shard-files.ts, shard-build.ts, shard-search.ts).
 *
 * Why a merge gives the unsharded answer: every search re-scores its candidates exactly and keeps
 * the k best by (exact score, id) (src/indexes/rescore.ts); a shard's k best are the k best of its rows, so
 * the k best of all rows are among the shards' lists, and merging them by (distance, id) puts them
 * in the same order. Shards must share what was trained (IVF centroids), so that every row lands
 * in the same list and every query probes the same lists as in one index. Types whose search ranks
 * approximate scores (codecs, transforms) are not sharded: a shard's candidates by code score are
 * not the unsharded candidates, so the merged answer would differ (see shardableType).
 */

import { describeIndexType, parseIndexType } from './factory.js';
import type { IndexFileHeader } from '../io/index-format.js';
import type { Metric } from '../types.js';

import type { IndexKindName, IndexType } from './kind.js';
import { indexKind } from './registry.js';
import { InvalidArgumentError } from '../errors.js';

export const MANIFEST_FORMAT = 'webgpu-knn-shards';
export const MANIFEST_VERSION = 1;

export interface ShardEntry {
  /** The shard's index file: a file name in the manifest's folder (no folder, no `..`, not absolute). */
  file: string;
  /** Its rows are rows [firstRow, firstRow + rows) of the input. */
  firstRow: number;
  rows: number;
  /** The file's size in bytes and SHA-256 (hex), checked before the shard is used. */
  bytes: number;
  sha256: string;
}

export interface ShardManifest {
  format: typeof MANIFEST_FORMAT;
  version: number;
  dim: number;
  metric: Metric;
  /** The factory string (describeIndexType's spelling). */
  type: string;
  /** IVF: lists scanned per query, as saved in every shard; null for Flat. */
  nprobe: number | null;
  ntotal: number;
  /** Whether the ids are the input's row numbers (no --ids): what a kNN graph of the index itself needs. */
  rowIds: boolean;
  /** The input the shards were built from (absolute path, bytes, mtime in ms), for a kNN graph of the index's own vectors. */
  input: { path: string; bytes: number; mtimeMs: number };
  shards: ShardEntry[];
}

/** Whether a path names a manifest (a .json index) rather than one index file. */
export function isManifestPath(path: string): boolean {
  return path.toLowerCase().endsWith('.json');
}

/**
 * Refuses a type whose sharded search would not equal the unsharded one: only float32 rows (Flat,
 * IVF<nlist>,Flat) are re-scored against the rows the candidates were chosen by.
 */
export function shardableType(type: IndexType): void {
  if (type.codec || type.transform || type.refine) {
    throw new InvalidArgumentError(
      `--type ${describeIndexType(type)} cannot be sharded: its candidates are chosen by approximate (coded or transformed) scores, so the shards' merged top-k would differ from one index's; shard Flat or IVF<nlist>,Flat`,
    );
  }
}

/** S contiguous ranges [start, end) of n rows, as equal as possible (the first n % S one row longer); 1 <= S <= n. */
export function shardRanges(n: number, shards: number): [number, number][] {
  if (!Number.isInteger(shards) || shards < 1 || shards > n) {
    throw new InvalidArgumentError(`shards must be an integer in [1, ${n}] (the number of rows: every shard holds at least one); got ${shards}`);
  }
  const base = Math.floor(n / shards);
  const longer = n % shards;
  const out: [number, number][] = [];
  let r = 0;
  for (let s = 0; s < shards; s++) {
    const rows = base + (s < longer ? 1 : 0);
    out.push([r, r + rows]);
    r += rows;
  }
  return out;
}

/** Whether `file` names a file in the manifest's folder: no folder part, not `.` or `..`, not absolute (no slash, backslash or NUL anywhere). */
export function isPlainFileName(file: string): boolean {
  return file !== '' && file !== '.' && file !== '..' && !/[/\\\0]/.test(file);
}

/**
 * The manifest in `text` (from `path`), checked field by field; errors name the field and the
 * value. What needs no file is checked here: the type can be sharded, nprobe fits it, each shard
 * is a plain file name in the manifest's folder, listed once (by name and by SHA-256), the shards
 * contiguous from row 0 and their rows summing to ntotal. What the shard files hold is checked
 * against it where they are read (src/cli/cluster/shard-files.ts: checkShardHeader, checkRowIds,
 * checkDisjointIds below).
 */
export function parseManifest(text: string, path: string): ShardManifest {
  let m: Partial<ShardManifest>;
  try {
    m = JSON.parse(text) as Partial<ShardManifest>;
  } catch (err) {
    throw new InvalidArgumentError(`${path}: not a shard manifest (not JSON: ${(err as Error).message})`);
  }
  const bad = (field: string, value: unknown, expected: string): InvalidArgumentError =>
    new InvalidArgumentError(`${path}: bad shard manifest: ${field} is ${JSON.stringify(value)}; expected ${expected}`);
  const count = (v: unknown, min: number): boolean => Number.isInteger(v) && (v as number) >= min;
  if (m?.format !== MANIFEST_FORMAT) throw bad('format', m?.format, `"${MANIFEST_FORMAT}"`);
  if (m.version !== MANIFEST_VERSION) throw bad('version', m.version, `${MANIFEST_VERSION}`);
  if (!count(m.dim, 1)) throw bad('dim', m.dim, 'an integer >= 1');
  if (!['l2', 'ip', 'cosine'].includes(m.metric as string)) throw bad('metric', m.metric, 'l2, ip or cosine');
  const type = shardType(m.type);
  if (!type) throw bad('type', m.type, 'Flat or IVF<nlist>,Flat (the factory string of a type that can be sharded)');
  const nprobe = indexKind(type.type).searchParams(type).nprobe;
  if (nprobe ? !(count(m.nprobe, nprobe.min) && m.nprobe! <= nprobe.max) : m.nprobe !== null) {
    throw bad('nprobe', m.nprobe, nprobe ? nprobe.expected : `null for ${type.type}`);
  }
  if (!count(m.ntotal, 1)) throw bad('ntotal', m.ntotal, 'an integer >= 1');
  if (typeof m.rowIds !== 'boolean') throw bad('rowIds', m.rowIds, 'true or false');
  const input = m.input;
  if (typeof input?.path !== 'string' || !count(input.bytes, 0) || typeof input.mtimeMs !== 'number') throw bad('input', input, '{ path, bytes, mtimeMs }');
  if (!Array.isArray(m.shards) || m.shards.length < 1) throw bad('shards', m.shards, 'a list of at least one shard');
  const names = new Map<string, number>();
  const sums = new Map<string, number>();
  const twice = (field: string, value: string, why: string): InvalidArgumentError =>
    new InvalidArgumentError(`${path}: bad shard manifest: ${field} is ${JSON.stringify(value)}, ${why}; each shard is listed once`);
  let next = 0;
  m.shards.forEach((s, i) => {
    if (typeof s?.file !== 'string' || !isPlainFileName(s.file)) {
      throw bad(`shards[${i}].file`, s?.file, `the name of a file in the manifest's folder (no folder, no "..", not absolute)`);
    }
    if (names.has(s.file)) throw twice(`shards[${i}].file`, s.file, `which shards[${names.get(s.file)}] lists already`);
    names.set(s.file, i);
    if (s.firstRow !== next) throw bad(`shards[${i}].firstRow`, s.firstRow, `${next} (shards are contiguous, in row order)`);
    if (!count(s.rows, 1)) throw bad(`shards[${i}].rows`, s.rows, 'an integer >= 1');
    if (!count(s.bytes, 1)) throw bad(`shards[${i}].bytes`, s.bytes, 'an integer >= 1');
    if (typeof s.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(s.sha256)) throw bad(`shards[${i}].sha256`, s.sha256, '64 hex digits');
    if (sums.has(s.sha256)) throw twice(`shards[${i}].sha256`, s.sha256, `the SHA-256 of shards[${sums.get(s.sha256)}]: the same file listed twice`);
    sums.set(s.sha256, i);
    next += s.rows;
  });
  if (next !== m.ntotal) throw bad('ntotal', m.ntotal, `${next} (the shards' rows together)`);
  return m as ShardManifest;
}

/** The type a manifest's `type` names, if it is one that can be sharded, in its canonical spelling; else null. */
function shardType(text: unknown): IndexType | null {
  try {
    const type = parseIndexType(text as string);
    shardableType(type);
    return describeIndexType(type) === text ? type : null;
  } catch {
    return null;
  }
}

/** What every shard file's header must say (the index file's fields, src/io/index-file.ts): the manifest's index. */
export interface ShardHeader {
  /** The file type, which for float32 rows is the kind's name: Flat, or IVF (IVF-Flat) with nlist lists. */
  type: IndexKindName;
  nlist: number;
  dim: number;
  metric: Metric;
  /** 0 for Flat, as the header has it. */
  nprobe: number;
}

/** The header every shard of `m` (a parsed manifest) has. */
export function shardHeaderOf(m: ShardManifest): ShardHeader {
  const { type, nlist } = parseIndexType(m.type);
  return { type, nlist, dim: m.dim, metric: m.metric, nprobe: m.nprobe ?? 0 };
}

/** A header's type as the factory spells it where it can be sharded (Flat, IVF<nlist>,Flat); other file types by their file type name. */
function headerTypeName(h: Pick<IndexFileHeader, 'type' | 'nlist'>): string {
  return h.type === 'IVF' ? `IVF${h.nlist},Flat` : h.type;
}

/**
 * Throws unless the header `got` of shard file `path` is the manifest's (`want`: type, nlist, dim,
 * metric, nprobe) and holds `rows` vectors, as shards[`place`] says.
 */
export function checkShardHeader(path: string, want: ShardHeader, got: IndexFileHeader, rows: number, place: number): void {
  const differs = (field: string, has: string | number, says: string | number): InvalidArgumentError =>
    new InvalidArgumentError(`shard file ${path}: its header says ${field} ${has}; the manifest says ${says}: it is not a shard of this index`);
  if (headerTypeName(got) !== headerTypeName(want)) throw differs('type', headerTypeName(got), headerTypeName(want));
  for (const field of ['dim', 'metric', 'nprobe'] as const) if (got[field] !== want[field]) throw differs(field, got[field], want[field]);
  if (got.ntotal !== rows) throw new InvalidArgumentError(`shard file ${path} holds ${got.ntotal} vectors; the manifest says ${rows} (shards[${place}].rows)`);
}

/** Throws unless shard file `path`'s ids are exactly the row numbers [firstRow, firstRow + ids.length) (in any order). */
export function checkRowIds(path: string, ids: Float64Array, firstRow: number): void {
  const rows = ids.length;
  const seen = new Uint8Array(rows);
  for (const id of ids) {
    const r = id - firstRow;
    if (!(r >= 0 && r < rows) || seen[r]) {
      throw new InvalidArgumentError(`shard file ${path} holds id ${id}${seen[r] ? ' twice' : ''}; the manifest gives it the row numbers [${firstRow}, ${firstRow + rows})`);
    }
    seen[r] = 1;
  }
}

/** Throws unless no id is held twice across (or within) the shards (`ids[s]`: shard s's ids; `paths[s]`: its file), naming the first such id. */
export function checkDisjointIds(ids: Float64Array[], paths: string[]): void {
  const all = new Float64Array(ids.reduce((n, x) => n + x.length, 0));
  ids.reduce((o, x) => (all.set(x, o), o + x.length), 0);
  all.sort();
  for (let j = 1; j < all.length; j++) {
    if (all[j] !== all[j - 1]) continue;
    const id = all[j];
    const holders = ids.flatMap((x, s) => (x.includes(id) ? [s] : []));
    const where = (s: number): string => `shards[${s}] (${paths[s]})`;
    throw new InvalidArgumentError(
      holders.length > 1
        ? `id ${id} is in ${where(holders[0])} and in ${where(holders[1])}: the ids of a sharded index are disjoint`
        : `id ${id} is held twice by ${where(holders[0])}: the ids of a sharded index are distinct`,
    );
  }
}

/** One shard's top-k of `rows` queries: `rows * k` labels (ids, -1 = none) and distances, each row best first. */
export interface ShardResult {
  labels: Float64Array;
  distances: Float32Array;
  /** The float64 scores they were ordered by (SearchResult.scores; +Infinity for padding). */
  scores: Float64Array;
}

/**
 * The k best of each row over the shards' lists (each `rows * k`, best first), as one index would
 * give them: by the exact float64 score (as the re-score orders them: two distances equal in
 * float32 may differ there), equal scores by the smaller id, padding (-1, +Infinity for l2,
 * -Infinity for ip and cosine) last.
 */
export function mergeTopK(parts: ShardResult[], rows: number, k: number, metric: Metric): ShardResult {
  const labels = new Float64Array(rows * k).fill(-1);
  const distances = new Float32Array(rows * k).fill(metric === 'l2' ? Infinity : -Infinity);
  const scores = new Float64Array(rows * k).fill(Infinity);
  const from: [ShardResult, number][] = [];
  for (let r = 0; r < rows; r++) {
    from.length = 0;
    for (const p of parts) for (let j = r * k; j < (r + 1) * k && p.labels[j] >= 0; j++) from.push([p, j]);
    from.sort(([p, i], [q, j]) => p.scores[i] - q.scores[j] || p.labels[i] - q.labels[j]);
    for (let j = 0; j < Math.min(k, from.length); j++) {
      const [p, i] = from[j];
      labels[r * k + j] = p.labels[i];
      distances[r * k + j] = p.distances[i];
      scores[r * k + j] = p.scores[i];
    }
  }
  return { labels, distances, scores };
}
