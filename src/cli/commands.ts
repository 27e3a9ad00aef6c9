/**
 * The tool's commands: build, search, dedup, knn-graph (info, bench and demo are in main.ts).
 * Each takes `--help`; `--backend auto|webgpu|cpu` everywhere.
 */
import { extname } from 'node:path';
import { parseArgs } from 'node:util';
import { type Backend } from '../backend.js';
import { createBackend } from '../create-backend.js';
import { FACTORY_FORMS, type Index, indexFactory } from '../factory.js';
import { IvfFlatIndex } from '../ivf-flat-index.js';
import { loadIndex } from '../io/load-index.js';
import { VectorStreamWriter } from '../io/stream-writer.js';
import { READ_FORMATS, readVectors, writeAtomically } from '../io/vectors.js';
import { type DedupMetric, dedup } from '../jobs/dedup.js';
import { knnGraph } from '../jobs/knn-graph.js';
import type { Metric } from '../types.js';
import { Progress } from './progress.js';

export class UsageError extends Error {
  override name = 'UsageError';
}

const BACKEND_OPT = '  --backend B       auto | webgpu | cpu (default auto: WebGPU when an adapter exists)';
const FILES = `Vector files: ${READ_FORMATS.join(', ')}.`;

export const USAGE: Record<string, string> = {
  build: `usage: webgpu-knn build --input FILE --out INDEX [options]

Builds an index from a vector file and saves it (versioned, checksummed; written atomically).

options:
  --input FILE      the vectors (${READ_FORMATS.slice(0, 5).join(' ')}, IDX)
  --out INDEX       the index file to write
  --type T          ${FACTORY_FORMS} (default Flat)
  --metric M        l2 | ip | cosine (default l2)
  --nprobe P        IVF: lists scanned per query, saved with the index (default 1)
${BACKEND_OPT}
  -h, --help        this text
${FILES}`,
  search: `usage: webgpu-knn search --index INDEX --queries FILE --k K --out FILE [options]

Searches a saved index; writes each query's k neighbour ids (row numbers of the indexed file).

options:
  --index INDEX     an index file from 'webgpu-knn build'
  --queries FILE    the query vectors
  --k K             neighbours per query
  --out FILE        neighbour ids: .ivecs, .npy, .csv or .jsonl
  --distances FILE  also their distances: .fvecs, .npy, .csv or .jsonl
  --nprobe P        IVF: lists scanned per query (default: as saved)
${BACKEND_OPT}
  -h, --help        this text`,
  dedup: `usage: webgpu-knn dedup --input FILE --metric cosine|l2 --threshold T --out FILE [options]

Finds every pair i < j of near-duplicate vectors: cosine >= T, or squared L2 <= T. Candidates are
found on the backend with a safety margin and confirmed exactly (float64), so none is missed.

options:
  --input FILE      the vectors
  --metric M        cosine | l2
  --threshold T     cosine: the smallest similarity; l2: the largest squared distance
  --out FILE        the pairs: .csv (header i,j,score; 0-based rows, i < j, sorted by i then j)
                    or .jsonl (the same fields)
  --clusters FILE   also the groups (JSON: clusters with the lowest id first = kept, and drop: the
                    ids to drop)
${BACKEND_OPT}
  -h, --help        this text`,
  'knn-graph': `usage: webgpu-knn knn-graph --input FILE --k K --out FILE [options]

For every vector its k nearest other vectors (or, with --queries, every query's k nearest),
written block by block so that memory stays bounded.

options:
  --input FILE      the vectors to index
  --queries FILE    optional: search these instead of the input itself
  --k K             neighbours per row
  --out FILE        neighbour ids: .ivecs, .npy, .csv or .jsonl
  --distances FILE  also their distances: .fvecs, .npy, .csv or .jsonl
  --type T          ${FACTORY_FORMS} (default Flat)
  --metric M        l2 | ip | cosine (default l2)
  --nprobe P        IVF: lists scanned per query (default 8)
${BACKEND_OPT}
  -h, --help        this text`,
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

function positiveInt(v: Values, name: string, fallback?: number): number {
  const s = v[name];
  if (s === undefined) {
    if (fallback === undefined) throw new UsageError(`--${name} is required`);
    return fallback;
  }
  const n = Number(s);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name} must be a positive integer; got ${String(s)}`);
  return n;
}

function metricOf(v: Values): Metric {
  const m = (v.metric as string | undefined) ?? 'l2';
  if (!['l2', 'ip', 'cosine'].includes(m)) throw new UsageError(`--metric must be l2, ip or cosine; got ${m}`);
  return m as Metric;
}

async function backendOf(v: Values): Promise<Backend> {
  const b = (v.backend as string | undefined) ?? 'auto';
  if (!['auto', 'webgpu', 'cpu'].includes(b)) throw new UsageError(`--backend must be auto, webgpu or cpu; got ${b}`);
  const backend = await createBackend({ backend: b as 'auto' | 'webgpu' | 'cpu' });
  process.stderr.write(`backend: ${backend.description}\n`);
  return backend;
}

function checkExt(path: string, allowed: string[], what: string): void {
  if (!allowed.includes(extname(path).toLowerCase())) throw new UsageError(`${what} must end in ${allowed.join(', ')}; got ${path}`);
}

async function buildIndex(backend: Backend, v: Values, x: Float32Array, d: number): Promise<Index> {
  const type = (v.type as string | undefined) ?? 'Flat';
  let index: Index;
  try {
    index = indexFactory(backend, d, type, metricOf(v));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (index instanceof IvfFlatIndex) {
    const p = new Progress('training');
    await index.train(x, { onProgress: (e) => p.update(e.iteration, e.niter) });
  }
  await index.add(x);
  return index;
}

export async function build(argv: string[]): Promise<void> {
  const v = parse('build', argv);
  if (!v) return;
  const input = required(v, 'input');
  const out = required(v, 'out');
  const file = readVectors(input);
  const backend = await backendOf(v);
  try {
    const index = await buildIndex(backend, v, file.data, file.d);
    if (index instanceof IvfFlatIndex && v.nprobe !== undefined) index.nprobe = positiveInt(v, 'nprobe');
    await index.save(out);
    process.stderr.write(`wrote ${out}: ${index.ntotal} vectors of dim ${file.d}\n`);
  } finally {
    backend.dispose();
  }
}

export async function search(argv: string[]): Promise<void> {
  const v = parse('search', argv);
  if (!v) return;
  const { out, dist } = neighbourOutputs(v);
  const k = positiveInt(v, 'k');
  const queries = readVectors(required(v, 'queries'));
  const backend = await backendOf(v);
  try {
    const index = await loadIndex(backend, required(v, 'index'));
    if (queries.d !== index.dim) throw new UsageError(`the queries have dim ${queries.d}; the index has dim ${index.dim}`);
    if (index instanceof IvfFlatIndex && v.nprobe !== undefined) index.nprobe = positiveInt(v, 'nprobe');
    await writeNeighbours(index, { queries: queries.data }, k, out, dist, 'search');
  } finally {
    backend.dispose();
  }
}

/** --out (ids) and --distances, checked for types that can hold them. */
function neighbourOutputs(v: Values): { out: string; dist: string | undefined } {
  const out = required(v, 'out');
  checkExt(out, ['.ivecs', '.npy', '.csv', '.jsonl'], '--out');
  const dist = v.distances as string | undefined;
  if (dist) checkExt(dist, ['.fvecs', '.npy', '.csv', '.jsonl'], '--distances');
  return { out, dist };
}

async function writeNeighbours(
  index: Index,
  source: { queries?: Float32Array; self?: Float32Array },
  k: number,
  out: string,
  dist: string | undefined,
  label: string,
): Promise<void> {
  const n = (source.queries ?? source.self)!.length / index.dim;
  const ids = new VectorStreamWriter(out, n, k, 'int');
  const ds = dist ? new VectorStreamWriter(dist, n, k, 'float') : null;
  const p = new Progress(label);
  try {
    await knnGraph(index, {
      k,
      ...source,
      onBlock: (_, rows, labels, distances) => {
        ids.write(labels, rows);
        ds?.write(distances, rows);
      },
      onProgress: (done, total) => p.update(done, total),
    });
    ids.close();
    ds?.close();
    process.stderr.write(`wrote ${out}${dist ? ` and ${dist}` : ''}: ${n} rows of ${k}\n`);
  } catch (err) {
    ids.abort();
    ds?.abort();
    throw err;
  }
}

export async function dedupCommand(argv: string[]): Promise<void> {
  const v = parse('dedup', argv);
  if (!v) return;
  const metric = required(v, 'metric');
  if (metric !== 'cosine' && metric !== 'l2') throw new UsageError(`--metric must be cosine or l2; got ${metric}`);
  const tText = required(v, 'threshold');
  const threshold = Number(tText);
  if (!Number.isFinite(threshold)) throw new UsageError(`--threshold must be a number; got ${tText}`);
  const out = required(v, 'out');
  checkExt(out, ['.csv', '.jsonl'], '--out');
  const file = readVectors(required(v, 'input'));
  const backend = await backendOf(v);
  try {
    const p = new Progress('dedup');
    const t0 = performance.now();
    const r = await dedup(backend, file.data, file.d, {
      metric: metric as DedupMetric,
      threshold,
      onProgress: (e) => p.update(e.rowsDone, e.n, `${e.candidates} candidate pairs so far`),
    });
    const lines: string[] = [];
    if (extname(out).toLowerCase() === '.csv') {
      lines.push('i,j,score');
      for (let q = 0; q < r.i.length; q++) lines.push(`${r.i[q]},${r.j[q]},${r.score[q]}`);
    } else {
      for (let q = 0; q < r.i.length; q++) lines.push(JSON.stringify({ i: r.i[q], j: r.j[q], score: r.score[q] }));
    }
    writeAtomically(out, lines.join('\n') + '\n');
    const clusters = v.clusters as string | undefined;
    if (clusters) writeAtomically(clusters, JSON.stringify({ clusters: r.clusters, drop: Array.from(r.drop) }) + '\n');
    process.stderr.write(
      `${r.i.length} pairs (${r.candidates} candidates checked) in ${r.clusters.length} clusters; ${r.drop.length} ids to drop; ` +
        `${((performance.now() - t0) / 1000).toFixed(2)} s; wrote ${out}${clusters ? ` and ${clusters}` : ''}\n`,
    );
  } finally {
    backend.dispose();
  }
}

export async function knnGraphCommand(argv: string[]): Promise<void> {
  const v = parse('knn-graph', argv);
  if (!v) return;
  const { out, dist } = neighbourOutputs(v);
  const k = positiveInt(v, 'k');
  const file = readVectors(required(v, 'input'));
  const queries = v.queries ? readVectors(v.queries as string) : null;
  if (queries && queries.d !== file.d) throw new UsageError(`the queries have dim ${queries.d}; the input has dim ${file.d}`);
  const backend = await backendOf(v);
  try {
    const t0 = performance.now();
    const index = await buildIndex(backend, v, file.data, file.d);
    if (index instanceof IvfFlatIndex) index.nprobe = Math.min(index.nlist, positiveInt(v, 'nprobe', 8));
    await writeNeighbours(index, queries ? { queries: queries.data } : { self: file.data }, k, out, dist, 'knn-graph');
    process.stderr.write(`knn-graph: ${((performance.now() - t0) / 1000).toFixed(2)} s in all\n`);
  } finally {
    backend.dispose();
  }
}
