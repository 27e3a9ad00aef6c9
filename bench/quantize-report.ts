/**
 * The output of `bench quantize`: JSON lines (one per factory string and kFactor, every backend in
 * it), a Markdown report and an SVG plot of recall@10 against bytes per vector (log x) with the
 * Pareto front marked. Pure functions of a `QuantizeRun`, so the table, the plot and the JSON
 * lines come from the same numbers.
 */
import { chartTitle, type CompareData, type CompareMeta, markdownTable, readReportFile, reportHead, writeReportFiles } from './compare-report.js';
import { paretoMask } from './stats.js';
import { colour, lineChartSvg, type LineSeries, type MarkerShape } from './svg-plot.js';

/** One backend's search of a configuration. */
export interface BackendResult {
  qps: number;
  /** (slowest - fastest) / median of the timed passes. */
  spread: number;
  recall1: number;
  recall10: number | null;
  recall100: number | null;
}

export interface QuantizeRecord extends CompareData {
  bench: 'quantize';
  /** Queries are base rows whose own row is excluded from their neighbours. */
  selfQueries: boolean;
  /** The factory string ('SQ8', 'PQ16,RFlat', 'Prefix64,Flat', ...). */
  index: string;
  /** ,RFlat strings: candidates k * kFactor re-ranked; null for a string without re-ranking. */
  kFactor: number | null;
  /** The backend that trained, added and saved; the others loaded the file. */
  builtOn: string;
  /** Train + add on builtOn. */
  buildSeconds: number;
  /** Bytes of the saved index file: codes, codec tables, ids, and the float32 rows of ,RFlat. */
  indexBytes: number;
  /** indexBytes / n. */
  bytesPerVector: number;
  /** One vector's code as the first stage scans it (4d for Flat, d for SQ8, M for PQ<M>, d/8 for LSH, ...; no ids, tables or re-rank rows); null for a form not known to codeBytes. */
  codeBytesPerVector: number | null;
  /** Recall of builtOn's results (tie-aware, against the run's reference); null where r > k. */
  recall1: number;
  recall10: number | null;
  recall100: number | null;
  /** Per backend that searched ('webgpu', 'cpu'). */
  backends: Partial<Record<string, BackendResult>>;
  /** Labels (nq * k) in which webgpu and cpu differ: 0 = GPU=CPU; null when one of them did not run. */
  labelsDiffer: number | null;
}

/** A compare run's meta (what, where, when, how), and: */
export interface QuantizeMeta extends CompareMeta {
  selfQueries: boolean;
  /** Wall time of the builds and searches (not the reference). */
  seconds: number;
}

export interface QuantizeRun {
  meta: QuantizeMeta;
  records: QuantizeRecord[];
  /** Strings (or string and backend) that could not run, with the reason. */
  notMeasured: string[];
}

export const QUANTIZE_HEADER = [
  'index', 'kFactor', 'bytes/vector', 'code bytes', 'recall@1', 'recall@10', 'recall@100', 'queries/s webgpu', 'queries/s cpu', 'GPU=CPU', 'Pareto',
];

/** The recall the plot and the front use: @10, or @1 when k < 10. */
export function quantizeRecall(r: QuantizeRecord): number {
  return r.recall10 ?? r.recall1;
}

/** What a plot's x is: the saved file's bytes per vector, or the code's (codeBytesPerVector). */
export type BytesAxis = 'file' | 'code';

const bytesOf = (r: QuantizeRecord, x: BytesAxis): number => (x === 'file' ? r.bytesPerVector : r.codeBytesPerVector ?? NaN);

/**
 * Pareto front over (bytes per vector, recall): no other row has bytes <= and recall >=, one
 * strictly. By the file's bytes (the table's column) or by the code's (rows without one: never on it).
 */
export function quantizeFront(records: QuantizeRecord[], x: BytesAxis = 'file'): boolean[] {
  return paretoMask(records, quantizeRecall, (r) => -bytesOf(r, x)).map((on, i) => on && Number.isFinite(bytesOf(records[i], x)));
}

const fixed = (v: number | null | undefined, digits: number): string => (v === null || v === undefined ? '-' : v.toFixed(digits));

function gpuCpu(r: QuantizeRecord): string {
  if (r.labelsDiffer === null) return '-';
  return r.labelsDiffer === 0 ? 'yes' : `no (${r.labelsDiffer} of ${r.nq * r.k} labels)`;
}

export function quantizeRows(run: QuantizeRun): string[][] {
  const front = quantizeFront(run.records);
  return run.records.map((r, i) => [
    r.index,
    r.kFactor === null ? '-' : String(r.kFactor),
    r.bytesPerVector.toFixed(1),
    r.codeBytesPerVector === null ? '?' : String(r.codeBytesPerVector),
    fixed(r.recall1, 3),
    fixed(r.recall10, 3),
    fixed(r.recall100, 3),
    fixed(r.backends.webgpu?.qps, 1),
    fixed(r.backends.cpu?.qps, 1),
    gpuCpu(r),
    front[i] ? 'yes' : '',
  ]);
}

/** The kind of compression a string is, for the plot's colours: Flat, SQ, PQ, LSH, Prefix, PCAR (IVF ones prefixed). */
export function family(description: string): string {
  const ivf = /^IVF\d+,/.test(description);
  const storage = description.replace(/^IVF\d+,/, '');
  const kind = (/^(Flat|SQ|PQ|LSH|Prefix|PCAR)/.exec(storage)?.[1]) ?? storage.split(',')[0];
  return ivf ? `IVF ${kind}` : kind;
}

