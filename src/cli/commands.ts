/**
 * The tool's commands: build, search, remove, range-search, dedup, knn-graph (info, bench and demo
 * are in main.ts). Each takes `--help`; `--backend auto|webgpu|cpu` everywhere. Indexes are seen
 * through VectorIndex only.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { extname } from 'node:path';
import { parseArgs } from 'node:util';
import { type Backend } from '../backend/backend.js';
import { createBackend } from '../backend/create-backend.js';
import { FACTORY_FORMS, createIndex, describeIndexType, parseIndexType } from '../indexes/factory.js';
import { Codec, codecName } from '../codecs/codec.js';
import { checkTransform } from '../codecs/transforms.js';
import { allocationError, bytesText } from '../io/file-error.js';
import { inPlaceTarget, lockFile } from '../io/file-lock.js';
import { readIdFile, readJsonlIds } from '../io/id-file.js';
import { type IndexFileHeader, isIvfType, readIndexHeader } from '../io/index-file.js';
import { loadIndex } from '../indexes/load-index.js';
import { AtomicFile, type Output, VectorStreamWriter, commitOutputs } from '../io/stream-writer.js';
import { READ_FORMATS } from '../io/vectors.js';
import { type VectorReader, openVectors } from '../io/vector-reader.js';
import { type DedupMetric, type DedupResult, dedup } from '../jobs/dedup.js';
import { DEFAULT_MAX_CANDIDATES } from '../common/pairs.js';
import { knnGraph } from '../jobs/knn-graph.js';
import { clusteredDedup } from '../jobs/clustered-dedup.js';
import type { Metric, RangeSearchResult } from '../types.js';
import { MAX_RADIUS, type SearchParams, type VectorIndex } from '../indexes/vector-index.js';
import type { VectorSource } from '../common/vector-source.js';
import { distributedDedup } from './distributed.js';
import { openCluster } from './flow.js';
import { readJobSecret } from './job-auth.js';
import { openRoot } from './job-paths.js';
import { checkRedisUrl } from './redis-link.js';
import { DEFAULT_LOCK_MS, runWorker } from './worker.js';
import { DEFAULT_QUERY_ROWS, buildShards, checkManifest, checkShardable, checkShardOutputs, distributedKnnGraph, distributedSearchShards, manifestInput, searchShards, shardsOf } from './shards.js';
import { MANIFEST_FORMAT, isManifestPath } from '../indexes/shards.js';
import { UsageError, intFlag, thresholdFlag } from './flags.js';
import { type PathFlag, checkOutputs } from './paths.js';
import { Progress } from './progress.js';
import { type IndexType } from '../indexes/kind.js';

export { UsageError };

/** The largest k any backend takes; the backend's own limit is checked once it exists. */
const K_LIMIT = 1 << 20;
/** Pairs formatted per write of the dedup and range-search outputs (bounded memory however many pairs there are). */
const PAIRS_PER_WRITE = 1 << 16;
/** Queries per range search: its results are held until written. */
const RANGE_QUERIES_PER_SEARCH = 1024;

const BACKEND_OPT = '  --backend B       auto | webgpu | cpu (default auto: WebGPU when an adapter exists)';
const FILES = `Vector files: ${READ_FORMATS.join(', ')}.`;
const ID_FILES = `Id files: .npy of int64 (also int32, uint32), shape (n,) or (n, 1); .jsonl: the 'id' of
every line (digits, as a number or a string: not 1e3 or 4.0); or text (.txt, .csv, anything else):
one decimal id per line, blank lines ignored. Ids are integers in [0, 2^53 - 1]; a bad one is
refused (exit 1) with the file, the line (or element) and the value.`;
const NEIGHBOUR_IDS = `neighbour ids: .npy (int64), .csv, .jsonl, or .ivecs (int32:
                    refused, nothing written, if an id exceeds 2147483647); missing
                    neighbours are -1`;
const OUTPUTS = `Every flag and output path is checked before any work starts; an output may not be an input
or another output (exit 2). Outputs are written to temporary files (.NAME.webgpu-knn-tmp-HOST-PID-*)
in the output's directory and renamed into place together at the end: after a failure none appears
(old files stay as they were); Ctrl-C removes the temporary files (an output already renamed into
place is complete); a temporary file left by a killed run is removed by the next run on the same
host writing that output (another host's are left to it).
Exit codes: 0 ok, 1 failure (unreadable or malformed file, full disk, ...), 2 usage error.`;

