/**
 * `webgpu-knn range-search`: every indexed vector within a radius of each query.
 */
import { DEFAULT_MAX_CANDIDATES } from '../../common/pairs.js';
import type { Metric } from '../../types.js';

import type { Command } from '../command.js';
import { type Values, backendChoice, checkExt, intFlag, parseFlags, required, text, thresholdFlag } from '../flags.js';
import { BACKEND_OPT, ID_FILES, OUTPUTS, STDIN_OPT, STDOUT_OPT, STREAMS } from '../help-text.js';
import { searchParamsOf } from '../index-flags.js';
import { indexHeaderOf, loadWithProgress, openBackend, openQueries } from '../open.js';
import { PAIR_FORMATS, writeRange } from '../outputs.js';
import { type Summary, jsonWanted } from '../report.js';
import { ID_FILE, INDEX_FILE, asGiven, useStdio } from '../stdio.js';
import { checkOutputs, pathFlags } from '../paths.js';
import { MAX_RADIUS } from '../../indexes/index-core.js';

const USAGE = `usage: webgpu-knn range-search --index INDEX --queries FILE --radius R --out FILE [options]

Every indexed vector within R of each query: l2: squared distance <= R; ip: inner product >= R;
cosine: cosine similarity >= R. Prints how many results there are in all.

options:
  --index INDEX     an index file from 'webgpu-knn build'
  --queries FILE    the query vectors, or - (stdin)
  --radius R        l2: a squared distance in [0, 1e38]; ip: a number in [-1e38, 1e38]; cosine:
                    in [-1, 1] (decimal; a negative one as --radius=-0.5)
  --out FILE        .csv (header query,id,distance; one line per result) or .jsonl (one
                    {"query", "id", "distance"} object a line): queries in file order (0-based
                    rows), each query's results best first (ties: the smaller id first);
                    or - (stdout)
  --filter-ids FILE only vectors with these ids may be results
  --nprobe P        IVF: lists scanned per query, in [1, nlist] (default: as saved); only vectors
                    in the scanned lists are found
  --max-candidates N  fail (exit 1, nothing written) when the radius lets through more than N
                    candidates in a block of 1024 queries (default ${DEFAULT_MAX_CANDIDATES}): a
                    radius too loose for the corpus
${STDIN_OPT}
${STDOUT_OPT}
${BACKEND_OPT}
  -h, --help        this text
${ID_FILES}
${OUTPUTS}
${STREAMS}`;

/** --radius for `metric`: l2 a squared distance in [0, MAX_RADIUS], cosine in [-1, 1], ip within +-MAX_RADIUS. */
function radiusOf(v: Values, metric: Metric): number {
  const given = text(v, 'radius');
  if (metric === 'l2') return thresholdFlag('radius', given, 0, MAX_RADIUS, 'a squared L2 distance');
  if (metric === 'cosine') return thresholdFlag('radius', given, -1, 1, 'a cosine');
  return thresholdFlag('radius', given, -MAX_RADIUS, MAX_RADIUS, 'an inner product');
}

async function run(argv: string[]): Promise<Summary | undefined> {
  const v = parseFlags(USAGE, argv);
  if (!v) return;
  await useStdio(v, { inputs: ['queries'], outputs: { out: PAIR_FORMATS.map((f) => f.slice(1)) }, refused: { index: INDEX_FILE, 'filter-ids': ID_FILE } }, jsonWanted());
  const out = required(v, 'out');
  checkExt(out, PAIR_FORMATS, '--out');
  required(v, 'radius');
  const indexPath = required(v, 'index');
  const queriesPath = required(v, 'queries');
  const filterPath = text(v, 'filter-ids');
  const choice = backendChoice(v);
  checkOutputs(pathFlags(['--out', out]), pathFlags(['--index', indexPath], ['--queries', queriesPath], ['--filter-ids', filterPath]));
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
    return { index: indexPath, queries: asGiven(queriesPath), rows: queries.rows, radius, results, out: asGiven(out) };
  } finally {
    backend.dispose();
  }
}

export const rangeSearchCommand: Command = {
  name: 'range-search',
  summary: 'index file + queries + radius -> every neighbour within the radius',
  usage: USAGE,
  run,
};