/** A point's label: the storage, shortened ('SQ8', 'PQ16', 'P64' for Prefix64, 'PCAR64' for PCAR64,Flat), '+R4' for ,RFlat at kFactor 4. */
export function pointLabel(r: QuantizeRecord): string {
  const storage = r.index.replace(/,(RFlat|Refine\([^)]*\))$/, '').replace(/^Prefix(\d+),Flat$/, 'P$1').replace(/^(PCAR?\d+),Flat$/, '$1');
  return r.kFactor === null ? storage : `${storage}+R${r.kFactor}`;
}

const FACTOR_MARKERS: MarkerShape[] = ['square', 'diamond', 'triangle', 'triangle-down'];

/**
 * Recall@10 (y) against bytes per vector of the saved file (x, log): a point per string and
 * kFactor, coloured by family, shaped by re-ranking (circle: codes alone; one shape per kFactor),
 * the Pareto front ringed and joined by a step line.
 */
export function quantizeSvg(run: QuantizeRun, x: BytesAxis = 'file'): string {
  const front = quantizeFront(run.records, x);
  const at = run.meta.k >= 10 ? 10 : 1;
  const factors = [...new Set(run.records.map((x) => x.kFactor).filter((f): f is number => f !== null))].sort((a, b) => a - b);
  const marker = (x: QuantizeRecord): MarkerShape => (x.kFactor === null ? 'circle' : FACTOR_MARKERS[factors.indexOf(x.kFactor) % FACTOR_MARKERS.length]);
  const families = [...new Set(run.records.map((x) => family(x.index)))];
  const series: LineSeries[] = families.map((name, i) => ({
    name,
    colour: colour(i),
    points: run.records
      .map((r, j) => ({ r, j }))
      .filter(({ r }) => family(r.index) === name && Number.isFinite(bytesOf(r, x)))
      .map(({ r, j }) => ({ x: bytesOf(r, x), y: quantizeRecall(r), label: pointLabel(r), highlight: front[j], marker: marker(r) })),
  }));
  const m = run.meta;
  return lineChartSvg({
    title: chartTitle({ ...m, data: m.selfQueries ? `${m.data} (self-queries)` : m.data }),
    xLabel: x === 'file' ? 'bytes per vector (saved index file / n; log scale)' : 'code bytes per vector (no ids, tables or re-rank rows; log scale)',
    yLabel: `recall@${at} (tie-aware, against ${m.reference.split(' (')[0]})`,
    xScale: 'log',
    yScale: 'linear',
    lines: false,
    series,
    markerKey: [
      ...(factors.length && run.records.some((x) => x.kFactor === null) ? [{ marker: 'circle' as const, label: 'codes alone' }] : []),
      ...factors.map((f) => ({ marker: FACTOR_MARKERS[factors.indexOf(f) % FACTOR_MARKERS.length], label: `,RFlat kFactor ${f}` })),
    ],
    highlightLabel: 'Pareto-optimal (recall, bytes)',
    frontier: 'Pareto front',
  });
}

export const QUANTIZE_FILES = { jsonl: 'quantize.jsonl', run: 'run.json', report: 'report.md', plot: 'recall-bytes.svg', codePlot: 'recall-code-bytes.svg' } as const;

export function quantizeMarkdown(run: QuantizeRun): string {
  const m = run.meta;
  const r = m.k >= 10 ? 10 : 1;
  return [
    ...reportHead(m, m.selfQueries ? " (self-queries: base rows, each one's own row excluded from its neighbours)" : '', `${QUANTIZE_FILES.jsonl} (one JSON object per row below, every backend in it)`),
    '',
    '## Results',
    '',
    'bytes/vector = the saved index file / n (codes, codec tables, ids, and for ,RFlat the float32 rows too);',
    'code bytes = one vector\'s code as the first stage scans it (no ids, tables or re-rank rows; ? for a form not known);',
    `recall of the backend that built the index; queries/s per backend; GPU=CPU = the two backends returned the same labels;`,
    `Pareto = no other row has bytes/vector <= and recall@${r} >=, one of them strictly (compared unrounded).`,
    '',
    markdownTable(QUANTIZE_HEADER, quantizeRows(run)),
    '',
    ...(run.notMeasured.length ? ['Not measured:', '', ...run.notMeasured.map((w) => `- not measured: ${w}`), ''] : []),
    '## Plot',
    '',
    `![recall@${r} against bytes per vector](${QUANTIZE_FILES.plot})`,
    '',
    `The same against code bytes per vector (what the first stage scans; the Pareto front by that measure; ,RFlat rows and codec tables left out):`,
    '',
    `![recall@${r} against code bytes per vector](${QUANTIZE_FILES.codePlot})`,
    '',
  ].join('\n');
}

/** Writes the files into `dir` (which exists); returns their paths. */
export function writeQuantizeReport(dir: string, run: QuantizeRun): string[] {
  const f = QUANTIZE_FILES;
  const out: [string, string][] = [
    [f.jsonl, run.records.map((x) => JSON.stringify(x)).join('\n') + '\n'],
    [f.run, JSON.stringify({ meta: run.meta, notMeasured: run.notMeasured }, null, 2) + '\n'],
    [f.plot, quantizeSvg(run)],
    [f.codePlot, quantizeSvg(run, 'code')],
    [f.report, quantizeMarkdown(run)],
  ];
  return writeReportFiles(dir, out);
}

/** A run as writeQuantizeReport left it in `dir`. */
export function readQuantizeRun(dir: string): QuantizeRun {
  const read = (name: string): string => readReportFile(dir, name, 'quantize');
  const rest = JSON.parse(read(QUANTIZE_FILES.run)) as Omit<QuantizeRun, 'records'>;
  return { ...rest, records: read(QUANTIZE_FILES.jsonl).split('\n').filter(Boolean).map((l) => JSON.parse(l) as QuantizeRecord) };
}
