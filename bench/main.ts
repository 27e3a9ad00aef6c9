/**
 * Benchmark entry: `npm run bench -- <case> [options]` or `webgpu-knn bench <case> [options]`.
 * Cases: compare, quantize, flat, kmeans, ivf, scheduler, dedup, clustered-dedup, filters, remove. Never run by the test runner.
 */
import { parseArgs } from 'node:util';
import type { Metric } from 'webgpu-knn';
import { type DeviceTuning, GRAPH_MAX_ENTRY_ROWS, GRAPH_MAX_ITOPK, GRAPH_MAX_SEEDS, checkTuning, readVectors } from 'webgpu-knn';
import { basename, join } from 'node:path';
import { type CompareOptions, runCompare } from './compare.js';
import { readCompareRun, writeCompareReport } from './compare-report.js';
import { asSelfQueries, DATA_SETS, DEBIAN_FASHION_MNIST, type DataSet, loadBenchData, loadFileData, loadMiniLm, loadSelfData, plantedDuplicates } from './data.js';
import { DEFAULT_ITOPKS, FACTORY_KMEANS_NITER, INDEX_STRING_FORMS, type IndexString, type WalkSettings, parseIndexString } from './index-strings.js';
import { runDedupBench } from './dedup.js';
import { runClusteredDedupBench } from './clustered-dedup.js';
import { runFlatBench } from './flat.js';
import { runFilterBench, runRemoveBench } from './filters.js';
import { runIvfBench } from './ivf.js';
import { runKMeansBench } from './kmeans.js';
import { defaultPeerLookup, PEERS, type PeerName } from './peers.js';
import { type BenchBackend, defaultQuantizeStrings, type QuantizeOptions, runQuantize } from './quantize.js';
import { readQuantizeRun, writeQuantizeReport } from './quantize-report.js';
import { runSchedulerBench } from './scheduler.js';

const QUANTIZE_DATA = [...DATA_SETS, 'minilm'] as const;
const CLUSTERED_DEDUP_DATA = ['minilm', 'fashion-mnist', 'planted'] as const;

const COMMON = `  --backend B      both | webgpu | cpu (default both)
  --seed S         data and training seed (default 1)
  -h, --help       this text`;

