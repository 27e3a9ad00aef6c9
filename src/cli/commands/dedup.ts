/**
 * `webgpu-knn dedup`: every near-duplicate pair of a vector file, exact (here or --distributed),
 * clustered (--partitions), or against an index (--against).
 */
import { type VectorReader, openVectors } from '../../io/vector-reader.js';
import { clusteredDedup } from '../../jobs/clustered-dedup.js';
import { type DedupMetric, type DedupResult, dedup } from '../../jobs/dedup.js';
import { DEFAULT_MAX_CANDIDATES } from '../../common/pairs.js';
import { distributedDedup } from '../cluster/dedup.js';
import type { Command } from '../command.js';
import { backendChoice, checkExt, intFlag, parseFlags, required, text, thresholdFlag } from '../flags.js';
import { BACKEND_OPT, OUTPUTS, STDIN_OPT, STDOUT_OPT, STREAMS } from '../help-text.js';
import { clusterOf, indexHeaderOf, loadWithProgress, naming, openBackend, openQueries, reporting, sizeOf } from '../open.js';
import { PAIR_FORMATS, writeDedupOutputs, writeRange } from '../outputs.js';
import { type Summary, jsonWanted } from '../report.js';
import { INDEX_FILE, asGiven, onWorkers, useStdio } from '../stdio.js';
import { checkOutputs, pathFlags } from '../paths.js';
import { Progress } from '../progress.js';
import { UsageError } from '../../errors.js';

const USAGE = `usage: webgpu-knn dedup --input FILE --metric cosine|l2 --threshold T --out FILE [options]

Finds every pair i < j of near-duplicate vectors: cosine >= T, or squared L2 <= T. Candidates are
found on the backend with a safety margin and confirmed exactly (float64), so none is missed.

options:
  --input FILE      the vectors, or - (stdin)
  --metric M        cosine | l2
  --threshold T     cosine: the smallest similarity, in [-1, 1]; l2: the largest squared
                    distance, >= 0
  --out FILE        the pairs: .csv (header i,j,score; 0-based rows, i < j, sorted by i then j;
                    rows also for a .jsonl input with 'id' fields) or .jsonl (the same fields);
                    or - (stdout)
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
${STDIN_OPT}
${STDOUT_OPT}
${BACKEND_OPT}
  -h, --help        this text
${OUTPUTS}
${STREAMS}`;

/** What a dedup of `file` allocates (its rows, held for the exact check, and the join's copy). */
const rowsOf = (file: VectorReader): string => `the rows of ${file.path} for the dedup (${sizeOf(file)})`;

async function run(argv: string[]): Promise<Summary | undefined> {
  const v = parseFlags(USAGE, argv);
  if (!v) return;
  const local = v.distributed === undefined;
  await useStdio(
    v,
    {
      inputs: local ? ['input'] : [],
      outputs: local ? { out: PAIR_FORMATS.map((f) => f.slice(1)) } : {},
      refused: { against: INDEX_FILE, clusters: 'only the pairs (--out) can go to stdout', ...(local ? {} : onWorkers('input', 'out')) },
    },
    jsonWanted(),
  );
  const metric = required(v, 'metric');
  if (metric !== 'cosine' && metric !== 'l2') throw new UsageError(`--metric must be cosine or l2; got ${metric}`);
  const threshold =
    metric === 'cosine'
      ? thresholdFlag('threshold', text(v, 'threshold'), -1, 1, 'a cosine')
      : thresholdFlag('threshold', text(v, 'threshold'), 0, Infinity, 'a squared L2 distance');
  const maxCandidates = intFlag('max-candidates', text(v, 'max-candidates'), 0, Number.MAX_SAFE_INTEGER, DEFAULT_MAX_CANDIDATES);
  const out = required(v, 'out');
  checkExt(out, PAIR_FORMATS, '--out');
  const input = required(v, 'input');
  const clusters = text(v, 'clusters');
  const given = { input: asGiven(input), metric, threshold, out: asGiven(out), clustersFile: clusters };
  const choice = backendChoice(v);
  const against = text(v, 'against');
  checkOutputs(pathFlags(['--out', out], ['--clusters', clusters]), pathFlags(['--input', input], ['--against', against]));
  for (const flag of ['partitions', 'overlap', 'distributed', 'secret-file', 'tile-rows']) {
    if (against !== undefined && v[flag] !== undefined) throw new UsageError(`--${flag} applies to a dedup within one input; it does not combine with --against`);
  }
  if (against !== undefined) return { ...given, against, ...(await dedupAgainst(against, input, metric, threshold, maxCandidates, out, clusters, choice)) };
  const distributed = text(v, 'distributed');
  const partitions = text(v, 'partitions');
  const overlap = text(v, 'overlap');
  if (overlap !== undefined && partitions === undefined) throw new UsageError('--overlap applies with --partitions only');
  if (v['tile-rows'] !== undefined && (distributed === undefined || partitions !== undefined)) throw new UsageError('--tile-rows applies with --distributed only');
  if (v['secret-file'] !== undefined && distributed === undefined) throw new UsageError('--secret-file applies with --distributed');
  if (partitions !== undefined) {
    if (distributed !== undefined) throw new UsageError('--partitions runs in one process; it does not combine with --distributed');
    const C = intFlag('partitions', partitions, 1, 2 ** 31 - 1);
    return { ...given, ...(await clusteredDedupCommand(input, metric as DedupMetric, threshold, maxCandidates, out, clusters, choice, C, intFlag('overlap', overlap, 1, C, 1))) };
  }
  if (distributed !== undefined) {
    const tileRows = intFlag('tile-rows', text(v, 'tile-rows'), 1, 2 ** 31 - 1, 65536);
    return { ...given, distributed: true, ...(await distributedDedup((await clusterOf(v))!, { input, metric: metric as DedupMetric, threshold, out, clusters, tileRows, maxCandidates })) };
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
    return { ...given, ...counts(file, r) };
  } finally {
    backend.dispose();
  }
}

/** A dedup's counts for --json's summary. */
const counts = (file: VectorReader, r: Pick<DedupResult, 'pairs' | 'candidates' | 'clusters' | 'drop'>): Summary => ({
  rows: file.rows,
  pairs: r.pairs,
  candidates: r.candidates,
  clusters: r.clusters.length,
  drop: r.drop.length,
});

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
): Promise<Summary> {
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
    return { ...counts(file, r), partitions, overlap, largestPartition: largest, scoredFraction: r.scoredFraction };
  } finally {
    backend.dispose();
  }
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
): Promise<Summary> {
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
    return { rows: file.rows, ntotal: index.ntotal, pairs };
  } finally {
    backend.dispose();
  }
}

export const dedupCommand: Command = {
  name: 'dedup',
  summary: 'every near-duplicate pair in a vector file (cosine or squared L2 threshold)',
  usage: USAGE,
  run,
};

/** `webgpu-knn dedup`, in this process (test/io/stream-writer.test.ts runs it so). */
export { run as runDedup };
