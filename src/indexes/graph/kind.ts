/**
 * The CAGRA kind (src/indexes/kind.ts): a graph of float32 rows (src/indexes/graph/graph-index.ts).
 * Its factory stage is `CAGRA<degree>` ("CAGRA32"; the storage, float32 rows, is implied); its file
 * type is CAGRA (src/io/index-format.ts); its own search parameters are itopk, searchWidth,
 * maxIterations, seeds and entryRows (src/indexes/graph/params.ts), the CLI's --itopk,
 * --search-width, --max-iterations, --seeds and --entry-rows.
 */
import { GRAPH_FILE_TYPE } from '../../io/index-format.js';
import { CAGRA_MAX_DEGREE } from '../../kernel-facts.js';
import type { IndexKind } from '../kind.js';
import type { GraphBuildPhase } from './intermediate.js';
import { GRAPH_MAX_ENTRY_ROWS, GRAPH_MAX_ITOPK, GRAPH_MAX_SEEDS, GraphIndex, widestSearch } from './graph-index.js';

/** How the CLI's progress names a graph build's phases. */
const GRAPH_PHASES: Record<GraphBuildPhase, string> = {
  train: 'graph: k-means of the IVF that finds nearest rows',
  intermediate: "graph: each row's nearest rows",
  prune: 'graph: pruning, reverse edges',
  connect: 'graph: linking parts no walk reaches',
  extend: 'graph: linking added rows',
};

export const GRAPH_KIND: IndexKind<GraphIndex> = {
  name: 'CAGRA',
  parseStage(part, bad) {
    const m = /^CAGRA(\d+)$/.exec(part);
    if (!m) return null;
    const degree = Number(m[1]);
    if (!(degree >= 1 && degree <= CAGRA_MAX_DEGREE)) throw bad(` (CAGRA<degree>: a degree in [1, ${CAGRA_MAX_DEGREE}])`);
    return { degree };
  },
  stage: (type) => `CAGRA${type.degree}`,
  implicitStorage: true,
  transforms: false,
  checkType(type, bad) {
    if (type.codec || type.refine) throw bad(' (a CAGRA graph walks float32 rows: CAGRA<degree> takes no codec or refine for now)');
  },
  create: (backend, dim, type, metric, { hostCopy }) => new GraphIndex(backend, { dim, metric, degree: type.degree, hostCopy }),
  fileTypes: [GRAPH_FILE_TYPE],
  open: (backend, h, { hostCopy }) => new GraphIndex(backend, { dim: h.dim, metric: h.metric, degree: h.nlist, hostCopy }),
  async read(index, file) {
    const { ntotal, nlist, metric } = file.header;
    await index.reserve(ntotal);
    for await (const block of file.vectorBlocks('xb', ntotal, metric === 'cosine')) await index.addPrepared(block);
    await index.restoreGraph(await file.uints(ntotal * nlist), `${file.name}: graph`);
  },
  training: () => null,
  prepare: (index, onProgress) => index.buildGraph({ onProgress: (p) => onProgress(p.done, p.total, GRAPH_PHASES[p.phase]) }),
  searchParams(type) {
    const widest = widestSearch('degree' in type && type.degree !== undefined ? type.degree : type.nlist);
    const range = (max: number, min = 1) => ({ min, max, expected: `an integer in [${min}, ${max}]` });
    return { itopk: range(GRAPH_MAX_ITOPK), searchWidth: range(widest), maxIterations: { ...range(2 ** 31 - 1, 0), expected: 'an integer >= 0 (0: automatic)' }, seeds: range(GRAPH_MAX_SEEDS), entryRows: range(GRAPH_MAX_ENTRY_ROWS) };
  },
};
