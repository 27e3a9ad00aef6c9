/**
 * `webgpu-knn remove`: deletes vectors by id from an index file, in place (locked) or to --out.
 */
import { inPlaceTarget, lockFile } from '../../io/file-lock.js';
import { readIdFile } from '../../io/id-file.js';
import type { Command } from '../command.js';
import { backendChoice, parseFlags, required, text } from '../flags.js';
import { BACKEND_OPT, ID_FILES, OUTPUTS } from '../help-text.js';
import { prepareIndex } from '../../indexes/factory.js';
import { kindOfFileType } from '../../indexes/registry.js';
import { indexHeaderOf, loadWithProgress, openBackend, phaseProgress } from '../open.js';
import { checkOutputs, pathFlags } from '../paths.js';
import { Progress } from '../progress.js';
import { type Summary, jsonWanted } from '../report.js';
import { ID_FILE, INDEX_FILE, INDEX_OUT, useStdio } from '../stdio.js';

const USAGE = `usage: webgpu-knn remove --index INDEX --ids FILE [--out INDEX2] [options]

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
${OUTPUTS}`;

async function run(argv: string[]): Promise<Summary | undefined> {
  const v = parseFlags(USAGE, argv);
  if (!v) return;
  await useStdio(v, { refused: { index: INDEX_FILE, ids: ID_FILE, out: INDEX_OUT } }, jsonWanted());
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
  checkOutputs(pathFlags([inPlace ? '--index' : '--out', out]), pathFlags(['--ids', idsPath], ['--index', inPlace ? undefined : indexPath]));
  // The index written (in place: --index) is locked from before it is read until its replacement
  // is renamed into place: two removes at once would each save the index less their own ids, and
  // the later rename would bring back the ids the other removed.
  const lock = lockFile(out, 'remove');
  try {
    const header = await indexHeaderOf('--index', source, 'remove');
    // Repeats removed: removing an id twice removes it once.
    const ids = BigInt64Array.from(new Set(await readIdFile(idsPath)));
    const backend = await openBackend(choice);
    try {
      const index = await loadWithProgress(backend, source, false);
      const before = index.ntotal;
      const removed = await index.removeIds(ids);
      // What the removal made the index redo before it saves (CAGRA after a compaction: its graph), with progress.
      await prepareIndex(index, kindOfFileType(header.type).name, phaseProgress());
      const p = new Progress('saving');
      await index.save(out, { onProgress: (done, total) => p.update(done, total) });
      process.stderr.write(
        `removed ${removed} of the ${ids.length} ids given (${ids.length - removed} not in the index); ` +
          `ntotal ${before} -> ${index.ntotal}; wrote ${out}${inPlace && out !== indexPath ? ` (the file --index ${indexPath} links to)` : ''}\n`,
      );
      return { index: indexPath, out, idsGiven: ids.length, removed, ntotalBefore: before, ntotal: index.ntotal };
    } finally {
      backend.dispose();
    }
  } finally {
    lock.release();
  }
}

export const removeCommand: Command = {
  name: 'remove',
  summary: 'deletes vectors by id from an index file',
  usage: USAGE,
  run,
};