const USAGES: Record<string, string> = {
  filters: `usage: webgpu-knn bench filters [options]

Filtered search (Flat or IVF) on generated clustered data: queries/s without a filter, and with filters
allowing each fraction of the ids (drawn at random), applied before selection (pre: masked inside
scoring) and after it (post: more candidates, the disallowed dropped); which one 'auto' picks.
Both give the exact answer. One JSON line per selectivity on stdout.

options:
  --type T         Flat | IVF (default Flat)
  --nlist L        IVF lists (default 512)
  --nprobe P       IVF lists probed (default 8)
  --n N            base vectors (default 100000)
  --d D            dimension (default 128)
  --nq NQ          queries (default 1000)
  --k K            neighbours (default 10)
  --selectivity S[,S...]  fractions of the ids allowed (default 0.5,0.1,0.01,0.001)
  --batch B        queries per search call (default 100)
  --repeats R      timed passes; the best counts (default 3)
  --backend B      webgpu | cpu (default webgpu)
  --seed S         data seed (default 1)
  -h, --help       this text`,
  remove: `usage: webgpu-knn bench remove [options]

removeIds of a fraction of an index (seconds), then queries/s before removal, with the removed
vectors as tombstones (masked in every search), and after compact() (and its seconds). One JSON
line on stdout.

options:
  --type T         Flat | IVF (default Flat)
  --n N            base vectors (default 1000000)
  --d D            dimension (default 128)
  --nq NQ          queries per pass (default 100)
  --k K            neighbours (default 10)
  --nlist L        IVF lists (default 1024)
  --nprobe P       IVF lists probed (default 8)
  --fraction F     fraction of the ids removed (default 0.1)
  --batch B        queries per search call (default 100)
  --repeats R      timed passes; the best counts (default 3)
  --backend B      webgpu | cpu (default webgpu)
  --seed S         data seed (default 1)
  -h, --help       this text`,
  flat: `usage: webgpu-knn bench flat [options]

Flat (exact) search on generated data, WebGPU and CPU backends in one run.

options:
  --n N            base vectors (default 100000)
  --d D            dimension (default 128)
  --nq NQ          queries (default 1000)
  --k K[,K...]     neighbours; a list runs one configuration each (default 10)
  --metric M       l2 | ip | cosine (default l2)
  --warmup W       untimed runs first (default 1)
  --repeats R      timed runs (default 3)
  --recall-queries Q  queries scored against exact search (default 100)
${COMMON}

Prints one JSON line per configuration, then a table. Progress goes to stderr.`,
  kmeans: `usage: webgpu-knn bench kmeans [options]

k-means (Lloyd, random init, no sampling) on each backend from the same initial centroids, with
and without bounds (tuning.kmeansBounds: only points whose centroid may have changed are scored):
seconds per iteration, objective, GPU/CPU ratio, and whether the two bounds settings gave the same
centroids (they must, bit for bit: the run fails if not).

options:
  --data SET       ${DATA_SETS.join(' | ')} (default clustered: generated blobs)
  --n N            points, generated data (default 100000)
  --d D            dimension, generated data (default 128)
  --k K            centroids (default 1024)
  --niter I        iterations (default 10)
  --bounds B       on | off | on,off (default on,off)
${COMMON}`,
  ivf: `usage: webgpu-knn bench ivf [options]

IVF-Flat nprobe sweep against flat search on the same backend: recall@1 and recall@k against
exact search, queries/s, speed-up over flat. Centroids are trained once and shared by the backends.

options:
  --data SET       ${DATA_SETS.join(' | ')} (default clustered: generated blobs)
  --n N            base vectors, generated data (default 200000)
  --d D            dimension, generated data (default 128)
  --nq NQ          queries, generated data (default 1000)
  --k K            neighbours (default 10)
  --nlist L        lists (default round(sqrt(8 n)): the sqrt rule nlist ~ sqrt(nprobe n) for nprobe 8)
  --nprobe P[,P..] the sweep (default 1,2,4,8,16,32,64)
  --niter I        k-means iterations (default 10)
  --warmup W       untimed runs first (default 1)
  --repeats R      timed runs (default 3)
${COMMON}`,
  dedup: `usage: webgpu-knn bench dedup --input FILE --metric cosine|l2 --threshold T [options]

Near-duplicate pairs of a vector file on each backend in one run, timed, and checked against an
exact float64 brute force (l2: pruned by norms, exactly; cosine: every pair).

options:
  --input FILE     any vector file the CLI reads (for example Debian's Fashion-MNIST:
                   /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz)
  --metric M       cosine | l2
  --threshold T    cosine >= T, or squared L2 <= T
  --verify V       yes | no: run the brute force (default yes)
${COMMON}`,
  'clustered-dedup': `usage: webgpu-knn bench clustered-dedup --data SET --metric cosine|l2 --threshold T [options]

Clustered dedup (dedup --partitions C --overlap M) against the exact dedup on the same data and
backend: per (C, M) the pairs found, pair recall against the exact pairs (precision is checked to
be 1: a pair the exact dedup lacks fails the run), the share of row pairs scored, the largest
partition, seconds and speed-up. One JSON line per configuration, then a table.

options:
  --data SET       minilm (778 x 384 real text embeddings) | fashion-mnist (Debian's 60,000 x 784
                   train images) | planted (generated blobs with planted near-copies: --n, --d)
  --input FILE     instead of --data: any vector file the CLI reads
  --n N            planted: rows (default 200000)
  --d D            planted: dimension (default 128)
  --metric M       cosine | l2
  --threshold T    cosine >= T, or squared L2 <= T
  --grid CxM[,..]  partitions x overlap configurations (default 16x1,16x2,64x1,64x2,64x3)
  --backend B      webgpu | cpu (default webgpu)
  --seed S         k-means and data seed (default 1)
  -h, --help       this text`,
  compare: `usage: webgpu-knn bench compare [options]

One run that compares, on one data set: Flat and IVF-Flat (an nprobe sweep) on each backend, or
the factory strings given with --index, and the peers that are installed: Faiss (Debian
python3-faiss: IndexFlat, IndexIVFFlat on the same nlist/nprobe grid, or faiss.index_factory with
each --index string, HNSW<degree/2> for CAGRA<degree>), hnswlib-node and usearch (npm; HNSW at a
few ef). Per configuration: recall@1, @10 and @100 (tie-aware, against the published ground truth
or an exact float64 brute force), queries/s, latency p50/p95/p99 per batch, build time, serialised
index size and bytes per vector. Peers are optional: scripts/install-peers.sh installs them; the
report says which ran and their versions.

data (one of):
  --data SET       ${DATA_SETS.join(' | ')}
                   (default clustered: generated blobs; uniform: generated, uniform in [0, 1);
                   fashion-mnist: Debian's dataset-fashion-mnist, 60,000 x 784)
  --base FILE      any vector file the CLI reads (.fvecs .bvecs .npy .jsonl IDX ...)
  --query FILE     its queries (default: the last --nq rows of --base, held out of the base)
  --gt FILE        ground truth for --base: .ivecs of neighbour ids by squared L2, a row a query
  --n N            base vectors, generated data (default 100000)
  --d D            dimension, generated data (default 128)
  --nq NQ          queries (default 1000 generated; a real set's own query count)

search and index settings:
  --k K            neighbours (default 100, so recall@100 can be measured)
  --metric M       l2 | ip | cosine (default l2)
  --index STRING   a factory string to run instead of Flat and IVF<nlist>,Flat, ours and Faiss's,
                   each trained on the base; repeat it for more (--index SQ8 --index IVF64,PQ16
                   --index IVF64,PQ16,RFlat). Forms: Flat, SQ8, SQ4, SQfp16, PQ<M>, PQ<M>x<nbits>,
                   LSH, LSHr, LSHt, LSHrt, optionally after IVF<nlist> or Prefix<p> / PCA<p> /
                   PCAR<p>, optionally followed by ,RFlat; or CAGRA<degree>, our graph index (Faiss
                   runs HNSW<degree/2> beside it: IndexHNSWFlat, efConstruction 40, at each --ef).
                   A string webgpu-knn cannot build is listed as not measured; Faiss still runs it
                   (and one Faiss cannot build, such as Prefix<p>, is listed as not measured for
                   Faiss)
  --nlist L        IVF lists of the default run (default round(sqrt(8 n)), the sqrt rule for
                   nprobe 8); with --index the lists are in the string
  --nprobe P[,P..] the nprobe sweep (default 1,2,4,8,16,32,64; values above nlist are dropped)
  --kfactor F[,F..]  ,RFlat strings: re-rank k * F candidates exactly (default 4)
  --itopk L[,L..]  CAGRA strings: the walk's internal list lengths, one row each, in [1, 256]
                   (default 32,64,128; one below k walks a list of k)
  --search-width W CAGRA strings: parents the walk expands an iteration, at every itopk (default 1)
  --seeds S        CAGRA strings: entry points each walk starts from, the query's nearest of
                   the entry rows, in [1, 256] (default 16)
  --entry-rows E   CAGRA strings: entry rows each query is scored against to pick them, in
                   [1, 4096] (default 4 sqrt(n), at least 256; more finds more in data of many
                   tight clusters)
  --niter I        k-means iterations of the default run, ours and Faiss's (default 10; --index
                   strings train with indexFactory's 10)
  --ef E[,E..]     HNSW ef for the peers (default k, 2k, 4k; with a CAGRA string, the --itopk
                   values, and Faiss's HNSW runs them too)
  --hnsw-m M       HNSW M / usearch connectivity (default 16)
  --ef-construction E  HNSW efConstruction / usearch expansion_add (default 200)
  --faiss-hnsw-m M  M of Faiss's HNSW beside a CAGRA string (default degree / 2: HNSW16 beside
                   CAGRA32, whose base layer holds as many links a node)

timing and output (every index is built first and stays in memory; then each round runs one pass
of every configuration, 100 ms apart, each pass after one untimed batch, so that a machine whose
speed drifts slows all alike):
  --batch B[,B..]  queries per timed search call (default 100); several (--batch 1000,1) time
                   every configuration at each, interleaved in the one run, a series per size
  --warmup W       untimed rounds of passes first (default 1)
  --repeats R      timed rounds (default 3)
  --peers P        auto | none | a comma list of faiss, hnswlib-node, usearch (default auto:
                   every one installed; a named one that is missing is an error)
  --tuning K=V[,K=V..]  our backends' tuning (createBackend's DeviceTuning: graphTeam=8,
                   hostCopy=true, scanSegments=4, ...), recorded in the report; speed and memory,
                   never results (default: each device's own)
  --out DIR        where compare.jsonl, run.json, report.md, recall-qps.svg, recall-bytes.svg and
                   latency.svg go (default bench-results/compare-<data>)
  --replot DIR     measure nothing: redraw report.md and the plots of a run in DIR from its
                   compare.jsonl and run.json
${COMMON}

Prints one JSON line per configuration and a table; progress goes to stderr.
Where peers are looked for: WEBGPU_KNN_PYTHON (a Python that imports faiss; default
/usr/bin/python3, then python3) and WEBGPU_KNN_PEER_PATH (folders to resolve the npm peers from,
':'-separated; default peers/ in the project).`,
  quantize: `usage: webgpu-knn bench quantize [options]

The compression study of one data set: every factory string of a list, each built once (trained
and added) on the first backend, saved, loaded on the others, and searched on each: recall@1, @10
and @100 (tie-aware, against the published ground truth where the set has one by this metric with
at least k columns, else an exact float64 brute force), bytes per vector of the saved file, code
bytes per vector, queries/s per backend, and whether webgpu and cpu returned the same labels.
A string this build cannot make is listed as not measured, with the factory's reason.

The default list, from d: Flat; SQfp16, SQ8, SQ4, PQ<M> for M the divisors of d nearest d/8 and
d/16, LSH, LSHrt, Prefix<p>,Flat and PCAR<p>,Flat for p = d/2, d/4, d/8: each alone and followed
by ,RFlat (the exact re-rank, at each --kfactor).

data (one of):
  --data SET       ${QUANTIZE_DATA.join(' | ')}
                   (default siftsmall; minilm: the 778 all-MiniLM-L6-v2 embeddings of npm
                   @sap-ux/fiori-docs-embeddings, 384-d, as self-queries, metric cosine)
  --base FILE      any vector file the CLI reads (.fvecs .bvecs .npy .jsonl IDX ...)
  --query FILE     its queries (default: the last --nq rows of --base, held out of the base)
  --gt FILE        ground truth for --base: .ivecs of neighbour ids by squared L2, a row a query
  --self           self-queries: the queries are --nq base rows (default all), evenly spread; a
                   query's own row is not its neighbour (each searches k + 1, its own row is
                   dropped, else the last; the reference excludes it). Implied by --data minilm
  --n N            base vectors, generated data (default 100000)
  --d D            dimension, generated data (default 128)
  --nq NQ          queries (default: a real set's own queries, 1000 generated, every row with
                   --self)

search and index settings:
  --k K            neighbours (default 100, so recall@100 can be measured)
  --metric M       l2 | ip | cosine (default l2; cosine for minilm)
  --index STRING   a factory string to run instead of the default list; repeat it for more
                   (--index SQ8 --index SQ8,RFlat --index PQ16)
  --kfactor F[,F..]  ,RFlat strings: re-rank k * F candidates exactly, one row each (default 1,4,10)
  --backends B[,B..]  webgpu and/or cpu, the first builds and saves (default webgpu,cpu)

timing and output:
  --batch B        queries per timed search call (default 100)
  --warmup W       untimed passes over the queries first (default 1)
  --repeats R      timed passes (default 2)
  --out DIR        where quantize.jsonl (a JSON object per string and kFactor, every backend in
                   it), run.json (settings, not measured), report.md (the table) and
                   recall-bytes.svg (recall@10 against bytes per vector of the file, log x,
                   Pareto front marked), recall-code-bytes.svg (the same against code bytes)
                   go (default bench-results/quantize-<data>)
  --replot DIR     measure nothing: redraw report.md and the plots of a run in DIR from its
                   quantize.jsonl and run.json
  --seed S         generated data's seed (default 1)
  -h, --help       this text

Prints one JSON line per string and kFactor, then the table; progress goes to stderr.`,
  scheduler: `usage: webgpu-knn bench scheduler [options]

C callers each send single queries in a closed loop through a BatchScheduler over a flat index;
compared with one direct batched search of the same queries and with queries sent one at a time
without the scheduler. Reports queries/s, p50 and p99 latency, mean batch size.

options:
  --n N            base vectors (default 100000)
  --d D            dimension (default 128)
  --k K            neighbours (default 10)
  --callers C[,C..] concurrent callers (default 1,16,256)
  --per-caller Q   queries per caller (default 8; at least 64 in all)
  --max-delay MS   the scheduler's maxDelayMs (default 2)
${COMMON}`,
};

