/**
 * `bench compare`: every index configuration (by default Flat and IVF-Flat over an nprobe sweep;
 * with --index, the factory strings given, IVF ones over the sweep, ,RFlat ones over kFactor,
 * CAGRA ones over itopk) on every backend (webgpu, cpu), and the installed peers (Faiss with the
 * same configurations, HNSW<degree/2> for a CAGRA string; hnswlib-node and usearch HNSW at a few
 * ef), on one data set, measured the same way
 * (bench/measure.ts: everything built first, then the passes of all configurations interleaved)
 * and scored the same way (bench/exact.ts: tie-aware recall by ids against exact float64
 * distances). Writes JSON lines, a Markdown report and SVG plots (compare-report.ts).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { availableParallelism, cpus, totalmem, type as osType } from 'node:os';
import { join } from 'node:path';
import type { Backend, DeviceTuning, Metric } from 'webgpu-knn';
import { FlatIndex, GRAPH_DEFAULT_SEEDS, GraphIndex, InvalidArgumentError, IvfFlatIndex, createBackend, indexFactory } from 'webgpu-knn';
import { type CompareRecord, type CompareRun, plottedRecall, TABLE_HEADER, tableRows, writeCompareReport } from './compare-report.js';
import { type BenchData, PROJECT_ROOT } from './data.js';
import { benchReference, tieAwareRecall } from './exact.js';
import { FACTORY_KMEANS_NITER, FAISS_HNSW_EF_CONSTRUCTION, type IndexString, type WalkSettings, faissString, searchGrid, searchParams } from './index-strings.js';
import { type BatchSearch, type Measured, type MeasureOptions, type Pass, type PassRunner, SETTLE_MS, measureInterleaved, percentile, serializedBytes, timePass } from './measure.js';
import { type HnswSettings, type PeerBuild, type PeerLookup, type PeerName, type PeerStatus, buildHnswlib, buildUsearch, detectPeers, startFaiss } from './peers.js';
import { summarize, table } from './stats.js';

export interface CompareOptions extends Omit<MeasureOptions, 'batch'> {
  data: BenchData;
  /**
   * Queries a timed search call: each configuration is timed at each of these, all interleaved in
   * one run (with several, each row's series names its batch).
   */
  batches: number[];
  /** Our backends' tuning (createBackend's), {} for each device's own. */
  tuning: DeviceTuning;
  metric: Metric;
  k: number;
  nlist: number;
  nprobes: number[];
  niter: number;
  /**
   * Factory strings to run, ours (indexFactory) and Faiss's (index_factory), instead of the
   * default Flat and IVF<nlist>,Flat (empty: the default). IVF ones run each of `nprobes` up to
   * their nlist; ,RFlat ones each of `kFactors`; CAGRA ones each of `itopks` (Faiss: HNSW<degree/2>
   * at each of `hnsw.efSearch`).
   */
  indexes: IndexString[];
  kFactors: number[];
  itopks: number[];
  /** CAGRA strings: searchWidth, seeds and entryRows for every itopk (absent: the defaults). */
  walk: WalkSettings;
  seed: number;
  hnsw: HnswSettings;
  backends: ('webgpu' | 'cpu')[];
  /** 'auto': every peer found; 'none'; or a list, each of which must be installed. */
  peers: 'auto' | 'none' | PeerName[];
  lookup: PeerLookup;
  outDir: string;
  /** The command line, for the report. */
  command: string;
  log: (line: string) => void;
}

export function machineDescription(): string {
  const c = cpus();
  return `${c.length} x ${c[0]?.model.trim() ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, ${osType()}`;
}