export const USAGE: Record<string, string> = {
  build: `usage: webgpu-knn build --input FILE --out INDEX [options]

Builds an index from a vector file and saves it (versioned, checksummed; written atomically).

options:
  --input FILE      the vectors (${READ_FORMATS.slice(0, 5).join(' ')}, IDX)
  --out INDEX       the index file to write (locked while it is built: a second build or a
                    remove of it fails at once, exit 1)
  --ids FILE        the vectors' ids, one per row of --input, in order, none twice (default:
                    a .jsonl input's own 'id' fields, else the row numbers 0, 1, ...); searches
                    then return these ids
  --type T          ${FACTORY_FORMS} (default Flat);
                    nlist at most the number of vectors
  --metric M        l2 | ip | cosine (default l2)
  --nprobe P        IVF: lists scanned per query, in [1, nlist], saved with the index (default 1)
  --train-sample N  IVF: train k-means on a seeded sample of at most N vectors (default: 256 per
                    list, as Faiss; all of them when there are fewer)
  --shards S        split the rows into S contiguous shards (S in [1, rows]), each an index file
                    NAME.BUILD.shard-<s>.idx beside --out, which is then their manifest NAME.json
                    (a rebuild over it removes the old shards once the new manifest is written);
                    trained once (IVF: the centroids of the unsharded build, shared); Flat and
                    IVF<nlist>,Flat only. One build of a manifest at a time (its lock); each
                    first removes the shard files an interrupted build of it left, naming them
                    (README, "Sharded indexes")
  --distributed URL with --shards: train here, then build the shards as jobs on 'webgpu-knn
                    worker' processes through the BullMQ queue in Redis at URL (paths on a file
                    system every worker sees, inside each worker's --root); the same files as
                    without it
  --secret-file FILE  with --distributed: the job secret the workers share (default: the file
                    $WEBGPU_KNN_SECRET_FILE names, else $WEBGPU_KNN_SECRET); every job is signed
                    with it (README, "Securing a cluster")
${BACKEND_OPT}
  -h, --help        this text
${FILES}
${ID_FILES}
${OUTPUTS}`,
  search: `usage: webgpu-knn search --index INDEX --queries FILE --k K --out FILE [options]

Searches a saved index; writes each query's k neighbour ids (the ids given to 'build --ids', else
row numbers of the indexed file), best first.

options:
  --index INDEX     an index file from 'webgpu-knn build', or a shard manifest (.json) from
                    'build --shards': shards searched in turn, their top-k merged (the same
                    output as the unsharded index); each shard checked against the manifest
                    first (a file in its folder, listed once, its header, count and ids)
  --queries FILE    the query vectors
  --k K             neighbours per query (at most the backend's max k: 'webgpu-knn info')
  --out FILE        ${NEIGHBOUR_IDS}
  --distances FILE  also their distances: .fvecs, .npy, .csv or .jsonl
  --filter-ids FILE only vectors with these ids may be neighbours: each query gets its k nearest
                    allowed vectors (fewer only if fewer are allowed); ids the index does not
                    hold are ignored
  --nprobe P        IVF: lists scanned per query, in [1, nlist] (default: as saved)
  --kfactor F       re-score the k x F best candidates exactly and keep k (a number >= 1, default
                    1): against the float32 rows of a ,RFlat index (Faiss's k_factor), else the
                    codes' reconstructions
  --distributed URL with a manifest: the (query block, shard) searches run on 'webgpu-knn worker'
                    processes through the BullMQ queue in Redis at URL, then one merge job; the
                    same output as without it. Paths must be on a file system every worker
                    sees, inside each worker's --root. --backend is then the workers' own.
  --secret-file FILE  with --distributed: the job secret the workers share (default: the file
                    $WEBGPU_KNN_SECRET_FILE names, else $WEBGPU_KNN_SECRET); every job is signed
                    with it (README, "Securing a cluster")
  --query-rows Q    with a manifest: query rows per (query block, shard) search (default 65536)
${BACKEND_OPT}
  -h, --help        this text
${ID_FILES}
${OUTPUTS}`,
  remove: `usage: webgpu-knn remove --index INDEX --ids FILE [--out INDEX2] [options]

Removes the vectors with the given ids from a saved index and saves it without them: over --index
(written to a temporary file renamed into place: after a failure the old index is still there),
or to --out. Prints how many vectors were removed and how many remain. The other vectors keep
their ids. An --index that is a symbolic link is updated where it leads (the link stays); an --out
that is one is replaced. The index written is locked (.NAME.webgpu-knn-lock) from before it is read
until it is renamed into place: another remove or build of it meanwhile fails at once (exit 1),
naming this one.

options:
  --index INDEX     an index file from 'webgpu-knn build' (not a shard manifest)
  --ids FILE        the ids to remove; ids the index does not hold are ignored
  --out INDEX2      write the index here and leave --index as it is
${BACKEND_OPT}
  -h, --help        this text
${ID_FILES}
${OUTPUTS}`,
  'range-search': `usage: webgpu-knn range-search --index INDEX --queries FILE --radius R --out FILE [options]

Every indexed vector within R of each query: l2: squared distance <= R; ip: inner product >= R;
cosine: cosine similarity >= R. Prints how many results there are in all.

options:
  --index INDEX     an index file from 'webgpu-knn build'
  --queries FILE    the query vectors
  --radius R        l2: a squared distance in [0, 1e38]; ip: a number in [-1e38, 1e38]; cosine:
                    in [-1, 1] (decimal; a negative one as --radius=-0.5)
  --out FILE        .csv (header query,id,distance; one line per result) or .jsonl (one
                    {"query", "id", "distance"} object a line): queries in file order (0-based
                    rows), each query's results best first (ties: the smaller id first)
  --filter-ids FILE only vectors with these ids may be results
  --nprobe P        IVF: lists scanned per query, in [1, nlist] (default: as saved); only vectors
                    in the scanned lists are found
  --max-candidates N  fail (exit 1, nothing written) when the radius lets through more than N
                    candidates in a block of 1024 queries (default ${DEFAULT_MAX_CANDIDATES}): a
                    radius too loose for the corpus
${BACKEND_OPT}
  -h, --help        this text
${ID_FILES}
${OUTPUTS}`,
  dedup: `usage: webgpu-knn dedup --input FILE --metric cosine|l2 --threshold T --out FILE [options]

Finds every pair i < j of near-duplicate vectors: cosine >= T, or squared L2 <= T. Candidates are
found on the backend with a safety margin and confirmed exactly (float64), so none is missed.

options:
  --input FILE      the vectors
  --metric M        cosine | l2
  --threshold T     cosine: the smallest similarity, in [-1, 1]; l2: the largest squared
                    distance, >= 0
  --out FILE        the pairs: .csv (header i,j,score; 0-based rows, i < j, sorted by i then j;
                    rows also for a .jsonl input with 'id' fields) or .jsonl (the same fields)
  --clusters FILE   also the groups (JSON: clusters with the lowest id first = kept, and drop: the
                    ids to drop)
  --max-candidates N  fail (exit 1, nothing written) when the threshold lets through more than N
                    candidate pairs (default ${DEFAULT_MAX_CANDIDATES}): a threshold too loose.
                    Pairs are written as they are confirmed, so their number is not bounded.
                    With --distributed: a tile over N fails at once, and the total is checked
                    before the reduce writes anything
  --against INDEX   instead of pairs within the input: every (new row i, corpus id j) with i a row of
                    the input and j the id of a vector of INDEX (from 'webgpu-knn build', with
                    the same --metric) within the threshold, by a range search of the index
                    (exact for Flat; IVF scans the nprobe lists it was saved with); pairs in i
                    order, each row's best first. No --clusters. A cosine index holds its
                    vectors normalised to float32: pairs down to 2^-22 below the threshold are
                    kept too (README, "Range search"), so that none at it is lost
  --partitions C    approximate (SemDeDup): k-means into C partitions, each row into its --overlap
                    nearest, the exact join inside each partition only; every pair found is a
                    true pair, but a pair whose rows share no partition is missed (see README,
                    "Clustered dedup", for measured recall). About overlap^2 / C of the work;
                    --max-candidates counts a pair once for each partition it is found in
  --overlap M       with --partitions: partitions per row, in [1, C] (default 1); more finds more
  --distributed URL run the self-join on 'webgpu-knn worker' processes through the BullMQ queue in
                    Redis at URL (redis://HOST:PORT): block pairs of --tile-rows rows as jobs, then
                    one reduce job; the same output as without it. Paths must be on a file system
                    every worker sees, inside each worker's --root. --backend is then the
                    workers' own.
  --secret-file FILE  with --distributed: the job secret the workers share (default: the file
                    $WEBGPU_KNN_SECRET_FILE names, else $WEBGPU_KNN_SECRET); every job is signed
                    with it (README, "Securing a cluster")
  --tile-rows R     rows per block with --distributed (default 65536)
${BACKEND_OPT}
  -h, --help        this text
${OUTPUTS}`,
  worker: `usage: webgpu-knn worker --redis URL --root DIR [--secret-file FILE] [options]

Takes jobs (dedup --distributed's block pairs and reduces; the shard builds, searches and
merges of search and knn-graph --distributed) from the BullMQ queue in Redis at URL
until SIGTERM or SIGINT, which let the current jobs finish. Run one per GPU, on any machine that
sees the same file system. A worker that dies loses its job's lock; once it expires another worker
runs the job again (see README, "Distributed dedup").

A worker runs only jobs it can verify: signed with its job secret and not expired, of a known
kind whose payload fits that kind's schema, every path inside --root, of a run whose command
still lives (its pid on this host, its heartbeat from another). Any other job is refused
(failed at once, one line "refused job NAME ID: why" on stderr; no file touched). Redis
unreachable at the start: exit 1; lost later: the worker waits for it to come back. See README,
"Securing a cluster".

options:
  --redis URL       redis://HOST:PORT, or rediss://HOST:PORT (TLS); USER:PASSWORD@ before HOST
                    where Redis needs one (or the password in $WEBGPU_KNN_REDIS_PASSWORD), /N
                    after PORT for database N
  --root DIR        required: every path a job names must lie inside DIR (after symbolic links
                    are followed), for example the shared file system's mount
  --secret-file FILE  the job secret, at least 16 bytes (without the flag: the file
                    $WEBGPU_KNN_SECRET_FILE names, else $WEBGPU_KNN_SECRET; one is required)
  --concurrency N   jobs at once (default 1)
  --lock-ms MS      BullMQ lockDuration and stalledInterval (default 60000)
${BACKEND_OPT}
  -h, --help        this text`,
  'knn-graph': `usage: webgpu-knn knn-graph --input FILE --k K --out FILE [options]

For every vector its k nearest other vectors (or, with --queries, every query's k nearest),
written block by block so that memory stays bounded.

options:
  --input FILE      the vectors to index (a .jsonl input's 'id' fields, if it has them, are
                    the neighbour ids written; else row numbers)
  --index MANIFEST  instead of --input, --type, --metric: the vectors of a sharded index (from
                    'build --shards' without --ids; its input file, checked by size and mtime),
                    searched shard by shard
  --queries FILE    optional: search these instead of the input itself
  --k K             neighbours per row (at most the backend's max k: 'webgpu-knn info')
  --out FILE        ${NEIGHBOUR_IDS}
  --distances FILE  also their distances: .fvecs, .npy, .csv or .jsonl
  --type T          ${FACTORY_FORMS} (default Flat);
                    nlist at most the number of vectors
  --metric M        l2 | ip | cosine (default l2)
  --nprobe P        IVF: lists scanned per query, in [1, nlist] (default min(8, nlist))
  --train-sample N  IVF: train k-means on a seeded sample of at most N vectors (default: 256 per
                    list, as Faiss)
  --distributed URL train here, build --shards shards and search them on 'webgpu-knn worker'
                    processes through the BullMQ queue in Redis at URL (shards in a directory
                    beside --out, removed at the end); the same output as without it. With
                    --index: search that index's shards there.
  --secret-file FILE  with --distributed: the job secret the workers share (default: the file
                    $WEBGPU_KNN_SECRET_FILE names, else $WEBGPU_KNN_SECRET); every job is signed
                    with it (README, "Securing a cluster")
  --shards S        with --distributed: shards to build (default 3)
  --query-rows Q    with --distributed or --index: query rows per job (default 65536)
${BACKEND_OPT}
  -h, --help        this text
${OUTPUTS}`,
};