export class UsageError extends Error {
  override name = 'UsageError';
}

function positiveInt(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  // Decimal digits only: Number() would take '0x10' (as 16) and ' ' (as 0).
  const v = /^\+?\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(v) || v < 1) throw new UsageError(`--${name} must be a positive integer; got ${value}`);
  return v;
}

function intList(name: string, value: string | undefined, fallback: number[]): number[] {
  return value === undefined ? fallback : value.split(',').map((v) => positiveInt(name, v.trim(), 1));
}

/** The --index strings, each checked for its shape; with them, the flags of the default run are refused. */
function indexStrings(given: string[], v: Record<string, string | undefined>): IndexString[] {
  const seen = new Set<string>();
  const strings = given.map((text) => {
    const s = parseIndexString(text);
    if (!s) throw new UsageError(`--index ${JSON.stringify(text)} is not a factory string bench compare runs; expected ${INDEX_STRING_FORMS}`);
    if (seen.has(text)) throw new UsageError(`--index ${text} is given twice`);
    seen.add(text);
    return s;
  });
  if (strings.length) {
    for (const flag of ['nlist', 'niter']) {
      if (v[flag] !== undefined) {
        throw new UsageError(`--${flag} ${v[flag]} goes with the default run (Flat and IVF<nlist>,Flat); with --index the lists are in the string (IVF64,...) and k-means runs ${FACTORY_KMEANS_NITER} iterations`);
      }
    }
  }
  if (v.kfactor !== undefined && !strings.some((s) => s.refine)) {
    throw new UsageError(`--kfactor ${v.kfactor} needs an --index string ending in ,RFlat (for example IVF64,PQ16,RFlat); got ${strings.length ? strings.map((s) => s.description).join(', ') : 'no --index'}`);
  }
  if (v.itopk !== undefined && !strings.some((s) => s.degree !== null)) {
    throw new UsageError(`--itopk ${v.itopk} needs a CAGRA<degree> --index string (for example CAGRA32); got ${strings.length ? strings.map((s) => s.description).join(', ') : 'no --index'}`);
  }
  return strings;
}

