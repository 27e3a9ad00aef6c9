/**
 * Every job kind a worker takes: its payload's schema (src/cli/job-schema.ts), the paths it names
 * (each confined to the worker's root: src/cli/job-paths.ts), and what runs it. A payload is
 * checked against its kind's schema, and its paths against the root, before `run` is called; the
 * relations between fields (row ranges in order, a block within the plan) are part of the schema.
 *
 * The schemas describe exactly what the commands queue (src/cli/distributed.ts, src/cli/shards.ts):
 * absolute paths, outputs with the extensions the command line allows, run folders named as a run
 * names them, inputs with the size and mtime the plan saw. A command checks every job it is about
 * to queue against them too (checkJobs, from runFlow), so that a job the workers would refuse is
 * refused before anything runs.
 */
import { basename, dirname, join } from 'node:path';
import type { Backend } from '../backend/backend.js';
import { describeIndexType, parseIndexType } from '../indexes/factory.js';
import { MANIFEST_FORMAT, MANIFEST_VERSION } from '../indexes/shards.js';
import { type ReduceJob, type TileJob, runReduce, runTile, tileFile } from './distributed.js';
import { UsageError } from './flags.js';
import { type Check, SchemaError, array, bool, finite, int, nullable, object, oneOf, refine, str } from './job-schema.js';
import type { JobPath } from './job-paths.js';
import {
  type BuildManifestJob,
  type BuildShardJob,
  type SearchMergeJob,
  type SearchShardJob,
  runBuildManifest,
  runBuildShard,
  runSearchMerge,
  runSearchShard,
  tilePath,
} from './shards.js';

/** The most row blocks (dedup) or query blocks (search) a plan has: the commands refuse more, the schemas too. */
export const MAX_BLOCKS = 1 << 20;
/** The most shards a search job lists. */
export const MAX_SHARDS = 1 << 16;