type Values = Record<string, string | boolean | undefined>;

function parse(command: string, argv: string[]): Values | null {
  const names = [...USAGE[command].matchAll(/^ {2}--([a-z-]+)/gm)].map((m) => m[1]).filter((n) => n !== 'help');
  const { values } = parseArgs({
    args: argv,
    options: Object.fromEntries([...names.map((n) => [n, { type: 'string' as const }]), ['help', { type: 'boolean' as const, short: 'h' }]]),
  }) as { values: Values };
  if (values.help) {
    console.log(USAGE[command]);
    return null;
  }
  return values;
}

function required(v: Values, name: string): string {
  const s = v[name];
  if (typeof s !== 'string' || s === '') throw new UsageError(`--${name} is required`);
  return s;
}

const text = (v: Values, name: string): string | undefined => v[name] as string | undefined;

/**
 * --distributed URL with --secret-file, checked before any work (openCluster: the URL, the job
 * secret, Redis reached); undefined without --distributed.
 */
async function clusterOf(v: Values): Promise<string | undefined> {
  const url = text(v, 'distributed');
  if (url === undefined) {
    if (v['secret-file'] !== undefined) throw new UsageError('--secret-file applies with --distributed');
    return undefined;
  }
  return openCluster(url, text(v, 'secret-file'));
}

function metricOf(v: Values): Metric {
  const m = text(v, 'metric') ?? 'l2';
  if (!['l2', 'ip', 'cosine'].includes(m)) throw new UsageError(`--metric must be l2, ip or cosine; got ${m}`);
  return m as Metric;
}

function indexTypeOf(v: Values): IndexType {
  try {
    return parseIndexType(text(v, 'type') ?? 'Flat');
  } catch (err) {
    throw new UsageError(`--type: ${(err as Error).message}`);
  }
}

/** --nprobe for an index of `type`: in [1, nlist]; `fallback` when absent (IVF only). */
function nprobeOf(v: Values, type: IndexType, fallback: number): number | undefined {
  if (type.type !== 'IVF') return undefined;
  return intFlag('nprobe', text(v, 'nprobe'), 1, type.nlist, Math.min(fallback, type.nlist));
}

/**
 * The usage errors of an index type for `file`: a codec that cannot code its rows (PQ's M must
 * divide the dim), a transform's p above the dim, an IVF nlist larger than the number of vectors (k-means needs n >= nlist).
 */
function checkTypeFor(type: IndexType, file: VectorReader): void {
  try {
    if (type.codec) Codec.checkOptions(codecName(type.codec), type.refine, file.dim);
    if (type.transform) checkTransform(type.transform, file.dim);
  } catch (err) {
    throw new UsageError(`--type ${describeIndexType(type)}: ${(err as Error).message}`);
  }
  if (type.type === 'IVF' && type.nlist > file.rows) {
    throw new UsageError(`--type ${describeIndexType(type)} needs at least nlist = ${type.nlist} vectors to train on; ${file.path} has ${file.rows}`);
  }
}