/**
 * `--tuning key=value,...` as a DeviceTuning: true and false are booleans, integers numbers, the
 * rest strings (auto, scan, ...); checked as createBackend checks it, before anything is loaded.
 */
function tuningOf(flag: string | undefined): DeviceTuning {
  if (flag === undefined) return {};
  const t: Record<string, unknown> = {};
  for (const pair of flag.split(',')) {
    const m = /^\s*([A-Za-z]+)=(\S+)\s*$/.exec(pair);
    if (!m) throw new UsageError(`--tuning takes key=value pairs separated by commas (graphTeam=8,hostCopy=true); got "${pair}"`);
    const [, key, value] = m;
    if (key in t) throw new UsageError(`--tuning gives ${key} twice`);
    t[key] = value === 'true' ? true : value === 'false' ? false : /^-?\d+$/.test(value) ? Number(value) : value;
  }
  try {
    checkTuning(t as DeviceTuning);
  } catch (err) {
    throw new UsageError(`--tuning: ${(err as Error).message}`);
  }
  return t as DeviceTuning;
}

/** `bench compare`'s options from its flags. */
async function compareOptions(
  v: Record<string, string | undefined>,
  indexes: IndexString[],
  backends: ('webgpu' | 'cpu')[],
  seed: number,
  warmup: number,
  repeats: number,
  log: (line: string) => void,
): Promise<CompareOptions> {
  const metric = (v.metric ?? 'l2') as Metric;
  if (!['l2', 'ip', 'cosine'].includes(metric)) throw new UsageError(`--metric must be l2, ip or cosine; got ${metric}`);
  if (v.base !== undefined && v.data !== undefined) throw new UsageError('give --data or --base, not both');
  if (v.base === undefined && (v.query !== undefined || v.gt !== undefined)) throw new UsageError('--query and --gt go with --base');
  const nprobes = intList('nprobe', v.nprobe, [1, 2, 4, 8, 16, 32, 64]);
  for (const s of indexes) {
    if (s.nlist !== null && !nprobes.some((p) => p <= s.nlist!)) {
      throw new UsageError(`--nprobe ${nprobes.join(',')} has no value at most nlist = ${s.nlist} of --index ${s.description}`);
    }
  }
  const kFactors = intList('kfactor', v.kfactor, [4]);
  const itopks = intList('itopk', v.itopk, DEFAULT_ITOPKS);
  const bad = itopks.find((l) => l > GRAPH_MAX_ITOPK);
  if (bad !== undefined) throw new UsageError(`--itopk must be at most ${GRAPH_MAX_ITOPK} (the walk's longest list); got ${bad}`);
  const graphs = indexes.some((s) => s.degree !== null);
  for (const flag of ['search-width', 'seeds', 'entry-rows']) {
    if (v[flag] !== undefined && !graphs) throw new UsageError(`--${flag} ${v[flag]} needs a CAGRA<degree> --index string (for example CAGRA32)`);
  }
  const walk: WalkSettings = {};
  if (v['search-width'] !== undefined) walk.searchWidth = positiveInt('search-width', v['search-width'], 1);
  if (v.seeds !== undefined) {
    walk.seeds = positiveInt('seeds', v.seeds, 1);
    if (walk.seeds > GRAPH_MAX_SEEDS) throw new UsageError(`--seeds must be at most ${GRAPH_MAX_SEEDS}; got ${walk.seeds}`);
  }
  if (v['entry-rows'] !== undefined) {
    walk.entryRows = positiveInt('entry-rows', v['entry-rows'], 1);
    if (walk.entryRows > GRAPH_MAX_ENTRY_ROWS) throw new UsageError(`--entry-rows must be at most ${GRAPH_MAX_ENTRY_ROWS}; got ${walk.entryRows}`);
  }
  const tuning = tuningOf(v.tuning);
  const nq = v.nq === undefined ? undefined : positiveInt('nq', v.nq, 1);
  const data = v.base !== undefined
    ? await loadFileData(v.base, v.query, v.gt, nq)
    : await loadBenchData((v.data ?? 'clustered') as DataSet, positiveInt('n', v.n, 100_000), positiveInt('d', v.d, 128), nq, seed);
  const k = positiveInt('k', v.k, 100);
  let peers: CompareOptions['peers'] = 'auto';
  if (v.peers === 'none') peers = 'none';
  else if (v.peers !== undefined && v.peers !== 'auto') {
    const names = v.peers.split(',').map((p) => p.trim());
    const bad = names.filter((p) => !(PEERS as readonly string[]).includes(p));
    if (bad.length) throw new UsageError(`--peers: unknown peer ${bad.join(', ')}; expected auto, none or a list of ${PEERS.join(', ')}`);
    peers = names as PeerName[];
  }
  const batches = intList('batch', v.batch, [100]);
  if (new Set(batches).size !== batches.length) throw new UsageError(`--batch gives a size twice: ${v.batch}`);
  const slug = basename(data.name).replace(/\(.*$/, '').replace(/[^A-Za-z0-9._-]+/g, '-');
  return {
    data,
    metric,
    k,
    nlist: positiveInt('nlist', v.nlist, Math.round(Math.sqrt(8 * data.n))),
    nprobes,
    niter: positiveInt('niter', v.niter, 10),
    indexes,
    kFactors,
    itopks,
    walk,
    seed,
    hnsw: {
      m: positiveInt('hnsw-m', v['hnsw-m'], 16),
      efConstruction: positiveInt('ef-construction', v['ef-construction'], 200),
      faissM: v['faiss-hnsw-m'] === undefined ? null : positiveInt('faiss-hnsw-m', v['faiss-hnsw-m'], 0),
      efSearch: intList('ef', v.ef, graphs ? itopks : [k, 2 * k, 4 * k]),
      seed,
    },
    batches,
    tuning,
    warmup,
    repeats,
    backends,
    peers,
    lookup: defaultPeerLookup(),
    outDir: v.out ?? join('bench-results', `compare-${slug}`),
    command: `webgpu-knn bench compare ${process.argv.slice(process.argv.indexOf('compare') + 1).join(' ')}`.trim(),
    log,
  };
}

/** `bench quantize`'s options from its flags. */
async function quantizeOptions(
  v: Record<string, string | undefined>,
  indexes: string[],
  warmup: number,
  repeats: number,
  log: (line: string) => void,
): Promise<QuantizeOptions> {
  if (v.base !== undefined && v.data !== undefined) throw new UsageError('give --data or --base, not both');
  if (v.base === undefined && (v.query !== undefined || v.gt !== undefined)) throw new UsageError('--query and --gt go with --base');
  const self = (v as Record<string, unknown>).self === true || v.data === 'minilm';
  if (self && (v.query !== undefined || v.gt !== undefined)) throw new UsageError('--query and --gt do not go with self-queries (--self, --data minilm): the queries are base rows');
  const metric = (v.metric ?? (v.data === 'minilm' ? 'cosine' : 'l2')) as Metric;
  if (!['l2', 'ip', 'cosine'].includes(metric)) throw new UsageError(`--metric must be l2, ip or cosine; got ${metric}`);
  const backends = (v.backends ?? 'webgpu,cpu').split(',').map((b) => b.trim());
  if (!backends.length || backends.some((b) => b !== 'webgpu' && b !== 'cpu') || new Set(backends).size !== backends.length) {
    throw new UsageError(`--backends must be webgpu and/or cpu, comma-separated, each once; got ${v.backends}`);
  }
  const seen = new Set<string>();
  for (const s of indexes) {
    if (seen.has(s)) throw new UsageError(`--index ${s} is given twice`);
    seen.add(s);
  }
  const nq = v.nq === undefined ? undefined : positiveInt('nq', v.nq, 1);
  const set = (v.data ?? 'siftsmall') as DataSet | 'minilm';
  let data;
  if (v.base !== undefined) data = self ? await loadSelfData(v.base, nq) : await loadFileData(v.base, v.query, v.gt, nq);
  else if (set === 'minilm') data = loadMiniLm(nq);
  else {
    data = await loadBenchData(set, positiveInt('n', v.n, 100_000), positiveInt('d', v.d, 128), self ? 1 : nq, positiveInt('seed', v.seed, 1));
    if (self) data = asSelfQueries(data, nq);
  }
  const slug = basename(data.name).replace(/\(.*$/, '').replace(/[^A-Za-z0-9._-]+/g, '-');
  return {
    data,
    metric,
    k: positiveInt('k', v.k, 100),
    indexes: indexes.length ? indexes : defaultQuantizeStrings(data.d),
    kFactors: intList('kfactor', v.kfactor, [1, 4, 10]),
    backends: backends as BenchBackend[],
    batch: positiveInt('batch', v.batch, 100),
    warmup,
    repeats,
    outDir: v.out ?? join('bench-results', `quantize-${slug}`),
    command: `webgpu-knn bench quantize ${process.argv.slice(process.argv.indexOf('quantize') + 1).join(' ')}`.trim(),
    log,
  };
}

export async function benchMain(argv: string[]): Promise<void> {
  const [kase, ...rest] = argv;
  if (kase === undefined || kase === '-h' || kase === '--help') {
    console.log(`usage: webgpu-knn bench <${Object.keys(USAGES).join(' | ')}> [options]; 'bench <case> --help' for each`);
    if (kase === undefined) throw new UsageError(`missing bench case (${Object.keys(USAGES).join(', ')})`);
    return;
  }
  const usage = USAGES[kase];
  if (!usage) throw new UsageError(`unknown bench case ${kase}; expected ${Object.keys(USAGES).join(', ')}`);
  const known = [...usage.matchAll(/^ {2}--([a-z-]+)/gm)].map((m) => m[1]).filter((o) => o !== 'help');
  // Every option takes one value, except the repeatable --index (bench compare, quantize) and the switch --self.
  const { values } = parseArgs({
    args: rest,
    options: Object.fromEntries([
      ...known.map((o) => [o, o === 'self' ? { type: 'boolean' as const } : { type: 'string' as const, multiple: o === 'index' }]),
      ['help', { type: 'boolean' as const, short: 'h' }],
    ]),
  }) as { values: Record<string, string | string[] | boolean | undefined> };
  const { index: indexFlags, ...single } = values;
  const v = single as Record<string, string | undefined> & { help?: boolean };
  if (v.help) {
    console.log(usage);
    return;
  }
  const backend = v.backend ?? 'both';
  if (!['both', 'webgpu', 'cpu'].includes(backend)) throw new UsageError(`--backend must be both, webgpu or cpu; got ${backend}`);
  const backends: ('webgpu' | 'cpu')[] = backend === 'both' ? ['webgpu', 'cpu'] : [backend as 'webgpu' | 'cpu'];
  const seed = positiveInt('seed', v.seed, 1);
  const log = (line: string): void => void process.stderr.write(`[bench] ${line}\n`);
  const warmup = v.warmup === '0' ? 0 : positiveInt('warmup', v.warmup, 1);
  const repeats = positiveInt('repeats', v.repeats, 3);
  const dataSet = (v.data ?? 'clustered') as DataSet;
  const sets: readonly string[] = kase === 'quantize' ? QUANTIZE_DATA : kase === 'clustered-dedup' ? CLUSTERED_DEDUP_DATA : DATA_SETS;
  if (v.data !== undefined && !sets.includes(v.data)) {
    throw new UsageError(`--data must be one of ${sets.join(', ')}; got ${v.data}`);
  }

  if (kase === 'filters' || kase === 'remove') {
    const one = v.backend ?? 'webgpu';
    if (one !== 'webgpu' && one !== 'cpu') throw new UsageError(`--backend must be webgpu or cpu; got ${one}`);
    const fraction = (name: string, text: string | undefined, fallback: number[]): number[] => {
      const list = text === undefined ? fallback : text.split(',').map(Number);
      if (!list.every((f) => f > 0 && f <= 1)) throw new UsageError(`--${name} must be fractions in (0, 1]; got ${text}`);
      return list;
    };
    const common = { d: positiveInt('d', v.d, 128), k: positiveInt('k', v.k, 10), batch: positiveInt('batch', v.batch, 100), repeats, backend: one, seed, log } as const;
    const type = v.type ?? 'Flat';
    if (type !== 'Flat' && type !== 'IVF') throw new UsageError(`--type must be Flat or IVF; got ${type}`);
    const nprobe = positiveInt('nprobe', v.nprobe, 8);
    if (kase === 'filters') {
      const recs = await runFilterBench({
        ...common, type, nlist: positiveInt('nlist', v.nlist, 512), nprobe, n: positiveInt('n', v.n, 100_000), nq: positiveInt('nq', v.nq, 1000),
        selectivities: fraction('selectivity', v.selectivity, [0.5, 0.1, 0.01, 0.001]),
      });
      for (const r of recs) console.log(JSON.stringify(r));
    } else {
      const rec = await runRemoveBench({
        ...common, type, n: positiveInt('n', v.n, 1_000_000), nq: positiveInt('nq', v.nq, 100), nlist: positiveInt('nlist', v.nlist, 1024),
        nprobe, fraction: fraction('fraction', v.fraction, [0.1])[0],
      });
      console.log(JSON.stringify(rec));
    }
  } else if ((kase === 'compare' || kase === 'quantize') && v.replot !== undefined) {
    const others = Object.keys(values).filter((o) => o !== 'replot' && values[o] !== undefined);
    if (others.length) throw new UsageError(`--replot takes no other option; got --${others.join(', --')}`);
    const files = kase === 'compare' ? writeCompareReport(v.replot, readCompareRun(v.replot)) : writeQuantizeReport(v.replot, readQuantizeRun(v.replot));
    console.log(`wrote ${files.join(', ')}`);
  } else if (kase === 'quantize') {
    await runQuantize(await quantizeOptions(v, (indexFlags as string[] | undefined) ?? [], warmup, positiveInt('repeats', v.repeats, 2), log));
  } else if (kase === 'compare') {
    await runCompare(await compareOptions(v, indexStrings((indexFlags as string[] | undefined) ?? [], v), backends, seed, warmup, repeats, log));
  } else if (kase === 'flat') {
    const metric = (v.metric ?? 'l2') as Metric;
    if (!['l2', 'ip', 'cosine'].includes(metric)) throw new UsageError(`--metric must be l2, ip or cosine; got ${metric}`);
    await runFlatBench({
      n: positiveInt('n', v.n, 100_000),
      d: positiveInt('d', v.d, 128),
      nq: positiveInt('nq', v.nq, 1000),
      ks: intList('k', v.k, [10]),
      metric,
      backends,
      warmup,
      repeats,
      seed,
      recallQueries: positiveInt('recall-queries', v['recall-queries'], 100),
      log,
    });
  } else if (kase === 'kmeans') {
    const data = await loadBenchData(dataSet, positiveInt('n', v.n, 100_000), positiveInt('d', v.d, 128), 1, seed);
    const bounds = (v.bounds ?? 'on,off').split(',').map((b) => {
      if (b !== 'on' && b !== 'off') throw new UsageError(`--bounds must be on, off or on,off; got ${v.bounds}`);
      return b === 'on';
    });
    await runKMeansBench({ data, k: positiveInt('k', v.k, 1024), niter: positiveInt('niter', v.niter, 10), seed, backends, bounds, log });
  } else if (kase === 'dedup') {
    if (!v.input) throw new UsageError('--input is required');
    const metric = v.metric;
    if (metric !== 'cosine' && metric !== 'l2') throw new UsageError(`--metric must be cosine or l2; got ${metric}`);
    const threshold = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(v.threshold ?? '') ? Number(v.threshold) : NaN;
    if (v.threshold === undefined || !Number.isFinite(threshold)) throw new UsageError(`--threshold must be a number; got ${v.threshold}`);
    await runDedupBench({ input: v.input, metric, threshold, backends, verify: (v.verify ?? 'yes') !== 'no', log });
  } else if (kase === 'clustered-dedup') {
    const one = v.backend ?? 'webgpu';
    if (one !== 'webgpu' && one !== 'cpu') throw new UsageError(`--backend must be webgpu or cpu; got ${one}`);
    const metric = v.metric;
    if (metric !== 'cosine' && metric !== 'l2') throw new UsageError(`--metric must be cosine or l2; got ${metric}`);
    const threshold = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(v.threshold ?? '') ? Number(v.threshold) : NaN;
    if (v.threshold === undefined || !Number.isFinite(threshold)) throw new UsageError(`--threshold must be a number; got ${v.threshold}`);
    const grid = (v.grid ?? '16x1,16x2,64x1,64x2,64x3').split(',').map((g) => {
      const m = /^(\d+)x(\d+)$/.exec(g);
      if (!m || Number(m[1]) < 1 || Number(m[2]) < 1 || Number(m[2]) > Number(m[1])) throw new UsageError(`--grid entries must be CxM with 1 <= M <= C; got ${g}`);
      return [Number(m[1]), Number(m[2])] as [number, number];
    });
    if ((v.data === undefined) === (v.input === undefined)) throw new UsageError('give one of --data or --input');
    let name: string;
    let x: Float32Array;
    let n: number;
    let d: number;
    if (v.data === 'planted') {
      n = positiveInt('n', v.n, 200_000);
      d = positiveInt('d', v.d, 128);
      x = plantedDuplicates(n, d, seed);
      name = `planted(${n} x ${d})`;
    } else if (v.data === 'minilm') {
      ({ xb: x, n, d } = loadMiniLm(1));
      name = 'minilm';
    } else {
      const path = v.input ?? `${DEBIAN_FASHION_MNIST}/train-images-idx3-ubyte.gz`;
      const f = await readVectors(path);
      ({ data: x, n, d } = f);
      name = v.input ?? 'fashion-mnist';
    }
    await runClusteredDedupBench({ name, x, n, d, metric, threshold, grid, backend: one, seed, log });
  } else if (kase === 'scheduler') {
    const delay = v['max-delay'] === undefined ? 2 : /^\+?(\d+\.?\d*|\.\d+)$/.test(v['max-delay']) ? Number(v['max-delay']) : NaN;
    if (!(delay >= 0)) throw new UsageError(`--max-delay must be a number >= 0; got ${v['max-delay']}`);
    await runSchedulerBench({
      n: positiveInt('n', v.n, 100_000),
      d: positiveInt('d', v.d, 128),
      k: positiveInt('k', v.k, 10),
      callers: intList('callers', v.callers, [1, 16, 256]),
      perCaller: positiveInt('per-caller', v['per-caller'], 8),
      maxDelayMs: delay,
      seed,
      backends,
      log,
    });
  } else {
    const data = await loadBenchData(dataSet, positiveInt('n', v.n, 200_000), positiveInt('d', v.d, 128), positiveInt('nq', v.nq, 1000), seed);
    await runIvfBench({
      data,
      k: positiveInt('k', v.k, 10),
      nlist: positiveInt('nlist', v.nlist, Math.round(Math.sqrt(8 * data.n))),
      nprobes: intList('nprobe', v.nprobe, [1, 2, 4, 8, 16, 32, 64]),
      niter: positiveInt('niter', v.niter, 10),
      seed,
      warmup,
      repeats,
      backends,
      log,
    });
  }
}

// Run directly (npm run bench): the CLI imports benchMain instead.
if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  benchMain(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`webgpu-knn bench: ${(err as Error).message}\n`);
    process.exitCode = err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ? 2 : 1;
  });
}
