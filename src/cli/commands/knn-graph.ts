/**
 * `webgpu-knn knn-graph`: every vector's (or query's) k nearest others, here, of a sharded index
 * (--index) or on workers (--distributed).
 */
import { FACTORY_FORMS, describeIndexType } from '../../indexes/factory.js';
import { openVectors } from '../../io/vector-reader.js';
import { isManifestPath } from '../../indexes/shards.js';
import { checkShardable, shardsOf } from '../cluster/shard-build.js';
import { checkManifest, manifestInput } from '../cluster/shard-files.js';
import { distributedKnnGraph, distributedSearchShards, searchShards } from '../cluster/shard-search.js';
import type { Command } from '../command.js';
import { type Values, backendChoice, intFlag, parseFlags, required, text } from '../flags.js';
import { BACKEND_OPT, NEIGHBOUR_IDS, OUTPUTS, STDIN_OPT, STDOUT_OPT, STREAMS, WALK_OPTS } from '../help-text.js';
import { K_LIMIT, checkTypeFor, indexSettingsOf, kindSearchParamsOf, queryRowsOf, searchParamsOf } from '../index-flags.js';
import { buildIndex, clusterOf, indexOf, naming, openBackend, openQueries, vectorIds } from '../open.js';
import { NEIGHBOUR_STREAMS, neighbourOutputs, writeNeighbours } from '../outputs.js';
import { type Summary, jsonWanted } from '../report.js';
import { INDEX_FILE, asGiven, onWorkers, useStdio } from '../stdio.js';
import { checkOutputs, pathFlags } from '../paths.js';
import { indexKind } from '../../indexes/registry.js';
import { kindSearchParams } from '../../indexes/kind.js';
import { UsageError } from '../../errors.js';

const USAGE = `usage: webgpu-knn knn-graph --input FILE --k K --out FILE [options]

For every vector its k nearest other vectors (or, with --queries, every query's k nearest),
written block by block so that memory stays bounded.

options:
  --input FILE      the vectors to index (a .jsonl input's 'id' fields, if it has them, are
                    the neighbour ids written; else row numbers), or - (stdin)
  --index MANIFEST  instead of --input, --type, --metric: the vectors of a sharded index (from
                    'build --shards' without --ids; its input file, checked by size and mtime),
                    searched shard by shard
  --queries FILE    optional: search these instead of the input itself; or - (stdin)
  --k K             neighbours per row (at most the backend's max k: 'webgpu-knn info')
  --out FILE        ${NEIGHBOUR_IDS}; or - (stdout)
  --distances FILE  also their distances: .fvecs, .npy, .csv or .jsonl; or - (stdout)
  --type T          ${FACTORY_FORMS} (default Flat);
                    nlist at most the number of vectors
  --metric M        l2 | ip | cosine (default l2)
  --nprobe P        IVF: lists scanned per query, in [1, nlist] (default min(8, nlist))
  --itopk L         CAGRA: the walk's internal list length, in [1, 256] (default 64; at least
                    k + 1 is walked); longer is slower and finds more
${WALK_OPTS}
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
${STDIN_OPT}
${STDOUT_OPT}
${BACKEND_OPT}
  -h, --help        this text
${OUTPUTS}
${STREAMS}`;