export function projectVersion(): string {
  return (JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

export async function runCompare(o: CompareOptions): Promise<CompareRun> {
  const { data, k, metric } = o;
  if (k > data.n) throw new InvalidArgumentError(`--k must be at most n = ${data.n} (the base vectors); got ${k}`);
  if (!o.indexes.length && o.nlist > data.n) throw new InvalidArgumentError(`--nlist must be at most n = ${data.n} (the base vectors); got ${o.nlist}`);
  const nprobes = o.nprobes.filter((p) => p <= o.nlist);

  // Which peers run: all found ('auto'), none, or the named ones (each must be found). Detection
  // runs in every case, so the report says what is installed even when it was not asked for.
  const peers: PeerStatus[] = detectPeers(o.lookup);
  const asked = o.peers;
  if (Array.isArray(asked)) {
    const missing = peers.filter((p) => asked.includes(p.name) && !p.available);
    if (missing.length) throw new Error(`--peers asks for ${missing.map((p) => `${p.name}, which is ${p.detail}`).join('; ')}`);
  }
  const runs = (name: PeerName): boolean =>
    peers.some((p) => p.name === name && p.available) && (asked === 'auto' || (Array.isArray(asked) && asked.includes(name)));
  for (const p of peers) o.log(`peer ${p.name}: ${p.available ? `${p.version} (${runs(p.name) ? 'runs' : 'not asked for'})` : p.detail}`);

  if (data.selfRows) throw new InvalidArgumentError(`bench compare takes queries apart from the base; ${data.name} is self-queries (bench quantize runs it)`);
  const { scores: reference, k: kRef, name: referenceName } = benchReference(data, k, metric, o.log);

  const records: CompareRecord[] = [];
  let adapter: string | null = null;
  const version = projectVersion();
  type RecordBase = Pick<CompareRecord, 'engine' | 'version' | 'backend' | 'device' | 'threads' | 'index' | 'param' | 'series' | 'buildSeconds' | 'indexBytes'>;
  const add = (base: RecordBase, batch: number, m: Measured): void => {
    const rec = (r: number): number | null => (r <= k ? tieAwareRecall(r, m.labels, k, reference, kRef, data.xb, data.xq, data.d, metric) : null);
    const record: CompareRecord = {
      bench: 'compare',
      data: data.name,
      n: data.n,
      d: data.d,
      nq: data.nq,
      k,
      metric,
      ...base,
      series: o.batches.length > 1 ? `${base.series}, batch ${batch}` : base.series,
      bytesPerVector: base.indexBytes / data.n,
      batch,
      batches: m.batchMs.length,
      qps: (data.nq * m.passSeconds.length) / m.passSeconds.reduce((a, b) => a + b, 0),
      spread: summarize(m.passSeconds).spread,
      latencyMs: { p50: percentile(m.batchMs, 50), p95: percentile(m.batchMs, 95), p99: percentile(m.batchMs, 99) },
      recall1: rec(1)!,
      recall10: rec(10),
      recall100: rec(100),
    };
    records.push(record);
    console.log(JSON.stringify(record));
    o.log(`${record.series} ${record.param}: ${record.qps.toFixed(1)} queries/s, recall@${k >= 10 ? 10 : 1} ${plottedRecall(record).toFixed(3)}`);
  };
  // A configuration that cannot run here (an IVF too big for one GPU binding, a peer that fails) is
  // reported as not measured, and the run goes on: what was measured is kept.
  const notMeasured: string[] = [];
  const skip = (what: string, err: unknown): void => {
    const why = (err as Error).message.split('\n')[0];
    notMeasured.push(`${what}: ${why}`);
    o.log(`${what}: not measured: ${why}`);
  };
  const guarded = async (what: string, step: () => Promise<void>): Promise<void> => {
    try {
      await step();
    } catch (err) {
      skip(what, err);
    }
  };
  const peerVersion = (name: PeerName): string => peers.find((p) => p.name === name)?.version ?? '?';
  const failed = (name: PeerName, err: unknown): void => {
    peers.find((p) => p.name === name)!.error = (err as Error).message.split('\n')[0];
    skip(name, err);
  };

  // Everything is built first and stays loaded; then every configuration is timed at each batch
  // size, passes interleaved (bench/measure.ts), and recorded in the order built.
  const entries: { what: string; peer: PeerName | null; base: RecordBase; batch: number; pass: PassRunner }[] = [];
  const timed = (what: string, peer: PeerName | null, base: RecordBase, pass: (warm: boolean, batch: number) => Promise<Pass>): void => {
    for (const batch of o.batches) {
      entries.push({ what: o.batches.length > 1 ? `${what} batch=${batch}` : what, peer, base, batch, pass: (warm) => pass(warm, batch) });
    }
  };
  const ours = (what: string, base: RecordBase, search: BatchSearch): void =>
    timed(what, null, base, (warm, batch) => timePass(search, data.xq, data.nq, data.d, k, batch, warm));
  const cleanups: (() => unknown)[] = [];
  try {
    for (const name of o.backends) {
      let be: Backend;
      try {
        be = await createBackend({ backend: name, tuning: o.tuning });
      } catch (err) {
        skip(`webgpu-knn ${name}`, err);
        continue;
      }
      cleanups.push(() => be.dispose());
      if (name === 'webgpu') adapter = be.description;
      const who = { engine: 'webgpu-knn', version, backend: name, device: name === 'webgpu' ? be.description : 'CPU', threads: name === 'webgpu' ? null : 1 };

      // --index: each factory string through indexFactory, trained on the base, one build searched
      // with each of its configurations.
      for (const s of o.indexes) {
        await guarded(`webgpu-knn ${name} ${s.description}`, async () => {
          const grid = searchGrid(s, o.nprobes, o.kFactors, o.itopks, o.walk);
          if (!grid.length) throw new InvalidArgumentError(`no --nprobe value is at most its nlist = ${s.nlist}`);
          const t = performance.now();
          const index = indexFactory(be, data.d, s.description, metric);
          cleanups.push(() => index.dispose());
          await index.train(data.xb, { onProgress: (p) => o.log(`${name}: ${s.description} k-means iteration ${p.iteration}/${p.niter}, ${p.seconds.toFixed(1)} s`) });
          await index.add(data.xb);
          // A graph's build (else the first search's): part of the build time, each phase's end logged.
          if (index instanceof GraphIndex) {
            let t0 = performance.now();
            await index.buildGraph({
              onProgress: (p) => {
                if (p.done === 0) t0 = performance.now();
                if (p.done === p.total) o.log(`${name}: ${s.description} graph ${p.phase} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
              },
            });
          }
          const build = (performance.now() - t) / 1000;
          o.log(`${name}: ${s.description} trained and added in ${build.toFixed(2)} s`);
          const bytes = await serializedBytes((p) => index.save(p));
          for (const c of grid) {
            const params = searchParams(c);
            ours(`webgpu-knn ${name} ${s.description} ${c.param}`, { ...who, index: s.description, param: c.param, series: `webgpu-knn ${name} ${s.description}`, buildSeconds: build, indexBytes: bytes },
              async (xq) => (await index.search(xq, k, params)).labels);
          }
        });
      }
      if (o.indexes.length) continue; // the default run's Flat and IVF below run only without --index

      await guarded(`webgpu-knn ${name} Flat`, async () => {
        const t = performance.now();
        const flat = new FlatIndex(be, { dim: data.d, metric });
        cleanups.push(() => flat.dispose());
        await flat.add(data.xb);
        const build = (performance.now() - t) / 1000;
        o.log(`${name}: Flat built in ${build.toFixed(2)} s`);
        const bytes = await serializedBytes((p) => flat.save(p));
        ours(`webgpu-knn ${name} Flat`, { ...who, index: 'Flat', param: '-', series: `webgpu-knn ${name} Flat`, buildSeconds: build, indexBytes: bytes },
          async (xq) => (await flat.search(xq, k)).labels);
      });

      if (nprobes.length) {
        await guarded(`webgpu-knn ${name} IVF${o.nlist},Flat`, async () => {
          const t = performance.now();
          const ivf = new IvfFlatIndex(be, {
            dim: data.d,
            nlist: o.nlist,
            metric,
            niter: o.niter,
            seed: o.seed,
            onTrainProgress: (p) => o.log(`${name}: k-means iteration ${p.iteration}/${p.niter}, ${p.seconds.toFixed(1)} s`),
          });
          cleanups.push(() => ivf.dispose());
          await ivf.train(data.xb);
          await ivf.add(data.xb);
          const build = (performance.now() - t) / 1000;
          o.log(`${name}: IVF${o.nlist},Flat trained and added in ${build.toFixed(2)} s`);
          const bytes = await serializedBytes((p) => ivf.save(p));
          for (const nprobe of nprobes) {
            ours(`webgpu-knn ${name} IVF${o.nlist},Flat nprobe=${nprobe}`,
              { ...who, index: `IVF${o.nlist},Flat`, param: `nprobe=${nprobe}`, series: `webgpu-knn ${name} IVF`, buildSeconds: build, indexBytes: bytes },
              async (xq) => (await ivf.search(xq, k, { nprobe })).labels);
          }
        });
      }
    }

    if (runs('faiss')) {
      try {
        const factory = o.indexes.length
          ? o.indexes.map((s) => ({ ...faissString(s, o.nprobes, o.kFactors, o.hnsw.efSearch, o.hnsw.faissM ?? null), niter: FACTORY_KMEANS_NITER, seed: o.seed }))
            .filter((f, i, all) => f.configs.length && all.findIndex((g) => g.description === f.description) === i) // CAGRA32 and CAGRA33: one HNSW16
          : null;
        o.log(factory ? `faiss: ${factory.map((f) => f.description).join(' ')} in Python` : 'faiss: Flat and IVF in Python');
        const session = await startFaiss(peers.find((p) => p.name === 'faiss')!.python!, data.xb, data.xq, data.n, data.nq, data.d, {
          metric, k, batch: o.batches[0], // the default only: each pass asks for its own batch size
          ivf: !factory && nprobes.length ? { nlist: o.nlist, niter: o.niter, seed: o.seed, nprobes } : null,
          factory,
        }, o.log, (index, why) => skip(`faiss ${index}`, new Error(why)));
        cleanups.push(() => session.close());
        for (const c of session.configs) {
          timed(`faiss ${c.index} ${c.param}`, 'faiss', {
            engine: 'faiss', version: peerVersion('faiss'), backend: 'cpu', device: 'CPU', threads: c.threads, index: c.index, param: c.param,
            series: factory ? `faiss ${c.index}` : `faiss ${c.index === 'Flat' ? 'Flat' : 'IVF'}`, buildSeconds: c.buildSeconds, indexBytes: c.indexBytes,
          }, c.pass);
        }
      } catch (err) {
        failed('faiss', err);
      }
    }
    const hnswPeers: [PeerName, () => Promise<PeerBuild>][] = [
      ['hnswlib-node', () => buildHnswlib(o.lookup, data.xb, data.n, data.d, metric, k, o.hnsw, o.log)],
      ['usearch', () => buildUsearch(o.lookup, data.xb, data.n, data.d, metric, k, o.hnsw)],
    ];
    for (const [name, build] of hnswPeers) {
      if (!runs(name)) continue;
      o.log(`${name}: building HNSW (M = ${o.hnsw.m}, efConstruction = ${o.hnsw.efConstruction})`);
      try {
        const b = await build();
        o.log(`${name}: built in ${b.buildSeconds.toFixed(2)} s`);
        for (const c of b.configs) {
          timed(`${name} ${c.param}`, name, {
            engine: name, version: peerVersion(name), backend: 'cpu', device: 'CPU', threads: b.threads, index: b.index, param: c.param,
            series: `${name} HNSW`, buildSeconds: b.buildSeconds, indexBytes: b.indexBytes,
          }, (warm, batch) => timePass(c.search, data.xq, data.nq, data.d, k, batch, warm));
        }
      } catch (err) {
        failed(name, err);
      }
    }

    o.log(`timing ${entries.length} configurations, ${o.warmup + o.repeats} passes each, interleaved`);
    const t0 = performance.now();
    const measured = await measureInterleaved(entries.map((e) => e.pass), {
      ...o,
      onError: (i, err) => o.log(`${entries[i].what}: failed: ${err.message.split('\n')[0]}`),
      onRound: (round, rounds) => o.log(`timing: round ${round}/${rounds} done, ${((performance.now() - t0) / 1000).toFixed(1)} s`),
    });
    // A configuration whose pass failed is not measured; a peer with such a configuration is
    // reported failed, with the first error (its other rows are kept).
    entries.forEach((e, i) => {
      const m = measured[i];
      if (!(m instanceof Error)) return add(e.base, e.batch, m);
      skip(e.what, m);
      const peer = peers.find((p) => p.name === e.peer);
      if (peer) peer.error ??= m.message.split('\n')[0];
    });
  } finally {
    // Every cleanup runs; one that fails is logged and does not hide an error already thrown.
    for (const done of cleanups.reverse()) {
      try {
        await done();
      } catch (err) {
        o.log(`cleanup: ${(err as Error).message.split('\n')[0]}`);
      }
    }
  }

  const run: CompareRun = {
    meta: {
      title: 'webgpu-knn compare',
      data: data.name,
      n: data.n,
      d: data.d,
      nq: data.nq,
      k,
      metric,
      reference: referenceName,
      machine: machineDescription(),
      adapter,
      node: process.version,
      date: new Date().toISOString(),
      settings: [
        `Timing: ${o.warmup} warm-up pass(es), then ${o.repeats} timed pass(es) over the queries in batches of ${o.batches.join(' and of ')}: ` +
          `${o.batches.map((b) => Math.ceil(data.nq / b) * o.repeats).join(' and ')} timed batches per configuration (nearest-rank percentiles: with fewer than 100 batches p99 is the slowest); ` +
          `every index built first, then the passes interleaved: each round runs one pass of every configuration, starting one configuration later than the round before, each pass ${SETTLE_MS} ms after the last and beginning with one untimed batch`,
        ...(o.indexes.length
          ? [
            `Indexes (--index): ${o.indexes.map((s) => s.description).join('; ')}; each trained on the base`,
            `IVF strings: nprobe ${o.nprobes.join(', ')} (values above a string's nlist dropped); k-means ${FACTORY_KMEANS_NITER} iterations ` +
              `(webgpu-knn: its factory's default, seed 1234; Faiss: seed ${o.seed})`,
            ...(o.indexes.some((s) => s.refine) ? [`,RFlat strings: kFactor ${o.kFactors.join(', ')} (k * kFactor candidates re-ranked exactly)`] : []),
            ...(o.indexes.some((s) => s.degree !== null)
              ? [`CAGRA strings: itopk ${o.itopks.join(', ')} (searchWidth ${o.walk.searchWidth ?? 1}, seeds ${o.walk.seeds ?? GRAPH_DEFAULT_SEEDS} of ${o.walk.entryRows ?? 'entryRowsFor(n)'} entry rows, iterations automatic; the graph built before the passes (buildGraph), in the build time); ` +
                `Faiss runs HNSW${o.hnsw.faissM ?? '<degree/2>'} instead (IndexHNSWFlat, efConstruction ${FAISS_HNSW_EF_CONSTRUCTION}) at ef ${o.hnsw.efSearch.join(', ')}`]
              : []),
          ]
          : [`IVF: nlist = ${o.nlist}, k-means ${o.niter} iterations (seed ${o.seed}), nprobe ${nprobes.join(', ') || 'none (nlist too small)'}`]),
        `HNSW: M = ${o.hnsw.m}, efConstruction = ${o.hnsw.efConstruction}, ef ${o.hnsw.efSearch.join(', ')}`,
        ...(Object.keys(o.tuning).length ? [`webgpu-knn tuning (--tuning): ${Object.entries(o.tuning).map(([key, value]) => `${key}=${String(value)}`).join(', ')}`] : []),
        `Threads: webgpu-knn's CPU backend 1; Faiss its OpenMP default; hnswlib-node 1 (synchronous calls); usearch all cores (${availableParallelism()})`,
      ],
      command: o.command,
    },
    peers,
    records,
    notMeasured,
  };
  if (!records.length) throw new Error(`nothing was measured: ${notMeasured.join('; ')}`);
  mkdirSync(o.outDir, { recursive: true });
  const files = writeCompareReport(o.outDir, run);
  console.log(`\ncompare: ${data.name}, n=${data.n} d=${data.d} nq=${data.nq} k=${k} ${metric}; recall against ${referenceName}\n${table(TABLE_HEADER, tableRows(records))}`);
  for (const line of notMeasured) console.log(`not measured: ${line}`);
  console.log(`\nwrote ${files.join(', ')}`);
  return run;
}