function backendChoice(v: Values): 'auto' | 'webgpu' | 'cpu' {
  const b = text(v, 'backend') ?? 'auto';
  if (!['auto', 'webgpu', 'cpu'].includes(b)) throw new UsageError(`--backend must be auto, webgpu or cpu; got ${b}`);
  return b as 'auto' | 'webgpu' | 'cpu';
}

/**
 * Creates the backend (the last step before heavy work) and checks k against its limit (`spare`:
 * one less for a kNN graph of the input itself, which searches k + 1 to drop each vector's self).
 */
async function openBackend(choice: 'auto' | 'webgpu' | 'cpu', k?: number, spare = 0): Promise<Backend> {
  const backend = await createBackend({ backend: choice });
  process.stderr.write(`backend: ${backend.description}\n`);
  if (k !== undefined && k > backend.maxK - spare) {
    backend.dispose();
    throw new UsageError(`--k must be an integer in [1, ${backend.maxK - spare}] on the ${backend.kind} backend; got ${k}`);
  }
  return backend;
}

function checkExt(path: string, allowed: string[], what: string): void {
  if (!allowed.includes(extname(path).toLowerCase())) throw new UsageError(`${what} must end in ${allowed.join(', ')}; got ${path}`);
}

const inputs = (...flags: [string, string | undefined][]): PathFlag[] =>
  flags.filter((f): f is [string, string] => f[1] !== undefined).map(([flag, path]) => ({ flag, path }));

/** --train-sample: at most this many training points (IVF only). */
function trainSampleOf(v: Values, type: IndexType): number | undefined {
  const given = text(v, 'train-sample');
  if (given === undefined) return undefined;
  if (type.type !== 'IVF') throw new UsageError('--train-sample applies to IVF indexes only');
  return intFlag('train-sample', given, type.nlist, Number.MAX_SAFE_INTEGER);
}

/** The index flags build and knn-graph share: --type, --metric, --nprobe, --train-sample. */
interface IndexSettings {
  type: IndexType;
  metric: Metric;
  nprobe: number | undefined;
  trainSample: number | undefined;
}

function indexSettingsOf(v: Values, defaultNprobe: number): IndexSettings {
  const type = indexTypeOf(v);
  return { type, metric: metricOf(v), nprobe: nprobeOf(v, type, defaultNprobe), trainSample: trainSampleOf(v, type) };
}

/**
 * `file` as a source whose every pass reports the bytes it has read, under `label`; `onRead` is
 * called when a pass has read the whole file.
 */
function reporting(file: VectorReader, label: string, onRead?: () => void): VectorSource {
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
async function buildIndex(backend: Backend, s: IndexSettings, file: VectorReader, hostCopy?: boolean, ids?: BigInt64Array): Promise<VectorIndex> {
  const index = createIndex(backend, file.dim, s.type, s.metric, { hostCopy, nprobe: s.nprobe });
  const progress = new Map<string, Progress>();
  const onProgress = (done: number, total: number, phase = 'adding'): void => {
    if (!progress.has(phase)) progress.set(phase, new Progress(phase === 'assign' ? 'assigning to lists' : phase === 'add' ? 'adding to lists' : phase));
    progress.get(phase)!.update(done, total);
  };
  // Training is timed from the end of the sample's read, which reports its own time.
  let p: Progress | null = null;
  const sample = reporting(file, 'reading the training sample', () => (p = new Progress('training')));
  await index.train(sample, { onProgress: (e) => (p ??= new Progress('training')).update(e.iteration, e.niter), maxPoints: s.trainSample });
  await index.addFrom(file, { onProgress, ids });
  return index;
}

export async function build(argv: string[]): Promise<void> {
  const v = parse('build', argv);
  if (!v) return;
  const input = required(v, 'input');
  const out = required(v, 'out');
  const idsPath = text(v, 'ids');
  const settings = indexSettingsOf(v, 1);
  const choice = backendChoice(v);
  const shardsText = text(v, 'shards');
  if (v.distributed !== undefined && shardsText === undefined) throw new UsageError('--distributed builds the shards of --shards S on workers; give --shards');
  if (shardsText !== undefined) {
    checkExt(out, ['.json'], '--out with --shards (the manifest)');
    checkShardable(settings.type);
  } else if (isManifestPath(out)) throw new UsageError(`--out ${out}: a .json index is a shard manifest; give --shards S, or a name not ending in .json`);
  checkOutputs(inputs(['--out', out]), inputs(['--input', input], ['--ids', idsPath]));
  const url = await clusterOf(v);
  // One writer of an index file at a time, from before the input is read until the saved index is
  // renamed into place: a second build or a remove of it fails at once. (A manifest's writer is
  // buildShards.)
  const lock = shardsText === undefined ? lockFile(out, 'build') : null;
  try {
    const file = await openVectors(input);
    checkTypeFor(settings.type, file);
    const shards = shardsText === undefined ? undefined : shardsOf(shardsText, file.rows);
    if (shards !== undefined) checkShardOutputs(out, shards, inputs(['--input', input], ['--ids', idsPath]));
    const ids = await vectorIds(idsPath, file);
    const backend = await openBackend(choice);
    try {
      if (shards !== undefined) return await buildShards(backend, settings, file, shards, out, ids?.path, url);
      await naming(indexOf(file), async () => {
        const index = await buildIndex(backend, settings, file, false, ids?.ids);
        const p = new Progress('saving');
        await index.save(out, { onProgress: (done, total) => p.update(done, total) });
        process.stderr.write(`wrote ${out}: ${index.ntotal} vectors of dim ${file.dim}\n`);
      });
    } finally {
      backend.dispose();
    }
  } finally {
    lock?.release();
  }
}

/**
 * The ids of `file`'s vectors and the file that holds them: --ids (`idsPath`), or else a JSON Lines
 * input's own `id` fields (refused when both give ids); undefined where neither does (the row
 * numbers are the ids).
 */
async function vectorIds(idsPath: string | undefined, file: VectorReader): Promise<{ ids: BigInt64Array; path: string } | undefined> {
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
const sizeOf = (file: VectorReader): string => `${file.rows} x ${file.dim} float32, ${bytesText(4 * file.rows * file.dim)}`;
/** What building an index of `file` allocates. */
const indexOf = (file: VectorReader): string => `the index of ${file.path} (${sizeOf(file)})`;
/** What a dedup of `file` allocates (its rows, held for the exact check, and the join's copy). */
const rowsOf = (file: VectorReader): string => `the rows of ${file.path} for the dedup (${sizeOf(file)})`;

/** Runs `fn`; an allocation in it that fails (out of memory, a ulimit) is one line naming `what`, never a stack trace. */
async function naming<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw allocationError(err, what);
  }
}

