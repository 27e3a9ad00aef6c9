/**
 * `bench quantize`: the compression study of one data set. Every factory string of the list
 * (by default: Flat, the scalar quantisers, PQ at two sizes, binary LSH codes, dimension prefixes
 * and PCA-rotated prefixes, each alone and with the exact ,RFlat re-rank) is built once on the
 * first backend, saved, loaded on the other, and searched on both with each kFactor: recall@1/10/100
 * against exact search (bench/exact.ts, tie-aware), bytes per vector of the saved file, queries/s
 * per backend, and whether the backends returned the same labels. Self-queries (data.selfRows: the
 * queries are base rows, their own row is no neighbour) search k + 1 and drop the own row.
 * Writes JSON lines, a Markdown report and a recall/bytes plot (quantize-report.ts).
 */
import { mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Backend, Metric, VectorIndex } from 'webgpu-knn';
import { InvalidArgumentError, createBackend, indexFactory, loadIndex, parseIndexType } from 'webgpu-knn';
import { machineDescription } from './compare.js';
import { type BenchData } from './data.js';
import { benchReference, dropSelf, type Reference, tieAwareRecall } from './exact.js';
import { type RefineSearchParams } from './index-strings.js';
import { inScratchDir, type MeasureOptions, measure } from './measure.js';
import { type QuantizeRecord, type QuantizeRun, QUANTIZE_HEADER, quantizeRows, writeQuantizeReport } from './quantize-report.js';
import { summarize, table } from './stats.js';

export type BenchBackend = 'webgpu' | 'cpu';

export interface QuantizeOptions extends MeasureOptions {
  data: BenchData;
  metric: Metric;
  k: number;
  /** Factory strings, in report order (default: defaultQuantizeStrings(d)). */
  indexes: string[];
  /** ,RFlat strings are searched at each; the others once, without kFactor. */
  kFactors: number[];
  /** The first builds, trains and saves; the others load the saved file. */
  backends: BenchBackend[];
  outDir: string;
  command: string;
  log: (line: string) => void;
}

/** The divisor of d nearest `target` (the larger on a tie), at least 1: a PQ M that d allows. */
export function nearestDivisor(d: number, target: number): number {
  let best = 1;
  for (let m = 1; m <= d; m++) if (d % m === 0 && Math.abs(m - target) <= Math.abs(best - target)) best = m;
  return best;
}

/** The two PQ sizes of the default list: M nearest d/8 and d/16 among the divisors of d (8-bit codes: M bytes). */
export function pqSizes(d: number): number[] {
  return [...new Set([nearestDivisor(d, d / 8), nearestDivisor(d, d / 16)])];
}

/** The prefix lengths of the default list: d/2, d/4, d/8 rounded, at least 1, distinct. */
export function prefixSizes(d: number): number[] {
  return [...new Set([2, 4, 8].map((f) => Math.max(1, Math.round(d / f))))];
}

/**
 * The study's default factory strings for dimension d: Flat, then each compression alone and
 * followed by ,RFlat (the exact re-rank). Spelt as src/indexes/factory.ts parses them; LSH, LSHrt, Prefix<p>
 * and PCAR<p> are listed whether or not this build knows them (a string it cannot build is reported
 * as not measured).
 */
export function defaultQuantizeStrings(d: number): string[] {
  const codes = [
    'SQfp16', 'SQ8', 'SQ4', ...pqSizes(d).map((m) => `PQ${m}`), 'LSH', 'LSHrt',
    ...prefixSizes(d).map((p) => `Prefix${p},Flat`), ...prefixSizes(d).map((p) => `PCAR${p},Flat`),
  ];
  return ['Flat', ...codes.flatMap((c) => [c, `${c},RFlat`])];
}

/** Whether a string re-ranks its candidates (ends ,RFlat or ,Refine(...)), so kFactor matters. */
export function refines(description: string): boolean {
  return /,(RFlat|Refine\([^)]*\))$/.test(description);
}

/**
 * Bytes of one vector's code, from the string alone (what the first stage scans; ids, tables and
 * re-rank rows not counted): null for a form this function does not know.
 */
