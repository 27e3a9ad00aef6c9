/**
 * `webgpu-knn search`: an index file's (or a shard manifest's) k nearest neighbours of each query.
 */
import { readIndexHeader } from '../../io/index-file.js';
import { isManifestPath } from '../../indexes/shards.js';
import { checkManifest } from '../cluster/shard-files.js';
import { distributedSearchShards, searchShards } from '../cluster/shard-search.js';
import type { Command } from '../command.js';
import { backendChoice, intFlag, parseFlags, required, text } from '../flags.js';
import { BACKEND_OPT, ID_FILES, NEIGHBOUR_IDS, OUTPUTS, STDIN_OPT, STDOUT_OPT, STREAMS, WALK_OPTS } from '../help-text.js';
import { K_LIMIT, queryRowsOf, searchParamsOf } from '../index-flags.js';
import { clusterOf, loadWithProgress, openBackend, openQueries } from '../open.js';
import { NEIGHBOUR_STREAMS, neighbourOutputs, writeNeighbours } from '../outputs.js';
import { type Summary, jsonWanted } from '../report.js';
import { ID_FILE, INDEX_FILE, asGiven, onWorkers, useStdio } from '../stdio.js';
import { checkOutputs, pathFlags } from '../paths.js';
import { UsageError } from '../../errors.js';
import { kindSearchParams } from '../../indexes/kind.js';

const USAGE = `usage: webgpu-knn search --index INDEX --queries FILE --k K --out FILE [options]

Searches a saved index; writes each query's k neighbour ids (the ids given to 'build --ids', else
row numbers of the indexed file), best first.

options:
  --index INDEX     an index file from 'webgpu-knn build', or a shard manifest (.json) from
                    'build --shards': shards searched in turn, their top-k merged (the same
                    output as the unsharded index); each shard checked against the manifest
                    first (a file in its folder, listed once, its header, count and ids)
  --queries FILE    the query vectors, or - (stdin)
  --k K             neighbours per query (at most the backend's max k: 'webgpu-knn info')
  --out FILE        ${NEIGHBOUR_IDS}; or - (stdout)
  --distances FILE  also their distances: .fvecs, .npy, .csv or .jsonl; or - (stdout)
  --filter-ids FILE only vectors with these ids may be neighbours: each query gets its k nearest
                    allowed vectors (fewer only if fewer are allowed); ids the index does not
                    hold are ignored
  --nprobe P        IVF: lists scanned per query, in [1, nlist] (default: as saved)
  --itopk L         CAGRA: the walk's internal list length, in [1, 256] (default 64; at least
                    the k results and the re-score's margin); longer is slower and finds more
${WALK_OPTS}
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
${STDIN_OPT}
${STDOUT_OPT}
${BACKEND_OPT}
  -h, --help        this text
${ID_FILES}
${OUTPUTS}
${STREAMS}`;

async function run(argv: string[]): Promise<Summary | undefined> {
  const v = parseFlags(USAGE, argv);
  if (!v) return;
  const local = v.distributed === undefined;
  await useStdio(
    v,
    {
      inputs: local ? ['queries'] : [],
      outputs: local ? NEIGHBOUR_STREAMS : {},
      refused: { index: INDEX_FILE, 'filter-ids': ID_FILE, ...(local ? {} : onWorkers('queries', 'out', 'distances')) },
    },
    jsonWanted(),
  );
  const { out, dist } = neighbourOutputs(v);
  const k = intFlag('k', text(v, 'k'), 1, K_LIMIT);
  const indexPath = required(v, 'index');
  const queriesPath = required(v, 'queries');
  const filterPath = text(v, 'filter-ids');
  const choice = backendChoice(v);
  checkOutputs(pathFlags(['--out', out], ['--distances', dist]), pathFlags(['--index', indexPath], ['--queries', queriesPath], ['--filter-ids', filterPath]));
  const sharded = isManifestPath(indexPath);
  if (!sharded && (v.distributed !== undefined || v['query-rows'] !== undefined)) {
    throw new UsageError(`--distributed and --query-rows search a sharded index (a .json manifest from 'build --shards'); --index ${indexPath} is one index file`);
  }
  const url = await clusterOf(v);
  const header = sharded ? await checkManifest(indexPath) : await readIndexHeader(indexPath);
  const queries = await openQueries(queriesPath, header);
  const params = await searchParamsOf(v, header, filterPath);
  const summary = { index: indexPath, queries: asGiven(queriesPath), rows: queries.rows, k, out: asGiven(out), distances: asGiven(dist) };
  if (sharded) {
    const o = { manifest: indexPath, queries: queriesPath, k, out, dist, ...kindSearchParams(params), kFactor: params.kFactor, filter: filterPath, queryRows: queryRowsOf(v) };
    if (url !== undefined) return { ...summary, shards: await distributedSearchShards(url, o), distributed: true };
    const backend = await openBackend(choice, k);
    try {
      return { ...summary, shards: await searchShards(backend, o) };
    } finally {
      backend.dispose();
    }
  }
  const backend = await openBackend(choice, k);
  try {
    const index = await loadWithProgress(backend, indexPath);
    const { timings } = await writeNeighbours(index, { queries }, k, out, dist, 'search', params);
    return { ...summary, timings };
  } finally {
    backend.dispose();
  }
}

export const searchCommand: Command = {
  name: 'search',
  summary: 'index file + queries -> neighbours file (optionally only among allowed ids)',
  usage: USAGE,
  run,
};

/** `webgpu-knn search`, in this process (test/io/stream-writer.test.ts runs it so). */
export { run as runSearch };
