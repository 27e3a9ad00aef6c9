/**
 * The output of `bench compare`: JSON lines (one per configuration), a Markdown report with the
 * table, and three SVG plots (recall against queries/s; recall against bytes per vector; latency
 * percentiles). Pure functions of a
 * `CompareRun`, so the table and the JSON lines come from the same numbers.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeAtomically } from 'webgpu-knn';
import type { PeerStatus } from './peers.js';
import { paretoMask } from './stats.js';
import { colour, lineChartSvg, type LinePoint, type LineSeries, type MarkerShape, rangeChartSvg } from './svg-plot.js';

/** The data set and the search every configuration of a run shares. */
export interface CompareData {
  data: string;
  n: number;
  d: number;
  nq: number;
  k: number;
  metric: string;
}

export interface CompareRecord extends CompareData {
  bench: 'compare';
  /** 'webgpu-knn', or a peer's name. */
  engine: string;
  version: string;
  /** 'webgpu' or 'cpu'. */
  backend: string;
  /** The adapter for webgpu; 'CPU' otherwise. */
  device: string;
  /** CPU threads the engine uses; null on the GPU. */
  threads: number | null;
  /** 'Flat', 'IVF<nlist>,Flat', 'HNSW<M>', or a factory string given with --index ('SQ8', 'IVF64,PQ16,RFlat', 'CAGRA32'). */
  index: string;
  /** The search parameters: '-', 'nprobe=P', 'ef=E', 'kFactor=F', 'nprobe=P,kFactor=F' or 'itopk=L'. */
  param: string;
  /** The plot line this configuration belongs to: engine, backend and index kind, and ', batch B' in a run of several batch sizes. */
  series: string;
  buildSeconds: number;
  /** Bytes of the index as the engine serialises it (vectors, ids, centroids or graph). */
  indexBytes: number;
  /** indexBytes / n. Absent from runs written before it existed: readCompareRun fills it in. */
  bytesPerVector: number;
  batch: number;
  /** Timed batches behind the latency percentiles. */
  batches: number;
  qps: number;
  /** (slowest - fastest) / median of the timed passes. */
  spread: number;
  latencyMs: { p50: number; p95: number; p99: number };
  recall1: number;
  recall10: number | null;
  recall100: number | null;
}

export interface CompareMeta extends CompareData {
  title: string;
  /** What recall is measured against. */
  reference: string;
  machine: string;
  /** The WebGPU adapter, or null when webgpu did not run. */
  adapter: string | null;
  node: string;
  date: string;
  settings: string[];
  command: string;
}

export interface CompareRun {
  meta: CompareMeta;
  peers: PeerStatus[];
  records: CompareRecord[];
  /** Configurations that could not run here, with the reason. */
  notMeasured: string[];
}

export const TABLE_HEADER = [
  'engine', 'backend', 'index', 'param', 'batch', 'threads', 'build s', 'index MiB', 'bytes/vector',
  'recall@1', 'recall@10', 'recall@100', 'queries/s', 'p50 ms', 'p95 ms', 'p99 ms', 'Pareto',
];

const MIB = 2 ** 20;

function ms(v: number): string {
  return v >= 1 ? v.toFixed(2) : v.toPrecision(3);
}

function recall(v: number | null): string {
  return v === null ? '-' : v.toFixed(3);
}

/** The recall the plot and the Pareto front use: @10, or @1 when k < 10. */
export function plottedRecall(r: CompareRecord): number {
  return r.recall10 ?? r.recall1;
}

/**
 * Pareto front over (recall, queries/s) among the rows of the same batch size: a configuration is
 * on it when no other at its batch size has recall and queries/s both at least as high and one of
 * them higher.
 */
export function paretoFront(records: CompareRecord[]): boolean[] {
  const front = records.map(() => false);
  for (const batch of new Set(records.map((r) => r.batch))) {
    const at = records.flatMap((r, i) => (r.batch === batch ? [i] : []));
    paretoMask(at.map((i) => records[i]), plottedRecall, (r) => r.qps).forEach((on, j) => (front[at[j]] = on));
  }
  return front;
}

/** The batch sizes of a run's rows, as words: '100', or '1000 and 1'. */
export function batchSizes(records: CompareRecord[]): string {
  return [...new Set(records.map((r) => r.batch))].join(' and ') || '?';
}