async function run(argv: string[]): Promise<Summary | undefined> {
  const v = parseFlags(USAGE, argv);
  if (!v) return;
  const local = v.distributed === undefined;
  await useStdio(
    v,
    {
      inputs: local ? ['input', 'queries'] : [],
      outputs: local ? NEIGHBOUR_STREAMS : {},
      refused: { index: INDEX_FILE, ...(local ? {} : onWorkers('input', 'queries', 'out', 'distances')) },
    },
    jsonWanted(),
  );
  const { out, dist } = neighbourOutputs(v);
  const k = intFlag('k', text(v, 'k'), 1, K_LIMIT);
  const indexPath = text(v, 'index');
  if (indexPath !== undefined) return knnGraphOfShards(v, indexPath, k, out, dist);
  const input = required(v, 'input');
  const queriesPath = text(v, 'queries');
  const settings = indexSettingsOf(v, 8);
  // The kind's search flags beyond --nprobe (which the index is built with): CAGRA's walk.
  const walk = kindSearchParamsOf(v, indexKind(settings.type.type).searchParams(settings.type), settings.type.type, ['nprobe']);
  const choice = backendChoice(v);
  if (v.distributed === undefined && (v.shards !== undefined || v['query-rows'] !== undefined)) throw new UsageError('--shards and --query-rows apply with --distributed or --index');
  if (v.distributed !== undefined) checkShardable(settings.type);
  checkOutputs(pathFlags(['--out', out], ['--distances', dist]), pathFlags(['--input', input], ['--queries', queriesPath]));
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
  const summary = {
    input: asGiven(input),
    queries: asGiven(queriesPath),
    rows: (queries ?? file).rows,
    k,
    out: asGiven(out),
    distances: asGiven(dist),
    type: describeIndexType(settings.type),
    metric: settings.metric,
  };
  if (url !== undefined && shards !== undefined) {
    try {
      await distributedKnnGraph(url, backend, settings, file, { shards, k, out, dist, queries: queriesPath, queryRows: queryRowsOf(v), ...walk });
      return { ...summary, shards, distributed: true };
    } finally {
      backend.dispose();
    }
  }
  try {
    const t0 = performance.now();
    const { timings } = await naming(indexOf(file), async () => {
      const index = await buildIndex(backend, settings, file, undefined, ids?.ids);
      return writeNeighbours(index, queries ? { queries } : { self: file }, k, out, dist, 'knn-graph', walk, ids?.ids);
    });
    process.stderr.write(`knn-graph: ${((performance.now() - t0) / 1000).toFixed(2)} s in all\n`);
    return { ...summary, timings };
  } finally {
    backend.dispose();
  }
}

/** knn-graph --index MANIFEST: the graph of a sharded index's own vectors (or of --queries), here or with --distributed. */
async function knnGraphOfShards(v: Values, indexPath: string, k: number, out: string, dist: string | undefined): Promise<Summary> {
  if (!isManifestPath(indexPath)) throw new UsageError(`knn-graph --index takes a shard manifest (.json, from 'build --shards'); got ${indexPath}`);
  for (const flag of ['input', 'type', 'metric', 'train-sample', 'shards']) {
    if (v[flag] !== undefined) throw new UsageError(`--${flag} does not apply with --index (the index is built already)`);
  }
  const queriesPath = text(v, 'queries');
  const choice = backendChoice(v);
  checkOutputs(pathFlags(['--out', out], ['--distances', dist]), pathFlags(['--index', indexPath], ['--queries', queriesPath]));
  const url = await clusterOf(v);
  const header = await checkManifest(indexPath);
  const queries = queriesPath ?? manifestInput(indexPath);
  const { rows } = await openQueries(queries, header);
  const params = kindSearchParams(await searchParamsOf(v, header, undefined));
  const o = { manifest: indexPath, queries, k, out, dist, ...params, queryRows: queryRowsOf(v), excludeSelf: queriesPath === undefined };
  const summary = { index: indexPath, queries: asGiven(queriesPath), rows, k, out: asGiven(out), distances: asGiven(dist) };
  if (url !== undefined) return { ...summary, shards: await distributedSearchShards(url, o), distributed: true };
  const backend = await openBackend(choice, k, o.excludeSelf ? 1 : 0);
  try {
    return { ...summary, shards: await searchShards(backend, o) };
  } finally {
    backend.dispose();
  }
}

export const knnGraphCommand: Command = {
  name: 'knn-graph',
  summary: "every vector's k nearest others (or every query's), streamed to a file",
  usage: USAGE,
  run,
};