export function codeBytes(description: string, d: number): number | null {
  const s = description.replace(/,(RFlat|Refine\([^)]*\))$/, '').replace(/^IVF\d+,/, '');
  let m: RegExpExecArray | null;
  if (s === 'Flat') return 4 * d;
  if (s === 'SQfp16') return 2 * d;
  if (s === 'SQ8') return d;
  if (s === 'SQ4') return Math.ceil(d / 2);
  if ((m = /^PQ(\d+)(?:x(\d+))?$/.exec(s))) return Math.ceil((Number(m[1]) * Number(m[2] ?? 8)) / 8);
  if (/^LSH(r|t|rt)?$/.test(s)) return Math.ceil(d / 8);
  if ((m = /^(?:Prefix|PCAR)(\d+),Flat$/.exec(s))) return 4 * Number(m[1]);
  return null;
}

/** One backend's search of one configuration: its labels (k a query) and timings. */
interface Searched {
  labels: Int32Array;
  qps: number;
  spread: number;
}

export async function runQuantize(o: QuantizeOptions): Promise<QuantizeRun> {
  const { data, k, metric } = o;
  const self = data.selfRows;
  if (k + (self ? 1 : 0) > data.n) throw new InvalidArgumentError(`--k must be at most ${self ? 'n - 1' : 'n'} = ${data.n - (self ? 1 : 0)}; got ${k}`);
  const reference: Reference = benchReference(data, k, metric, o.log);
  // Self-queries search one more and drop the query's own row (exact.ts dropSelf).
  const kSearch = self ? k + 1 : k;
  // What every record and the run's meta repeat.
  const shared = { data: data.name, n: data.n, d: data.d, nq: data.nq, k, metric, selfQueries: !!self };
  const records: QuantizeRecord[] = [];
  const notMeasured: string[] = [];
  const skip = (what: string, err: unknown): void => {
    // The factory's message ends with the list of every form it knows: the same long tail for each
    // string it lacks, left out (the README and FACTORY_FORMS have it).
    const why = (err as Error).message.split('\n')[0].replace(/; expected "\[IVF.*$/, '');
    notMeasured.push(`${what}: ${why}`);
    o.log(`${what}: not measured: ${why}`);
  };

  const backends = new Map<BenchBackend, Backend>();
  for (const name of o.backends) {
    try {
      backends.set(name, await createBackend({ backend: name }));
    } catch (err) {
      skip(`backend ${name}`, err);
    }
  }
  const adapter = backends.get('webgpu')?.description ?? null;
  const t0 = performance.now();
  try {
    const [buildOn, ...loadOn] = [...backends.keys()];
    if (!buildOn) throw new Error(`no backend started: ${notMeasured.join('; ')}`);
    const recall = (r: number, labels: Int32Array): number | null =>
      r <= k ? tieAwareRecall(r, labels, k, reference.scores, reference.k, data.xb, data.xq, data.d, metric, self) : null;

    for (const description of o.indexes) {
      try {
        parseIndexType(description); // a form this build lacks: not measured, with the factory's reason
      } catch (err) {
        skip(description, err);
        continue;
      }
      const factors: (number | null)[] = refines(description) ? o.kFactors : [null];
      // By backend, by kFactor: what each search returned.
      const searched = new Map<BenchBackend, Searched[]>();
      let buildSeconds = 0;
      let indexBytes = 0;
      await inScratchDir(async (dir) => {
        const path = join(dir, 'index');
        for (const name of [buildOn, ...loadOn]) {
          const be = backends.get(name)!;
          let index: VectorIndex | null = null;
          try {
            if (name === buildOn) {
              const t = performance.now();
              index = indexFactory(be, data.d, description, metric);
              await index.train(data.xb);
              await index.add(data.xb);
              buildSeconds = (performance.now() - t) / 1000;
              await index.save(path);
              indexBytes = statSync(path).size;
              o.log(`${name}: ${description} trained, added and saved in ${buildSeconds.toFixed(2)} s, ${(indexBytes / data.n).toFixed(1)} bytes a vector`);
            } else {
              if (!searched.has(buildOn)) break; // nothing was saved
              index = await loadIndex(be, path);
            }
            const results: Searched[] = [];
            for (const kFactor of factors) {
              const params: RefineSearchParams = kFactor === null ? {} : { kFactor };
              const live = index;
              const m = await measure(async (xq) => (await live.search(xq, kSearch, params)).labels, data.xq, data.nq, data.d, kSearch, o);
              const qps = (data.nq * m.passSeconds.length) / m.passSeconds.reduce((a, b) => a + b, 0);
              results.push({ labels: self ? dropSelf(m.labels, data.nq, k, self) : m.labels, qps, spread: summarize(m.passSeconds).spread });
            }
            searched.set(name, results);
          } catch (err) {
            skip(`${description} on ${name}${name === buildOn ? '' : ' (loaded)'}`, err);
            if (name === buildOn) break;
          } finally {
            await index?.dispose();
          }
        }
      });
      const built = searched.get(buildOn);
      if (!built) continue;
      factors.forEach((kFactor, i) => {
        const labels = built[i].labels;
        const per: QuantizeRecord['backends'] = {};
        for (const [name, results] of searched) {
          const x = results[i];
          per[name] = { qps: x.qps, spread: x.spread, recall1: recall(1, x.labels)!, recall10: recall(10, x.labels), recall100: recall(100, x.labels) };
        }
        const [g, c] = [searched.get('webgpu')?.[i].labels, searched.get('cpu')?.[i].labels];
        const differ = g && c ? g.reduce((s, v, j) => s + (v === c[j] ? 0 : 1), 0) : null;
        const record: QuantizeRecord = {
          bench: 'quantize',
          ...shared,
          index: description,
          kFactor,
          builtOn: buildOn,
          buildSeconds,
          indexBytes,
          bytesPerVector: indexBytes / data.n,
          codeBytesPerVector: codeBytes(description, data.d),
          recall1: recall(1, labels)!,
          recall10: recall(10, labels),
          recall100: recall(100, labels),
          backends: per,
          labelsDiffer: differ,
        };
        records.push(record);
        console.log(JSON.stringify(record));
      });
    }
  } finally {
    for (const be of backends.values()) be.dispose();
  }
  const seconds = (performance.now() - t0) / 1000;

  const run: QuantizeRun = {
    meta: {
      title: 'webgpu-knn quantize',
      ...shared,
      reference: reference.name,
      machine: machineDescription(),
      adapter,
      node: process.version,
      date: new Date().toISOString(),
      settings: [
        `Backends: ${o.backends.join(', ')}; each string built (trained, added) on the first and saved; the others load the saved file and search the same codes`,
        `Timing: ${o.warmup} warm-up pass(es), then ${o.repeats} timed pass(es) over the queries in batches of ${o.batch}`,
        `,RFlat strings: kFactor ${o.kFactors.join(', ')} (k * kFactor candidates from the codes, re-scored exactly); the others: no kFactor`,
        `PQ sizes of the default list: M nearest d/8 and d/16 among the divisors of d (here ${pqSizes(data.d).map((m) => `PQ${m}`).join(', ')}); prefixes d/2, d/4, d/8 (here ${prefixSizes(data.d).join(', ')})`,
        ...(self ? [`Self-queries: the ${data.nq} queries are base rows; each searches k + 1 = ${k + 1} and its own row is dropped (the last result where the own row is absent); the reference excludes it too`] : []),
        `Measuring took ${seconds.toFixed(1)} s (reference not included)`,
      ],
      command: o.command,
      seconds,
    },
    records,
    notMeasured,
  };
  if (!records.length) throw new Error(`nothing was measured: ${notMeasured.join('; ')}`);
  mkdirSync(o.outDir, { recursive: true });
  const files = writeQuantizeReport(o.outDir, run);
  console.log(`\nquantize: ${data.name}, n=${data.n} d=${data.d} nq=${data.nq} k=${k} ${metric}${self ? ', self-queries' : ''}; recall against ${reference.name}\n${table(QUANTIZE_HEADER, quantizeRows(run))}`);
  for (const line of notMeasured) console.log(`not measured: ${line}`);
  console.log(`\nmeasured in ${seconds.toFixed(1)} s; wrote ${files.join(', ')}`);
  return run;
}