export function tableRows(records: CompareRecord[]): string[][] {
  const front = paretoFront(records);
  return records.map((r, i) => [
    r.engine,
    r.backend,
    r.index,
    r.param,
    String(r.batch),
    r.threads === null ? '-' : String(r.threads),
    r.buildSeconds.toFixed(2),
    (r.indexBytes / MIB).toFixed(2),
    r.bytesPerVector.toFixed(1),
    recall(r.recall1),
    recall(r.recall10),
    recall(r.recall100),
    r.qps.toFixed(1),
    ms(r.latencyMs.p50),
    ms(r.latencyMs.p95),
    ms(r.latencyMs.p99),
    front[i] ? 'yes' : '',
  ]);
}

export function markdownTable(header: string[], rows: string[][]): string {
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

/** Series in order of first appearance. */
function seriesNames(records: CompareRecord[]): string[] {
  return [...new Set(records.map((r) => r.series))];
}

export function chartTitle(m: Pick<CompareMeta, 'title' | 'data' | 'n' | 'd' | 'nq' | 'k' | 'metric' | 'machine' | 'adapter'>): string[] {
  return [
    `${m.title}: ${m.data}, n = ${m.n}, d = ${m.d}, ${m.nq} queries, k = ${m.k}, ${m.metric}`,
    `${m.machine}`,
    `WebGPU adapter: ${m.adapter ?? 'none (webgpu not run)'}`,
  ];
}

/** One colour per engine and backend (webgpu-knn webgpu, webgpu-knn cpu, faiss, ...), in order of appearance. */
function groupColours(records: CompareRecord[]): Record<string, string> {
  return Object.fromEntries([...new Set(records.map(group))].map((g, i) => [g, colour(i)]));
}

function group(r: CompareRecord): string {
  return r.engine === 'webgpu-knn' ? `${r.engine} ${r.backend}` : r.engine;
}

/** A configuration in a few words: 'webgpu-knn webgpu IVF894,Flat nprobe=8', and ', batch 1' in a run of several batch sizes. */
export function rowLabel(r: CompareRecord, withBatch = false): string {
  return `${group(r)} ${r.index}${r.param === '-' ? '' : ` ${r.param}`}${withBatch ? `, batch ${r.batch}` : ''}`;
}

const GROUP_MARKERS: MarkerShape[] = ['circle', 'square', 'diamond', 'triangle', 'triangle-down'];

/**
 * How the recall plots draw a configuration: its index (Flat, IVF12,Flat, SQ8, HNSW16, ...) gives
 * the colour, its engine and backend the marker, so one index string compares across engines by
 * colour, and two indexes of one engine never look alike.
 */
function recallStyle(records: CompareRecord[]): (r: CompareRecord) => { colour: string; marker: MarkerShape } {
  const indexes = [...new Set(records.map((r) => r.index))];
  const groups = [...new Set(records.map(group))];
  // In a run of several batch sizes, each size has colours of its own (after the first size's).
  const batches = [...new Set(records.map((r) => r.batch))];
  return (r) => ({
    colour: colour(indexes.indexOf(r.index) + indexes.length * batches.indexOf(r.batch)),
    marker: GROUP_MARKERS[groups.indexOf(group(r)) % GROUP_MARKERS.length],
  });
}

/** A point's label: the search parameters' values ('8' for nprobe=8, '8/4' for nprobe=8,kFactor=4). */
function paramLabel(r: CompareRecord): string | undefined {
  return r.param === '-' ? undefined : r.param.split(',').map((p) => p.split('=')[1]).join('/');
}

/** What the point labels are, from the parameters the run has. */
function labelsNote(records: CompareRecord[]): string {
  const names = [...new Set(records.filter((r) => r.param !== '-').map((r) => r.param.split(',').map((p) => p.split('=')[0]).join('/')))];
  return names.length ? `; labels: ${names.join(', ')}` : '';
}

export function recallQpsSvg(run: CompareRun): string {
  const front = paretoFront(run.records);
  const r = run.meta.k >= 10 ? 10 : 1;
  const style = recallStyle(run.records);
  const series: LineSeries[] = seriesNames(run.records).map((name) => {
    const members = run.records.map((x, i) => ({ x, i })).filter(({ x }) => x.series === name);
    return {
      name,
      ...style(members[0].x),
      points: members.map(({ x, i }) => ({ x: plottedRecall(x), y: x.qps, label: paramLabel(x), highlight: front[i] })),
    };
  });
  return lineChartSvg({
    title: chartTitle(run.meta),
    xLabel: `recall@${r} (tie-aware, against ${run.meta.reference.split(' (')[0]})${labelsNote(run.records)}`,
    yLabel: 'queries per second (log scale)',
    series,
    highlightLabel: 'Pareto-optimal',
  });
}

/**
 * Pareto front over (recall, bytes per vector): no other configuration has recall at least as
 * high and bytes per vector at most as many, one of them strictly.
 */
export function bytesFront(records: CompareRecord[]): boolean[] {
  return paretoMask(records, plottedRecall, (r) => -r.bytesPerVector);
}

/**
 * Recall against memory: bytes per vector (x, log) and recall (y), one marker per configuration,
 * a legend entry per engine, backend and index (the configurations of one index share its bytes,
 * so an nprobe sweep is a column of markers), drawn as in the recall/queries plot.
 */
export function recallBytesSvg(run: CompareRun): string {
  // Bytes do not depend on the batch size: a run of several draws its first size's rows.
  const records = run.records.filter((x) => x.batch === run.records[0]?.batch);
  const front = bytesFront(records);
  const r = run.meta.k >= 10 ? 10 : 1;
  const style = recallStyle(records);
  const names = [...new Set(records.map((x) => `${group(x)} ${x.index}`))];
  const series: LineSeries[] = names.map((name) => {
    const members = records.map((x, i) => ({ x, i })).filter(({ x }) => `${group(x)} ${x.index}` === name);
    return {
      name,
      ...style(members[0].x),
      points: members.map(({ x, i }): LinePoint => ({ x: x.bytesPerVector, y: plottedRecall(x), label: paramLabel(x), highlight: front[i] })),
    };
  });
  return lineChartSvg({
    title: chartTitle(run.meta),
    xLabel: `bytes per vector (serialised index / n, log scale)${labelsNote(records)}`,
    yLabel: `recall@${r} (tie-aware, against ${run.meta.reference.split(' (')[0]})`,
    xScale: 'log',
    yScale: 'linear',
    lines: false,
    series,
    highlightLabel: 'Pareto-optimal (recall, bytes)',
  });
}

export function latencySvg(run: CompareRun): string {
  return rangeChartSvg({
    title: chartTitle(run.meta),
    xLabel: `latency per batch of ${batchSizes(run.records)} queries, ms (log scale)`,
    markers: ['p50', 'p95', 'p99'],
    colours: groupColours(run.records),
    rows: run.records.map((x) => ({
      label: rowLabel(x, new Set(run.records.map((r) => r.batch)).size > 1),
      series: group(x),
      values: [x.latencyMs.p50, x.latencyMs.p95, x.latencyMs.p99],
    })),
  });
}

/** Per series, the fastest configuration reaching each recall target. */
function fastestAt(records: CompareRecord[], target: number): string[][] {
  return seriesNames(records).map((name) => {
    const ok = records.filter((r) => r.series === name && plottedRecall(r) >= target).sort((a, b) => b.qps - a.qps);
    return ok.length ? [name, ok[0].param, recall(plottedRecall(ok[0])), ok[0].qps.toFixed(1)] : [name, 'not reached', '-', '-'];
  });
}

/** A report's title and its bullets: the data (`queries` says more about the queries), reference, machine, settings, command, lines. */
export function reportHead(m: CompareMeta, queries: string, lines: string): string[] {
  return [
    `# ${m.title}: ${m.data}`,
    '',
    `- Data: ${m.data}, n = ${m.n}, d = ${m.d}, ${m.nq} queries${queries}, k = ${m.k}, metric ${m.metric}`,
    `- Recall against: ${m.reference}; tie-aware (a returned id counts when its true distance is no worse than the true r-th)`,
    `- Machine: ${m.machine}; Node ${m.node}`,
    `- WebGPU adapter: ${m.adapter ?? 'none (webgpu not run)'}`,
    `- Date: ${m.date}`,
    ...m.settings.map((s) => `- ${s}`),
    `- Command: \`${m.command}\``,
    `- Lines: ${lines}`,
  ];
}

export function reportMarkdown(run: CompareRun, files: { recallPlot: string; bytesPlot: string; latencyPlot: string; jsonl: string }): string {
  const m = run.meta;
  const r = m.k >= 10 ? 10 : 1;
  const status = (p: PeerStatus): string =>
    !p.available ? 'not installed' : p.error ? 'failed' : run.records.some((x) => x.engine === p.name) ? 'ran' : 'installed, not run';
  const peers = run.peers.map((p) => [p.name, status(p), p.version ?? '-', (p.error ? `${p.error}; ${p.detail}` : p.detail).replace(/\|/g, '\\|')]);
  return [
    ...reportHead(m, '', `${files.jsonl} (one JSON object per row below)`),
    '',
    '## Engines',
    '',
    markdownTable(['engine', 'status', 'version', 'where / why'], [['webgpu-knn', 'ran', run.records.find((x) => x.engine === 'webgpu-knn')?.version ?? '-', 'this project'], ...peers]),
    '',
    '## Results',
    '',
    `queries/s over all timed batches; latency percentiles per batch of ${batchSizes(run.records)} queries (the batch column); build = train + add;`,
    `index MiB = the engine's own serialised index, bytes/vector = its bytes / n; Pareto = no other row of its batch size has both higher recall@${r} and higher queries/s`,
    '(compared unrounded: a row showing 1.000 may be just below 1).',
    '',
    markdownTable(TABLE_HEADER, tableRows(run.records)),
    '',
    ...(run.notMeasured.length ? ['Not measured:', '', ...run.notMeasured.map((w) => `- ${w}`), ''] : []),
    `## Fastest configuration per series by recall@${r}`,
    '',
    ...[0.9, 0.95, 0.99].flatMap((t) => [`recall@${r} >= ${t}:`, '', markdownTable(['series', 'param', `recall@${r}`, 'queries/s'], fastestAt(run.records, t)), '']),
    '## Plots',
    '',
    `![recall@${r} against queries/s](${files.recallPlot})`,
    '',
    `![recall@${r} against bytes per vector](${files.bytesPlot})`,
    '',
    `![latency percentiles](${files.latencyPlot})`,
    '',
  ].join('\n');
}

export const REPORT_FILES = {
  jsonl: 'compare.jsonl',
  run: 'run.json',
  report: 'report.md',
  recallPlot: 'recall-qps.svg',
  bytesPlot: 'recall-bytes.svg',
  latencyPlot: 'latency.svg',
} as const;

/**
 * Writes the files into `dir` (which exists); returns their paths. run.json keeps what is not in
 * the JSON lines (settings, machine, engines), so `readCompareRun` can redraw a run unmeasured.
 */
export function writeCompareReport(dir: string, run: CompareRun): string[] {
  const f = REPORT_FILES;
  const out: [string, string][] = [
    [f.jsonl, run.records.map((r) => JSON.stringify(r)).join('\n') + '\n'],
    [f.run, JSON.stringify({ meta: run.meta, peers: run.peers, notMeasured: run.notMeasured }, null, 2) + '\n'],
    [f.recallPlot, recallQpsSvg(run)],
    [f.bytesPlot, recallBytesSvg(run)],
    [f.latencyPlot, latencySvg(run)],
    [f.report, reportMarkdown(run, f)],
  ];
  return writeReportFiles(dir, out);
}

/** Writes each (name, text) into `dir`, each file whole or not at all; returns their paths. */
export function writeReportFiles(dir: string, files: [string, string][]): string[] {
  for (const [name, text] of files) writeAtomically(join(dir, name), text);
  return files.map(([name]) => join(dir, name));
}

/** A file of a run's folder, for --replot: `bench` names the case that writes such folders. */
export function readReportFile(dir: string, name: string, bench: string): string {
  try {
    return readFileSync(join(dir, name), 'utf8');
  } catch {
    throw new Error(`${join(dir, name)} not found: --replot takes a folder that bench ${bench} wrote`);
  }
}

/** A run as `writeCompareReport` left it in `dir`; rows written before bytesPerVector existed get it from indexBytes / n. */
export function readCompareRun(dir: string): CompareRun {
  const read = (name: string): string => readReportFile(dir, name, 'compare');
  const rest = JSON.parse(read(REPORT_FILES.run)) as Omit<CompareRun, 'records'>;
  const records = read(REPORT_FILES.jsonl).split('\n').filter(Boolean).map((l) => {
    const r = JSON.parse(l) as Omit<CompareRecord, 'bytesPerVector'> & { bytesPerVector?: number };
    return { ...r, bytesPerVector: r.bytesPerVector ?? r.indexBytes / r.n };
  });
  return { ...rest, records };
}