export async function search(argv: string[]): Promise<void> {
  const v = parse('search', argv);
  if (!v) return;
  const { out, dist } = neighbourOutputs(v);
  const k = intFlag('k', text(v, 'k'), 1, K_LIMIT);
  const indexPath = required(v, 'index');
  const queriesPath = required(v, 'queries');
  const filterPath = text(v, 'filter-ids');
  const choice = backendChoice(v);
  checkOutputs(inputs(['--out', out], ['--distances', dist]), inputs(['--index', indexPath], ['--queries', queriesPath], ['--filter-ids', filterPath]));
  const sharded = isManifestPath(indexPath);
  if (!sharded && (v.distributed !== undefined || v['query-rows'] !== undefined)) {
    throw new UsageError(`--distributed and --query-rows search a sharded index (a .json manifest from 'build --shards'); --index ${indexPath} is one index file`);
  }
  const url = await clusterOf(v);
  const header = sharded ? await checkManifest(indexPath) : await readIndexHeader(indexPath);
  const queries = await openQueries(queriesPath, header);
  const params = await searchParamsOf(v, header, filterPath);
  if (sharded) {
    const o = { manifest: indexPath, queries: queriesPath, k, out, dist, nprobe: params.nprobe, kFactor: params.kFactor, filter: filterPath, queryRows: queryRowsOf(v) };
    if (url !== undefined) return distributedSearchShards(url, o);
    const backend = await openBackend(choice, k);
    try {
      return await searchShards(backend, o);
    } finally {
      backend.dispose();
    }
  }
  const backend = await openBackend(choice, k);
  try {
    const index = await loadWithProgress(backend, indexPath);
    await writeNeighbours(index, { queries }, k, out, dist, 'search', params);
  } finally {
    backend.dispose();
  }
}

/** The queries file, checked against the index's dim. */
async function openQueries(path: string, header: IndexFileHeader): Promise<VectorReader> {
  const queries = await openVectors(path);
  if (queries.rows > 0 && queries.dim !== header.dim) throw new UsageError(`the queries have dim ${queries.dim}; the index has dim ${header.dim}`);
  return queries;
}

/** --nprobe (IVF only: in [1, nlist]; ignored for Flat), --kfactor (search) and --filter-ids, as a search's params. */
async function searchParamsOf(v: Values, header: IndexFileHeader, filterPath: string | undefined): Promise<SearchParams> {
  const params: SearchParams = {};
  if (isIvfType(header.type) && v.nprobe !== undefined) params.nprobe = nprobeOf(v, { type: 'IVF', nlist: header.nlist, codec: null, refine: null }, 1);
  const kFactor = text(v, 'kfactor');
  if (kFactor !== undefined) {
    params.kFactor = Number(kFactor);
    if (!/^\d+(\.\d+)?$/.test(kFactor) || !(params.kFactor >= 1)) throw new UsageError(`--kfactor must be a number >= 1; got ${kFactor}`);
  }
  if (filterPath !== undefined) params.filter = await readIdFile(filterPath);
  return params;
}

/** Loads a saved index with a progress bar; `hostCopy` false where it will only be saved again (default: the device's). */
async function loadWithProgress(backend: Backend, path: string, hostCopy?: boolean): Promise<VectorIndex> {
  const p = new Progress('loading');
  return loadIndex(backend, path, { hostCopy, onProgress: (done, total) => p.update(done, total) });
}

export async function remove(argv: string[]): Promise<void> {
  const v = parse('remove', argv);
  if (!v) return;
  const indexPath = required(v, 'index');
  const idsPath = required(v, 'ids');
  const outFlag = text(v, 'out');
  const choice = backendChoice(v);
  // In place: the index is the output (replaced atomically by save), the ids file an input. An
  // --index that is a symbolic link is updated where it leads (the link stays); an --out that is
  // one is replaced, as every output is.
  const inPlace = outFlag === undefined;
  const out = outFlag ?? inPlaceTarget(indexPath);
  // In place, the file read is the one written (a link changed meanwhile changes neither).
  const source = inPlace ? out : indexPath;
  checkOutputs(inputs([inPlace ? '--index' : '--out', out]), inputs(['--ids', idsPath], ['--index', inPlace ? undefined : indexPath]));
  // The index written (in place: --index) is locked from before it is read until its replacement
  // is renamed into place: two removes at once would each save the index less their own ids, and
  // the later rename would bring back the ids the other removed.
  const lock = lockFile(out, 'remove');
  try {
    await indexHeaderOf('--index', source, 'remove');
    // Repeats removed: removing an id twice removes it once.
    const ids = BigInt64Array.from(new Set(await readIdFile(idsPath)));
    const backend = await openBackend(choice);
    try {
      const index = await loadWithProgress(backend, source, false);
      const before = index.ntotal;
      const removed = await index.removeIds(ids);
      const p = new Progress('saving');
      await index.save(out, { onProgress: (done, total) => p.update(done, total) });
      process.stderr.write(
        `removed ${removed} of the ${ids.length} ids given (${ids.length - removed} not in the index); ` +
          `ntotal ${before} -> ${index.ntotal}; wrote ${out}${inPlace && out !== indexPath ? ` (the file --index ${indexPath} links to)` : ''}\n`,
      );
    } finally {
      backend.dispose();
    }
  } finally {
    lock.release();
  }
}

/**
 * The header of the index file at `path` (given as `flag` to `command`, which takes one index
 * file); a shard manifest, by its name or its contents, is a usage error that says which commands
 * take one (else it would be "no WGPUKNN magic").
 */
