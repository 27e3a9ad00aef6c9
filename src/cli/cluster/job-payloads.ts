/**
 * What a job carries: the payload of every job kind (the types the commands queue and the job
 * functions take: src/cli/cluster/dedup.ts, shard-build.ts, shard-search.ts) and the schema a
 * worker checks it against before it runs (src/cli/cluster/job-schema.ts; the relations between
 * fields, row ranges in order, a block within the plan, are part of the schema). The job kinds
 * themselves (paths, runners) are in src/cli/cluster/job-kinds.ts, above the job functions; this
 * file is below them, so that the commands' side (runFlow's checkJobs, the plans' limits) needs
 * nothing from the workers' registry.
 *
 * The schemas describe exactly what the commands queue: absolute paths, outputs with the
 * extensions the command line allows, run folders named as a run names them, inputs with the size
 * and mtime the plan saw. A command checks every job it is about to queue against them too
 * (checkJobs, from runFlow), so that a job the workers would refuse is refused before anything
 * runs.
 */
import { dirname } from 'node:path';
import { describeIndexType, parseIndexType } from '../../indexes/factory.js';
import type { DedupMetric } from '../../jobs/dedup.js';
import { MANIFEST_FORMAT, MANIFEST_VERSION, type ShardManifest } from '../../indexes/shards.js';
import { INDEX_KINDS } from '../../indexes/registry.js';
import type { Metric } from '../../types.js';
import { GRAPH_SEARCH_MAX_ITOPK, GRAPH_SEARCH_MAX_WIDTH } from '../../device.js';
import { GRAPH_MAX_ENTRY_ROWS, GRAPH_MAX_SEEDS } from '../../indexes/graph/graph-index.js';
import type { KindSearchParam, KindSearchParams } from '../../indexes/kind.js';

import type { InputFile } from './job-files.js';
import { type Check, array, bool, finite, int, nullable, object, oneOf, refine, str } from './job-schema.js';
import type { ShardRef } from './shard-files.js';
import { UsageError, SchemaError } from '../../errors.js';

/** The most row blocks (dedup) or query blocks (search) a plan has: the commands refuse more, the schemas too. */
export const MAX_BLOCKS = 1 << 20;
/** The most shards a search job lists. */
export const MAX_SHARDS = 1 << 16;

// ---------------------------------------------------------------- payloads

/** What every job of one distributed dedup shares. */
export interface DedupPlan {
  input: InputFile;
  metric: DedupMetric;
  threshold: number;
  d: number;
  tiles: string;
  /** --max-candidates: the bound on candidate pairs, per tile and in all (null: none). */
  maxCandidates: number | null;
}
/** Block pair (i, j): rows [ri[0], ri[1]) against rows [rj[0], rj[1]) (i == j: the block with itself). Its own rows only, so that B^2 / 2 jobs do not each carry all B blocks. */
export interface TileJob extends DedupPlan {
  i: number;
  j: number;
  ri: [number, number];
  rj: [number, number];
}
export interface ReduceJob extends DedupPlan {
  n: number;
  /** Row block starts, and n at the end. */
  starts: number[];
  out: string;
  clusters?: string;
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
export interface BuildProducer {
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

/** A search of a sharded index: what every search-shard and the search-merge job share. */
export interface SearchPlan extends KindSearchParams {
  shards: ShardRef[];
  metric: Metric;
  queries: InputFile;
  /** Query block starts, and nq at the end. */
  starts: number[];
  /** Neighbours searched per shard (k, or k + 1 for a graph of the index's own vectors). */
  kk: number;
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

// ---------------------------------------------------------------- schemas

const ROWS = Number.MAX_SAFE_INTEGER;
const path = str(4096, /^\//, 'an absolute path');
const ext = (exts: string[]) => str(4096, new RegExp(`^/.*(${exts.map((e) => e.replace('.', '\\.')).join('|')})$`, 'i'), `an absolute path ending in ${exts.join(', ')}`);
/** An input file as the plan saw it (src/cli/cluster/job-files.ts: InputFile). */
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

/** The manifest's lock as the producer took it (src/cli/cluster/shard-build.ts: checkProducer); only read. */
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
const shardHeader = object({ type: oneOf(...INDEX_KINDS.map((k) => k.name)), nlist: int(0, 2 ** 32), dim: int(1, 2 ** 31 - 1), metric: oneOf('l2', 'ip', 'cosine'), nprobe: int(0, 2 ** 32) });
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
/** The kinds' own search parameters (KIND_SEARCH_PARAMS), in the widest range any index takes: the shard's index checks its own. */
const kindParams: Record<KindSearchParam, Check<number>> = {
  nprobe: int(1, 2 ** 32),
  itopk: int(1, GRAPH_SEARCH_MAX_ITOPK),
  searchWidth: int(1, GRAPH_SEARCH_MAX_WIDTH),
  maxIterations: int(0, 2 ** 31 - 1),
  seeds: int(1, GRAPH_MAX_SEEDS),
  entryRows: int(1, GRAPH_MAX_ENTRY_ROWS),
};
const searchOptional = { ...kindParams, kFactor: finite(1), filter: input() };

const SEARCH_SHARD_JOB: Check<SearchShardJob> = refine(object({ ...searchPlan, block: int(0, MAX_BLOCKS - 1), shard: int(0, MAX_SHARDS - 1) }, searchOptional), (s) => {
  if (s.block >= s.starts.length - 1) return `block ${s.block} is not one of the plan's ${s.starts.length - 1}`;
  if (s.shard >= s.shards.length) return `shard ${s.shard} is not one of the plan's ${s.shards.length}`;
  return starts(s.starts);
});

const SEARCH_MERGE_JOB: Check<SearchMergeJob> = refine(
  object({ ...searchPlan, out: ext(['.ivecs', '.npy', '.csv', '.jsonl']), k: int(1, 2 ** 21), excludeSelf: bool }, { ...searchOptional, dist: ext(['.fvecs', '.npy', '.csv', '.jsonl']) }),
  (m) => starts(m.starts) ?? (m.kk !== m.k + (m.excludeSelf ? 1 : 0) ? `kk must be k${m.excludeSelf ? ' + 1' : ''}` : null),
);

/** The schema of every job kind, by job name (src/cli/cluster/job-kinds.ts gives each its paths and runner). */
export const JOB_SCHEMAS = {
  'self-join-tile': TILE_JOB,
  'dedup-reduce': REDUCE_JOB,
  'build-shard': BUILD_SHARD_JOB,
  'build-manifest': BUILD_MANIFEST_JOB,
  'search-shard': SEARCH_SHARD_JOB,
  'search-merge': SEARCH_MERGE_JOB,
};
export type JobName = keyof typeof JOB_SCHEMAS;

/**
 * A command's check of the jobs it is about to queue, against the schemas the workers check them
 * with: a usage error naming the first job and field a worker would refuse (an --out holding a
 * newline, say), before anything is queued.
 */
export function checkJobs(jobs: { name: string; data: object }[]): void {
  for (const job of jobs) {
    try {
      (JOB_SCHEMAS as Record<string, Check<unknown>>)[job.name](JSON.parse(JSON.stringify(job.data)), '');
    } catch (err) {
      if (err instanceof SchemaError) throw new UsageError(`the workers would refuse this run's ${job.name} job: ${err.message}`);
      throw err;
    }
  }
}
