/**
 * `webgpu-knn export`: an index file in another library's format. For now a CAGRA index as an
 * hnswlib index (src/io/hnswlib-file.ts): one layer, every node at level 0.
 */
import { GRAPH_FILE_TYPE } from '../../io/index-format.js';
import { nearestToMean, writeHnswlibFile } from '../../io/hnswlib-file.js';
import { GraphIndex } from '../../indexes/graph/graph-index.js';
import type { Metric } from '../../types.js';
import type { Command } from '../command.js';
import { backendChoice, parseFlags, required } from '../flags.js';
import { BACKEND_OPT, OUTPUTS } from '../help-text.js';
import { indexHeaderOf, loadWithProgress, openBackend } from '../open.js';
import { checkOutputs, pathFlags } from '../paths.js';
import { type Summary, jsonWanted } from '../report.js';
import { INDEX_FILE, useStdio } from '../stdio.js';
import { InvalidArgumentError, UsageError } from '../../errors.js';

const FORMATS = ['hnswlib'];

const USAGE = `usage: webgpu-knn export --format hnswlib --index INDEX --out FILE [options]

Writes a saved index in another library's format. hnswlib: a CAGRA index (build --type CAGRA<d>)
as an hnswlib index file (nmslib/hnswlib's saveIndex format, as cuVS's serialize_to_hnswlib
writes it): one layer, every vector at level 0 with its graph edges as links (maxM0 = the degree,
M = degree / 2), its id as its label, searches starting from the vector nearest the mean.
hnswlib-node loads it with new HierarchicalNSW(SPACE, dim) and readIndex(FILE); the file does not
store the space: the command prints which to use ('l2' for l2; 'ip' for ip, and for cosine, whose
rows are stored unit-norm: normalise the queries, or use hnswlib-node's 'cosine' space).

options:
  --format F        hnswlib (the only format for now)
  --index INDEX     a CAGRA index file from 'webgpu-knn build' (not a shard manifest)
  --out FILE        the file to write
${BACKEND_OPT}
  -h, --help        this text
${OUTPUTS}`;

/** The hnswlib space whose order is the metric's, and what to say about it. */
function spaceOf(metric: Metric): string {
  if (metric === 'l2') return "'l2' (squared L2)";
  if (metric === 'ip') return "'ip' (1 - inner product)";
  return "'ip' (1 - inner product; the rows are unit-norm: normalise the queries, or use hnswlib-node's 'cosine' space, which does)";
}

async function run(argv: string[]): Promise<Summary | undefined> {
  const v = parseFlags(USAGE, argv);
  if (!v) return;
  await useStdio(v, { refused: { index: INDEX_FILE, out: 'an hnswlib file is written to a temporary file and renamed into place' } }, jsonWanted());
  const format = required(v, 'format');
  if (!FORMATS.includes(format)) throw new UsageError(`--format must be ${FORMATS.join(' or ')}; got ${format}`);
  const indexPath = required(v, 'index');
  const out = required(v, 'out');
  const choice = backendChoice(v);
  checkOutputs(pathFlags(['--out', out]), pathFlags(['--index', indexPath]));
  const header = await indexHeaderOf('--index', indexPath, 'export');
  if (header.type !== GRAPH_FILE_TYPE) {
    throw new UsageError(`--index ${indexPath} is a ${header.type} index; --format hnswlib exports a ${GRAPH_FILE_TYPE} index (build --type CAGRA<degree>)`);
  }
  const backend = await openBackend(choice);
  try {
    const index = await loadWithProgress(backend, indexPath, false);
    try {
      if (!(index instanceof GraphIndex)) throw new InvalidArgumentError(`--index ${indexPath}: not a ${GRAPH_FILE_TYPE} index`);
      const { n, entry } = await index.exportGraph(async (g) => {
        const entryPoint = await nearestToMean(g.rows, g.dim);
        await writeHnswlibFile(out, { n: g.n, dim: g.dim, degree: g.degree, rows: g.rows(), graph: g.graph, labels: g.ids, entryPoint });
        return { n: g.n, entry: entryPoint };
      });
      process.stderr.write(
        `wrote ${out}: hnswlib index of ${n} vectors of dim ${header.dim}, one layer, maxM0 ${header.nlist}, entry point ${n > 0 ? entry : 'none'}; ` +
          `load it with the space ${spaceOf(header.metric)}\n`,
      );
      return { format, index: indexPath, out, n, dim: header.dim, maxM0: header.nlist, entryPoint: n > 0 ? entry : null, space: header.metric === 'l2' ? 'l2' : 'ip' };
    } finally {
      await index.dispose();
    }
  } finally {
    backend.dispose();
  }
}

export const exportCommand: Command = {
  name: 'export',
  summary: 'writes a CAGRA index as an hnswlib index file',
  usage: USAGE,
  run,
};