const ROWS = Number.MAX_SAFE_INTEGER;
const path = str(4096, /^\//, 'an absolute path');
const ext = (exts: string[]) => str(4096, new RegExp(`^/.*(${exts.map((e) => e.replace('.', '\\.')).join('|')})$`, 'i'), `an absolute path ending in ${exts.join(', ')}`);
/** An input file as the plan saw it (src/cli/job-files.ts: InputFile). */
const input = (at: Check<string> = path) => object({ path: at, bytes: int(0, ROWS), mtimeMs: finite() });
/** A run folder of `kind`, as claimRunFolder names it. */
const runFolder = (kind: string) => str(4096, new RegExp(`^/.*/\\.[^/]+\\.webgpu-knn-${kind}-[^/]+-\\d+-[0-9a-f]{8}$`), `a ${kind} folder (/DIR/.NAME.webgpu-knn-${kind}-HOST-PID-RAND)`);
const tilesFolder = runFolder('tiles');
const range = array(int(0, ROWS), 2, 2) as Check<[number, number]>;
const sha256 = str(64, /^[0-9a-f]{64}$/, 'a SHA-256 in hex');
/** A file name with no directory part (a shard beside its manifest). */
const shardFile = str(255, /^[^/\\]+\.idx$/, 'a file name ending in .idx, without a directory');

/** Block starts of a plan: 0 first, strictly increasing. */
function starts(values: number[]): string | null {
  if (values[0] !== 0) return 'starts must begin at 0';
  for (let b = 1; b < values.length; b++) if (!(values[b] > values[b - 1])) return `starts must increase; starts[${b}] = ${values[b]} after ${values[b - 1]}`;
  return null;
}

const dedupPlan = {
  input: input(),
  metric: oneOf('cosine', 'l2'),
  threshold: finite(-1, Number.MAX_VALUE),
  d: int(1, 2 ** 31 - 1),
  tiles: tilesFolder,
  maxCandidates: nullable(int(0, Number.MAX_SAFE_INTEGER)),
};
const threshold = (j: { metric: string; threshold: number }): string | null =>
  j.metric === 'cosine' && j.threshold > 1 ? `a cosine threshold must be in [-1, 1]; got ${j.threshold}` : j.metric === 'l2' && j.threshold < 0 ? `an l2 threshold must be >= 0; got ${j.threshold}` : null;

const TILE_JOB: Check<TileJob> = refine(object({ ...dedupPlan, i: int(0, MAX_BLOCKS - 1), j: int(0, MAX_BLOCKS - 1), ri: range, rj: range }), (t) => {
  if (t.i > t.j) return `i (${t.i}) must not exceed j (${t.j})`;
  if (!(t.ri[0] < t.ri[1]) || !(t.rj[0] < t.rj[1])) return 'each row range must hold at least one row';
  if (t.i === t.j ? t.ri[0] !== t.rj[0] || t.ri[1] !== t.rj[1] : t.ri[1] > t.rj[0]) return 'row ranges must be one block (i = j) or two blocks in order';
  return threshold(t);
});

const REDUCE_JOB: Check<ReduceJob> = refine(
  object({ ...dedupPlan, n: int(0, 2 ** 32), starts: array(int(0, 2 ** 32), 1, MAX_BLOCKS + 1), out: ext(['.csv', '.jsonl']) }, { clusters: path }),
  (r) => starts(r.starts) ?? (r.starts.at(-1) !== r.n ? `starts must end at n = ${r.n}` : null) ?? threshold(r),
);

/** The manifest's lock as the producer took it (src/cli/shards.ts: checkBuildLock); only read. */
const buildLock = object({ path: str(4096, /^\/.*\/\.[^/]+\.json\.webgpu-knn-lock$/i, "a manifest's lock file (/DIR/.NAME.json.webgpu-knn-lock)"), owner: str(4096) });

/** What a build job answers to: the manifest's lock (build --shards), or the run folder it builds in (knn-graph --distributed). */
const buildProducer = { lock: buildLock, run: runFolder('shards') };
/** Exactly one of lock and run, and with run, `files` directly in it. */
function oneProducer(b: { lock?: unknown; run?: string }, files: string[]): string | null {
  if ((b.lock === undefined) === (b.run === undefined)) return 'a build job names exactly one of lock and run';
  const outside = b.run === undefined ? undefined : files.find((f) => dirname(f) !== b.run);
  return outside === undefined ? null : `${JSON.stringify(outside)} is not in the run folder ${JSON.stringify(b.run)}`;
}

const BUILD_SHARD_JOB: Check<BuildShardJob> = refine(
  object(
    { trained: input(ext(['.idx'])), input: input(), r0: int(0, ROWS), r1: int(1, ROWS), out: str(4096, /^\/.*\.shard-\d+\.idx$/, 'an absolute path ending in .shard-<s>.idx') },
    { ids: input(), ...buildProducer },
  ),
  (b) => (b.r0 < b.r1 ? null : `r0 (${b.r0}) must be below r1 (${b.r1})`) ?? oneProducer(b, [b.out, b.trained.path]),
);

const indexType = refine(str(256, /^[A-Za-z0-9(),]+$/, 'a factory string'), (t) => {
  try {
    return describeIndexType(parseIndexType(t)) === t ? null : `type ${JSON.stringify(t)} is not in canonical form`;
  } catch (err) {
    return (err as Error).message;
  }
});

const BUILD_MANIFEST_JOB: Check<BuildManifestJob> = refine(
  object({
    manifest: ext(['.json']),
    draft: object({
      format: oneOf(MANIFEST_FORMAT),
      version: int(MANIFEST_VERSION, MANIFEST_VERSION),
      dim: int(1, 2 ** 31 - 1),
      metric: oneOf('l2', 'ip', 'cosine'),
      type: indexType,
      nprobe: nullable(int(1, 2 ** 32)),
      ntotal: int(1, ROWS),
      rowIds: bool,
      input: input(),
    }),
    shards: array(object({ file: shardFile, firstRow: int(0, ROWS), rows: int(1, ROWS) }), 1, MAX_SHARDS),
  }, buildProducer),
  (m) => {
    const producer = oneProducer(m, [m.manifest]);
    if (producer !== null) return producer;
    let row = 0;
    for (const [s, e] of m.shards.entries()) {
      if (e.firstRow !== row) return `shards[${s}].firstRow must be ${row} (shards are contiguous)`;
      row += e.rows;
    }
    if (new Set(m.shards.map((e) => e.file)).size !== m.shards.length) return 'a shard file is listed twice';
    return row === m.draft.ntotal ? null : `the shards hold ${row} rows; draft.ntotal is ${m.draft.ntotal}`;
  },
);

/** What every shard's header must say (src/indexes/shards.ts: ShardHeader). */
const shardHeader = object({ type: oneOf('Flat', 'IVF'), nlist: int(0, 2 ** 32), dim: int(1, 2 ** 31 - 1), metric: oneOf('l2', 'ip', 'cosine'), nprobe: int(0, 2 ** 32) });
const shardRefs = refine(
  array(object({ path: ext(['.idx']), bytes: int(0, ROWS), sha256, place: int(0, MAX_SHARDS - 1), firstRow: int(0, ROWS), rows: int(1, ROWS), rowIds: bool, header: shardHeader }), 1, MAX_SHARDS),
  (refs) => {
    let row = 0;
    for (const [s, r] of refs.entries()) {
      if (r.place !== s) return `shards[${s}].place must be ${s}`;
      if (r.firstRow !== row) return `shards[${s}].firstRow must be ${row} (shards are contiguous)`;
      row += r.rows;
    }
    return null;
  },
);

const searchPlan = {
  shards: shardRefs,
  metric: oneOf('l2', 'ip', 'cosine'),
  queries: input(),
  starts: array(int(0, ROWS), 1, MAX_BLOCKS + 1),
  kk: int(1, 2 ** 21),
  tiles: tilesFolder,
};
const searchOptional = { nprobe: int(1, 2 ** 32), kFactor: finite(1), filter: input() };

const SEARCH_SHARD_JOB: Check<SearchShardJob> = refine(object({ ...searchPlan, block: int(0, MAX_BLOCKS - 1), shard: int(0, MAX_SHARDS - 1) }, searchOptional), (s) => {
  if (s.block >= s.starts.length - 1) return `block ${s.block} is not one of the plan's ${s.starts.length - 1}`;
  if (s.shard >= s.shards.length) return `shard ${s.shard} is not one of the plan's ${s.shards.length}`;
  return starts(s.starts);
});

const SEARCH_MERGE_JOB: Check<SearchMergeJob> = refine(
  object({ ...searchPlan, out: ext(['.ivecs', '.npy', '.csv', '.jsonl']), k: int(1, 2 ** 21), excludeSelf: bool }, { ...searchOptional, dist: ext(['.fvecs', '.npy', '.csv', '.jsonl']) }),
  (m) => starts(m.starts) ?? (m.kk !== m.k + (m.excludeSelf ? 1 : 0) ? `kk must be k${m.excludeSelf ? ' + 1' : ''}` : null),
);

interface JobKind<T> {
  check: Check<T>;
  /** Every path the job reads or writes. */
  paths: (job: T) => JobPath[];
  run: (backend: Backend, job: T) => Promise<unknown>;
}

const p = (field: string, at: string | undefined, role: JobPath['role']): JobPath[] => (at === undefined ? [] : [{ field, path: at, role }]);

function kind<T>(k: JobKind<T>): JobKind<unknown> {
  return k as JobKind<unknown>;
}

/** The job kinds, by job name. */
export const JOB_KINDS: Record<string, JobKind<unknown>> = {
  'self-join-tile': kind({
    check: TILE_JOB,
    paths: (t) => [...p('input.path', t.input.path, 'input'), ...p('tiles', t.tiles, 'folder'), ...p('tile file', tileFile(t, t.i, t.j), 'output')],
    run: runTile,
  }),
  'dedup-reduce': kind({
    check: REDUCE_JOB,
    paths: (r) => [...p('input.path', r.input.path, 'input'), ...p('tiles', r.tiles, 'folder'), ...p('out', r.out, 'output'), ...p('clusters', r.clusters, 'output')],
    run: (_, r) => runReduce(r),
  }),
  'build-shard': kind({
    check: BUILD_SHARD_JOB,
    paths: (b) => [
      ...p('trained.path', b.trained.path, 'input'),
      ...p('input.path', b.input.path, 'input'),
      ...p('ids.path', b.ids?.path, 'input'),
      ...p('lock.path', b.lock?.path, 'input'),
      ...p('run', b.run, 'folder'),
      ...p('out', b.out, 'output'),
    ],
    run: runBuildShard,
  }),
  'build-manifest': kind({
    check: BUILD_MANIFEST_JOB,
    paths: (m) => [
      ...p('manifest', m.manifest, 'output'),
      ...p('lock.path', m.lock?.path, 'input'),
      ...p('run', m.run, 'folder'),
      ...p('draft.input.path', m.draft.input.path, 'input'),
      ...m.shards.flatMap((s, i) => p(`shards[${i}].file`, join(dirname(m.manifest), basename(s.file)), 'input')),
    ],
    run: (_, m) => runBuildManifest(m),
  }),
  'search-shard': kind({
    check: SEARCH_SHARD_JOB,
    paths: (s) => [
      ...searchPaths(s),
      ...p('tile file', tilePath(s, s.block, s.shard), 'output'),
    ],
    run: runSearchShard,
  }),
  'search-merge': kind({
    check: SEARCH_MERGE_JOB,
    paths: (m) => [...searchPaths(m), ...p('out', m.out, 'output'), ...p('dist', m.dist, 'output')],
    run: (_, m) => runSearchMerge(m),
  }),
};

function searchPaths(s: SearchShardJob | SearchMergeJob): JobPath[] {
  return [
    ...s.shards.flatMap((r, i) => p(`shards[${i}].path`, r.path, 'input')),
    ...p('queries.path', s.queries.path, 'input'),
    ...p('filter.path', s.filter?.path, 'input'),
    ...p('tiles', s.tiles, 'folder'),
  ];
}

/**
 * A command's check of the jobs it is about to queue, against the schemas the workers check them
 * with: a usage error naming the first job and field a worker would refuse (an --out holding a
 * newline, say), before anything is queued.
 */
export function checkJobs(jobs: { name: string; data: object }[]): void {
  for (const job of jobs) {
    try {
      JOB_KINDS[job.name].check(JSON.parse(JSON.stringify(job.data)), '');
    } catch (err) {
      if (err instanceof SchemaError) throw new UsageError(`the workers would refuse this run's ${job.name} job: ${err.message}`);
      throw err;
    }
  }
}