async function indexHeaderOf(flag: string, path: string, command: string): Promise<IndexFileHeader> {
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

/** --radius for `metric`: l2 a squared distance in [0, MAX_RADIUS], cosine in [-1, 1], ip within +-MAX_RADIUS. */
function radiusOf(v: Values, metric: Metric): number {
  const given = text(v, 'radius');
  if (metric === 'l2') return thresholdFlag('radius', given, 0, MAX_RADIUS, 'a squared L2 distance');
  if (metric === 'cosine') return thresholdFlag('radius', given, -1, 1, 'a cosine');
  return thresholdFlag('radius', given, -MAX_RADIUS, MAX_RADIUS, 'an inner product');
}

export async function rangeSearchCommand(argv: string[]): Promise<void> {
  const v = parse('range-search', argv);
  if (!v) return;
  const out = required(v, 'out');
  checkExt(out, ['.csv', '.jsonl'], '--out');
  required(v, 'radius');
  const indexPath = required(v, 'index');
  const queriesPath = required(v, 'queries');
  const filterPath = text(v, 'filter-ids');
  const choice = backendChoice(v);
  checkOutputs(inputs(['--out', out]), inputs(['--index', indexPath], ['--queries', queriesPath], ['--filter-ids', filterPath]));
  const header = await indexHeaderOf('--index', indexPath, 'range-search');
  const radius = radiusOf(v, header.metric);
  const queries = await openQueries(queriesPath, header);
  const params = await searchParamsOf(v, header, filterPath);
  params.maxCandidates = intFlag('max-candidates', text(v, 'max-candidates'), 0, Number.MAX_SAFE_INTEGER, DEFAULT_MAX_CANDIDATES);
  const backend = await openBackend(choice);
  try {
    const index = await loadWithProgress(backend, indexPath);
    const results = await writeRange(index, queries, radius, params, out, ['query', 'id', 'distance'], 'range-search');
    process.stderr.write(`${results} results for ${queries.rows} queries within radius ${radius}; wrote ${out}\n`);
  } finally {
    backend.dispose();
  }
}

/**
 * Range-searches every row of `queries` in `index` and writes each result to `out` (.csv with a
 * header of `names`, or .jsonl with those fields): query row, id, distance, each query's results
 * best first; atomically. Returns the number of results.
 */
async function writeRange(
  index: VectorIndex,
  queries: VectorReader,
  radius: number,
  params: SearchParams,
  out: string,
  names: [string, string, string],
  label: string,
): Promise<number> {
  const csv = extname(out).toLowerCase() === '.csv';
  const file = new AtomicFile(out);
  let results = 0;
  try {
    if (csv) file.write(`${names.join(',')}\n`);
    const p = new Progress(label);
    const d = index.dim;
    for await (const b of queries.blocks()) {
      for (let r0 = 0; r0 < b.rows; r0 += RANGE_QUERIES_PER_SEARCH) {
        const rows = Math.min(RANGE_QUERIES_PER_SEARCH, b.rows - r0);
        const res = await index.rangeSearch(b.data.subarray(r0 * d, (r0 + rows) * d), radius, params);
        writeRangeResults(file, csv, names, b.start + r0, res);
        results += res.labels.length;
        p.update(b.start + r0 + rows, queries.rows, `${results} results so far`);
        // Let Ctrl-C be handled between searches (see writeNeighbours).
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
  } catch (err) {
    file.abort();
    throw err;
  }
  commitOutputs([file]);
  return results;
}

/** Writes range-search results (Faiss's lims layout) of queries q0, q0 + 1, ... as CSV or JSON Lines lines with fields `names`. */
function writeRangeResults(file: AtomicFile, csv: boolean, names: [string, string, string], q0: number, res: RangeSearchResult): void {
  const nq = res.lims.length - 1;
  let lines: string[] = [];
  for (let q = 0; q < nq; q++) {
    for (let j = res.lims[q]; j < res.lims[q + 1]; j++) {
      const values = [q0 + q, res.labels[j], res.distances[j]];
      lines.push(csv ? `${values.join(',')}\n` : `${JSON.stringify(Object.fromEntries(names.map((n, f) => [n, values[f]])))}\n`);
      if (lines.length === PAIRS_PER_WRITE) {
        file.write(lines.join(''));
        lines = [];
      }
    }
  }
  if (lines.length > 0) file.write(lines.join(''));
}

/** --out (ids) and --distances, checked for types that can hold them. */
function neighbourOutputs(v: Values): { out: string; dist: string | undefined } {
  const out = required(v, 'out');
  checkExt(out, ['.ivecs', '.npy', '.csv', '.jsonl'], '--out');
  const dist = text(v, 'distances');
  if (dist !== undefined) checkExt(dist, ['.fvecs', '.npy', '.csv', '.jsonl'], '--distances');
  return { out, dist };
}

async function writeNeighbours(
  index: VectorIndex,
  source: { queries?: VectorReader; self?: VectorReader },
  k: number,
  out: string,
  dist: string | undefined,
  label: string,
  params: SearchParams = {},
  /**
   * With `self`: the ids the index was built with, where they are not the row numbers; each row's
   * own id is then left out of its neighbours (knnGraph's `self` leaves out the row number).
   */
  selfIds?: BigInt64Array,
): Promise<void> {
  const n = (source.queries ?? source.self)!.rows;
  const outputs: VectorStreamWriter[] = [];
  try {
    const ids = new VectorStreamWriter(out, n, k, 'id');
    outputs.push(ids);
    const ds = dist ? new VectorStreamWriter(dist, n, k, 'float') : null;
    if (ds) outputs.push(ds);
    const p = new Progress(label);
    const ownIds = selfIds && source.self;
    await knnGraph(index, {
      ...(ownIds ? { k: k + 1, queries: source.self } : { k, ...source }),
      params,
      onBlock: async (start, rows, found, foundDistances) => {
        const { labels, distances } = ownIds ? dropOwnIds(found, foundDistances, rows, k, (i) => Number(selfIds[start + i])) : { labels: found, distances: foundDistances };
        ids.write(labels, rows);
        ds?.write(distances, rows);
        // Let the event loop turn, so that Ctrl-C (which removes the temporary files) is handled
        // between blocks even when the backend computes synchronously (CPU).
        await new Promise((resolve) => setImmediate(resolve));
      },
      onProgress: (done, total) => p.update(done, total),
    });
  } catch (err) {
    for (const o of outputs) o.abort();
    throw err;
  }
  commitOutputs(outputs);
  process.stderr.write(`wrote ${out}${dist ? ` and ${dist}` : ''}: ${n} rows of ${k}\n`);
}

/**
 * Rows' k + 1 neighbours (`labelsIn`, `distancesIn`) without each row's own id (`own(i)` for row
 * i), or, where ties pushed it out of the k + 1, without the last: knnGraph's dropSelf for an
 * index whose ids are not its row numbers.
 */
function dropOwnIds(labelsIn: Float64Array, distancesIn: Float32Array, rows: number, k: number, own: (row: number) => number): { labels: Float64Array; distances: Float32Array } {
  const labels = new Float64Array(rows * k);
  const distances = new Float32Array(rows * k);
  for (let i = 0; i < rows; i++) {
    const from = i * (k + 1);
    const skip = labelsIn.subarray(from, from + k + 1).indexOf(own(i));
    for (let j = 0, o = i * k; o < (i + 1) * k; j++) {
      if (j === skip) continue;
      labels[o] = labelsIn[from + j];
      distances[o++] = distancesIn[from + j];
    }
  }
  return { labels, distances };
}

export async function dedupCommand(argv: string[]): Promise<void> {
  const v = parse('dedup', argv);
  if (!v) return;
  const metric = required(v, 'metric');
  if (metric !== 'cosine' && metric !== 'l2') throw new UsageError(`--metric must be cosine or l2; got ${metric}`);
  const threshold =
    metric === 'cosine'
      ? thresholdFlag('threshold', text(v, 'threshold'), -1, 1, 'a cosine')
      : thresholdFlag('threshold', text(v, 'threshold'), 0, Infinity, 'a squared L2 distance');
  const maxCandidates = intFlag('max-candidates', text(v, 'max-candidates'), 0, Number.MAX_SAFE_INTEGER, DEFAULT_MAX_CANDIDATES);
  const out = required(v, 'out');
  checkExt(out, ['.csv', '.jsonl'], '--out');
  const input = required(v, 'input');
  const clusters = text(v, 'clusters');
  const choice = backendChoice(v);
  const against = text(v, 'against');
  checkOutputs(inputs(['--out', out], ['--clusters', clusters]), inputs(['--input', input], ['--against', against]));
  for (const flag of ['partitions', 'overlap', 'distributed', 'secret-file', 'tile-rows']) {
    if (against !== undefined && v[flag] !== undefined) throw new UsageError(`--${flag} applies to a dedup within one input; it does not combine with --against`);
  }
  if (against !== undefined) return dedupAgainst(against, input, metric, threshold, maxCandidates, out, clusters, choice);
  const distributed = text(v, 'distributed');
  const partitions = text(v, 'partitions');
  const overlap = text(v, 'overlap');
  if (overlap !== undefined && partitions === undefined) throw new UsageError('--overlap applies with --partitions only');
  if (v['tile-rows'] !== undefined && (distributed === undefined || partitions !== undefined)) throw new UsageError('--tile-rows applies with --distributed only');
  if (v['secret-file'] !== undefined && distributed === undefined) throw new UsageError('--secret-file applies with --distributed');
  if (partitions !== undefined) {
    if (distributed !== undefined) throw new UsageError('--partitions runs in one process; it does not combine with --distributed');
    const C = intFlag('partitions', partitions, 1, 2 ** 31 - 1);
    return clusteredDedupCommand(input, metric as DedupMetric, threshold, maxCandidates, out, clusters, choice, C, intFlag('overlap', overlap, 1, C, 1));
  }
  if (distributed !== undefined) {
    const tileRows = intFlag('tile-rows', text(v, 'tile-rows'), 1, 2 ** 31 - 1, 65536);
    return distributedDedup((await clusterOf(v))!, { input, metric: metric as DedupMetric, threshold, out, clusters, tileRows, maxCandidates });
  }
  const file = await openVectors(input);
  const backend = await openBackend(choice);
  try {
    const p = new Progress('dedup');
    const t0 = performance.now();
    const r = await naming(rowsOf(file), () =>
      writeDedupOutputs(out, clusters, (onPairs) =>
        dedup(backend, reporting(file, 'reading'), file.dim, {
          metric: metric as DedupMetric,
          threshold,
          maxCandidates,
          onPairs,
          onProgress: (e) => p.update(e.rowsDone, e.n, `${e.candidates} candidate pairs so far`),
        }),
      ),
    );
    process.stderr.write(
      `${r.pairs} pairs (${r.candidates} candidates checked) in ${r.clusters.length} clusters; ${r.drop.length} ids to drop; ` +
        `${((performance.now() - t0) / 1000).toFixed(2)} s; wrote ${out}${clusters ? ` and ${clusters}` : ''}\n`,
    );
  } finally {
    backend.dispose();
  }
}

/** dedup --partitions C --overlap M: clustered (approximate) dedup in this process. */
async function clusteredDedupCommand(
  input: string,
  metric: DedupMetric,
  threshold: number,
  maxCandidates: number,
  out: string,
  clusters: string | undefined,
  choice: 'auto' | 'webgpu' | 'cpu',
  partitions: number,
  overlap: number,
): Promise<void> {
  const file = await openVectors(input);
  if (partitions > Math.max(1, file.rows)) throw new UsageError(`--partitions must be an integer in [1, ${Math.max(1, file.rows)}] (the rows of ${input}); got ${partitions}`);
  const backend = await openBackend(choice);
  try {
    const t0 = performance.now();
    const p = new Progress('joining partitions');
    let confirm: Progress | null = null;
    const r = await naming(rowsOf(file), () =>
      writeDedupOutputs(out, clusters, (onPairs) =>
        clusteredDedup(backend, reporting(file, 'reading'), file.dim, {
          metric,
          threshold,
          maxCandidates,
          onPairs,
          partitions,
          overlap,
          onPartition: (done, total, candidates) => p.update(done, total, `partitions; ${candidates} candidate pairs so far`),
          onProgress: (e) => (confirm ??= new Progress('confirming')).update(e.rowsDone, e.n, `${e.candidates} candidates checked`),
        }),
      ),
    );
    const largest = r.partitionRows.reduce((a, b) => Math.max(a, b), 0);
    process.stderr.write(
      `${r.pairs} pairs (${r.candidates} candidates checked) in ${r.clusters.length} clusters; ${r.drop.length} ids to drop; ` +
        `${partitions} partitions x overlap ${overlap} (largest ${largest} rows; ${(100 * r.scoredFraction).toFixed(2)}% of the pairs scored); ` +
        `${((performance.now() - t0) / 1000).toFixed(2)} s; wrote ${out}${clusters ? ` and ${clusters}` : ''}\n`,
    );
  } finally {
    backend.dispose();
  }
}

type PairSink = (i: Uint32Array, j: Uint32Array, score: Float64Array) => void;

/**
 * dedup's outputs, shared by the single-process and the distributed dedup: `run` feeds the
 * confirmed pairs, in (i, j) order, to the sink it is given (written as they come: nothing but one
 * block is held); then the clusters; all committed together, or none after a failure (also one
 * that `beforeCommit` throws: the distributed reduce's last look at its run and input).
 */
export async function writeDedupOutputs<R extends Pick<DedupResult, 'clusters' | 'drop'>>(
  out: string,
  clusters: string | undefined,
  run: (onPairs: PairSink) => Promise<R>,
  beforeCommit?: () => void,
): Promise<R> {
  const outputs: Output[] = [];
  let r: R;
  try {
    const pairs = new AtomicFile(out);
    outputs.push(pairs);
    const csv = extname(out).toLowerCase() === '.csv';
    if (csv) pairs.write('i,j,score\n');
    r = await run((i, j, score) => {
      for (let q0 = 0; q0 < i.length; q0 += PAIRS_PER_WRITE) {
        const lines: string[] = [];
        for (let q = q0; q < Math.min(q0 + PAIRS_PER_WRITE, i.length); q++) {
          lines.push(csv ? `${i[q]},${j[q]},${score[q]}\n` : `${JSON.stringify({ i: i[q], j: j[q], score: score[q] })}\n`);
        }
        pairs.write(lines.join(''));
      }
    });
    if (clusters !== undefined) {
      const c = new AtomicFile(clusters);
      outputs.push(c);
      c.write(JSON.stringify({ clusters: r.clusters, drop: Array.from(r.drop) }) + '\n');
    }
    beforeCommit?.();
  } catch (err) {
    for (const o of outputs) o.abort();
    throw err;
  }
  commitOutputs(outputs);
  return r;
}

export async function workerCommand(argv: string[]): Promise<void> {
  const v = parse('worker', argv);
  if (!v) return;
  const url = checkRedisUrl('redis', required(v, 'redis'));
  const root = openRoot(required(v, 'root'));
  const concurrency = intFlag('concurrency', text(v, 'concurrency'), 1, 1024, 1);
  const lockMs = intFlag('lock-ms', text(v, 'lock-ms'), 100, 2 ** 31 - 1, DEFAULT_LOCK_MS);
  const backend = backendChoice(v);
  const secret = readJobSecret(text(v, 'secret-file'), 'a worker');
  await runWorker({ url, root, secret, backend, concurrency, lockMs });
}

/** dedup --against INDEX: the new rows of `input` against an existing corpus, by range search. */
async function dedupAgainst(
  indexPath: string,
  input: string,
  metric: string,
  threshold: number,
  maxCandidates: number,
  out: string,
  clusters: string | undefined,
  choice: 'auto' | 'webgpu' | 'cpu',
): Promise<void> {
  if (clusters !== undefined) throw new UsageError('--clusters groups the pairs within one input; it does not apply with --against');
  const header = await indexHeaderOf('--against', indexPath, 'dedup --against');
  if (header.metric !== metric) throw new UsageError(`--against ${indexPath} is a ${header.metric} index; --metric is ${metric} (they must agree)`);
  const file = await openQueries(input, header);
  const backend = await openBackend(choice);
  try {
    const t0 = performance.now();
    const index = await loadWithProgress(backend, indexPath);
    const pairs = await writeRange(index, file, threshold, { maxCandidates }, out, ['i', 'j', 'score'], 'dedup');
    process.stderr.write(`${pairs} pairs of ${file.rows} new rows against ${index.ntotal} indexed; ${((performance.now() - t0) / 1000).toFixed(2)} s; wrote ${out}\n`);
  } finally {
    backend.dispose();
  }
}

export async function knnGraphCommand(argv: string[]): Promise<void> {
  const v = parse('knn-graph', argv);
  if (!v) return;
  const { out, dist } = neighbourOutputs(v);
  const k = intFlag('k', text(v, 'k'), 1, K_LIMIT);
  const indexPath = text(v, 'index');
  if (indexPath !== undefined) return knnGraphOfShards(v, indexPath, k, out, dist);
  const input = required(v, 'input');
  const queriesPath = text(v, 'queries');
  const settings = indexSettingsOf(v, 8);
  const choice = backendChoice(v);
  if (v.distributed === undefined && (v.shards !== undefined || v['query-rows'] !== undefined)) throw new UsageError('--shards and --query-rows apply with --distributed or --index');
  if (v.distributed !== undefined) checkShardable(settings.type);
  checkOutputs(inputs(['--out', out], ['--distances', dist]), inputs(['--input', input], ['--queries', queriesPath]));
  const file = await openVectors(input);
  checkTypeFor(settings.type, file);
  const queries = queriesPath !== undefined ? await openVectors(queriesPath) : null;
  if (queries && queries.rows > 0 && queries.dim !== file.dim) throw new UsageError(`the queries have dim ${queries.dim}; the input has dim ${file.dim}`);
  // A JSON Lines input's own ids, if it has them: the index is built with them.
  const ids = await vectorIds(undefined, file);
  if (ids && v.distributed !== undefined) throw new UsageError(`knn-graph --distributed writes row numbers; --input ${input} has 'id' fields: run without --distributed to have its ids`);
  // After the inputs' headers (usage errors first), before training or any job.
  const url = await clusterOf(v);
  const shards = url === undefined ? undefined : shardsOf(text(v, 'shards'), file.rows, 3);
  const backend = await openBackend(choice, k, queries ? 0 : 1);
  if (url !== undefined && shards !== undefined) {
    try {
      return await distributedKnnGraph(url, backend, settings, file, { shards, k, out, dist, queries: queriesPath, queryRows: queryRowsOf(v) });
    } finally {
      backend.dispose();
    }
  }
  try {
    const t0 = performance.now();
    await naming(indexOf(file), async () => {
      const index = await buildIndex(backend, settings, file, undefined, ids?.ids);
      await writeNeighbours(index, queries ? { queries } : { self: file }, k, out, dist, 'knn-graph', {}, ids?.ids);
    });
    process.stderr.write(`knn-graph: ${((performance.now() - t0) / 1000).toFixed(2)} s in all\n`);
  } finally {
    backend.dispose();
  }
}

/** --query-rows: query rows per (query block, shard) job of a sharded search. */
function queryRowsOf(v: Values): number {
  return intFlag('query-rows', text(v, 'query-rows'), 1, 2 ** 31 - 1, DEFAULT_QUERY_ROWS);
}

/** knn-graph --index MANIFEST: the graph of a sharded index's own vectors (or of --queries), here or with --distributed. */
async function knnGraphOfShards(v: Values, indexPath: string, k: number, out: string, dist: string | undefined): Promise<void> {
  if (!isManifestPath(indexPath)) throw new UsageError(`knn-graph --index takes a shard manifest (.json, from 'build --shards'); got ${indexPath}`);
  for (const flag of ['input', 'type', 'metric', 'train-sample', 'shards']) {
    if (v[flag] !== undefined) throw new UsageError(`--${flag} does not apply with --index (the index is built already)`);
  }
  const queriesPath = text(v, 'queries');
  const choice = backendChoice(v);
  checkOutputs(inputs(['--out', out], ['--distances', dist]), inputs(['--index', indexPath], ['--queries', queriesPath]));
  const url = await clusterOf(v);
  const header = await checkManifest(indexPath);
  const queries = queriesPath ?? manifestInput(indexPath);
  await openQueries(queries, header);
  const { nprobe } = await searchParamsOf(v, header, undefined);
  const o = { manifest: indexPath, queries, k, out, dist, nprobe, queryRows: queryRowsOf(v), excludeSelf: queriesPath === undefined };
  if (url !== undefined) return distributedSearchShards(url, o);
  const backend = await openBackend(choice, k, o.excludeSelf ? 1 : 0);
  try {
    await searchShards(backend, o);
  } finally {
    backend.dispose();
  }
}
