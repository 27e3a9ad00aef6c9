/**
 * `webgpu-knn build`: vectors (and their ids) to an index file, or to a sharded index (--shards,
 * --distributed).
 */
import { FACTORY_FORMS, describeIndexType } from '../../indexes/factory.js';
import { lockFile } from '../../io/file-lock.js';
import { READ_FORMATS } from '../../io/vectors.js';
import { openVectors } from '../../io/vector-reader.js';
import { isManifestPath } from '../../indexes/shards.js';
import { buildShards, checkShardable, shardsOf } from '../cluster/shard-build.js';
import { checkShardOutputs } from '../cluster/shard-files.js';
import type { Command } from '../command.js';
import { backendChoice, checkExt, parseFlags, required, text } from '../flags.js';
import { BACKEND_OPT, FILES, ID_FILES, OUTPUTS, STDIN_OPT, STREAMS } from '../help-text.js';
import { checkTypeFor, indexSettingsOf } from '../index-flags.js';
import { buildIndex, clusterOf, indexOf, naming, openBackend, vectorIds } from '../open.js';
import { checkOutputs, pathFlags } from '../paths.js';
import { Progress } from '../progress.js';
import { type Summary, jsonWanted } from '../report.js';
import { ID_FILE, INDEX_OUT, asGiven, onWorkers, useStdio } from '../stdio.js';
import { UsageError } from '../../errors.js';

const USAGE = `usage: webgpu-knn build --input FILE --out INDEX [options]

Builds an index from a vector file and saves it (versioned, checksummed; written atomically).

options:
  --input FILE      the vectors (${READ_FORMATS.slice(0, 5).join(' ')}, IDX), or - (stdin; not
                    with --shards)
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
${STDIN_OPT}
${BACKEND_OPT}
  -h, --help        this text
${FILES}
${ID_FILES}
${OUTPUTS}
${STREAMS}`;

async function run(argv: string[]): Promise<Summary | undefined> {
  const v = parseFlags(USAGE, argv);
  if (!v) return;
  const sharded = v.shards !== undefined;
  const manifestInput = "a sharded build's manifest names its input file, which knn-graph --index reads again";
  await useStdio(
    v,
    {
      inputs: sharded ? [] : ['input'],
      refused: { out: INDEX_OUT, ids: ID_FILE, ...(sharded ? { input: manifestInput } : {}), ...(v.distributed !== undefined ? onWorkers('input') : {}) },
    },
    jsonWanted(),
  );
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
  checkOutputs(pathFlags(['--out', out]), pathFlags(['--input', input], ['--ids', idsPath]));
  const url = await clusterOf(v);
  // One writer of an index file at a time, from before the input is read until the saved index is
  // renamed into place: a second build or a remove of it fails at once. (A manifest's writer is
  // buildShards.)
  const lock = shardsText === undefined ? lockFile(out, 'build') : null;
  try {
    const file = await openVectors(input);
    checkTypeFor(settings.type, file);
    const shards = shardsText === undefined ? undefined : shardsOf(shardsText, file.rows);
    if (shards !== undefined) checkShardOutputs(out, shards, pathFlags(['--input', input], ['--ids', idsPath]));
    const ids = await vectorIds(idsPath, file);
    const backend = await openBackend(choice);
    const summary = { input: asGiven(input), out, type: describeIndexType(settings.type), metric: settings.metric, rows: file.rows, dim: file.dim };
    try {
      if (shards !== undefined) {
        await buildShards(backend, settings, file, shards, out, ids?.path, url);
        return { ...summary, shards, ...(url !== undefined ? { distributed: true } : {}) };
      }
      return await naming(indexOf(file), async () => {
        const index = await buildIndex(backend, settings, file, false, ids?.ids);
        const p = new Progress('saving');
        await index.save(out, { onProgress: (done, total) => p.update(done, total) });
        process.stderr.write(`wrote ${out}: ${index.ntotal} vectors of dim ${file.dim}\n`);
        return { ...summary, ntotal: index.ntotal };
      });
    } finally {
      backend.dispose();
    }
  } finally {
    lock?.release();
  }
}

export const buildCommand: Command = {
  name: 'build',
  summary: 'vectors (and optionally their ids) -> index file (Flat, IVF<nlist>,Flat, CAGRA<degree>, ...)',
  usage: USAGE,
  run,
};
