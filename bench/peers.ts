/**
 * Peers for `bench compare`: Faiss (Debian's python3-faiss, run in a Python child process),
 * hnswlib-node and usearch (npm, loaded in this process). None is a dependency of the project:
 * each is detected, and a peer that is not installed is reported as such, never an error unless
 * it was asked for by name. `scripts/install-peers.sh` installs all three (the npm ones into
 * peers/node_modules, outside the project's lockfile).
 *
 * Where to look is a `PeerLookup`, so a test can point it at an empty place:
 *   WEBGPU_KNN_PYTHON     the Python to try (default: /usr/bin/python3, then python3 on PATH)
 *   WEBGPU_KNN_PEER_PATH  folders to resolve npm peers from, ':'-separated (default: peers/ in
 *                         the project, which also finds the project's own node_modules)
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Metric } from 'webgpu-knn';
import { normalizeRows } from 'webgpu-knn';
import { PROJECT_ROOT } from './data.js';
import type { FaissSearchConfig } from './index-strings.js';
import { type BatchSearch, inScratchDir, type Pass, serializedBytes } from './measure.js';

export const PEERS = ['faiss', 'hnswlib-node', 'usearch'] as const;
export type PeerName = (typeof PEERS)[number];

export interface PeerLookup {
  pythons: string[];
  modulePaths: string[];
}

export interface PeerStatus {
  name: PeerName;
  available: boolean;
  version: string | null;
  /** Where it was found, or why it is not available. */
  detail: string;
  /** Set when it was found but failed during the run. */
  error?: string;
  /** Faiss: the Python that imports it. */
  python?: string;
}

export function defaultPeerLookup(env: NodeJS.ProcessEnv = process.env): PeerLookup {
  return {
    pythons: env.WEBGPU_KNN_PYTHON ? [env.WEBGPU_KNN_PYTHON] : ['/usr/bin/python3', 'python3'],
    modulePaths: env.WEBGPU_KNN_PEER_PATH ? env.WEBGPU_KNN_PEER_PATH.split(':').filter(Boolean) : [join(PROJECT_ROOT, 'peers')],
  };
}

const FAISS_SCRIPT = join(PROJECT_ROOT, 'scripts', 'faiss-peer.py');

/**
 * Imports faiss and prints its version, then the BLAS libraries the process has mapped: Faiss's
 * flat search and k-means run on BLAS, and Debian's default (reference) libblas3 is several times
 * slower than OpenBLAS, so the report names the one in use.
 */
const FAISS_PROBE = [
  'import faiss, numpy',
  'print(faiss.__version__)',
  "print(' '.join(sorted({l.split()[-1] for l in open('/proc/self/maps') if 'blas' in l.lower() and '/' in l})) or 'unknown')",
].join('\n');

function detectFaiss(lookup: PeerLookup): PeerStatus {
  const tried: string[] = [];
  for (const python of lookup.pythons) {
    const r = spawnSync(python, ['-c', FAISS_PROBE], { encoding: 'utf8', timeout: 60_000 });
    if (r.status === 0) {
      const [version, blas] = r.stdout.trim().split('\n');
      return { name: 'faiss', available: true, version, detail: `${python}; BLAS: ${blas}`, python };
    }
    const why = r.error ? (r.error as NodeJS.ErrnoException).code ?? r.error.message : (r.stderr.trim().split('\n').pop() ?? `exit ${r.status}`);
    tried.push(`${python}: ${why}`);
  }
  return { name: 'faiss', available: false, version: null, detail: `not installed (apt-get install python3-faiss); tried ${tried.join('; ')}` };
}

/** The package.json above a resolved entry file: its version. */
function packageVersion(entry: string, name: string): string | null {
  for (let dir = dirname(entry); dirname(dir) !== dir; dir = dirname(dir)) {
    const p = join(dir, 'package.json');
    if (existsSync(p)) {
      const pkg = JSON.parse(readFileSync(p, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === name) return pkg.version ?? null;
    }
  }
  return null;
}

const requireHere = createRequire(join(PROJECT_ROOT, 'package.json'));

/** Resolves and loads an npm peer; null module with the reason when it is missing or broken. */
function loadNpmPeer(name: 'hnswlib-node' | 'usearch', lookup: PeerLookup): { status: PeerStatus; module: unknown } {
  let entry: string;
  try {
    entry = requireHere.resolve(name, { paths: lookup.modulePaths });
  } catch {
    return {
      status: { name, available: false, version: null, detail: `not installed (bash scripts/install-peers.sh); looked in ${lookup.modulePaths.join(', ')}` },
      module: null,
    };
  }
  const version = packageVersion(entry, name);
  try {
    const module = requireHere(entry) as unknown;
    return { status: { name, available: true, version, detail: dirname(entry) }, module };
  } catch (err) {
    return { status: { name, available: false, version, detail: `found at ${entry} but failed to load: ${(err as Error).message.split('\n')[0]}` }, module: null };
  }
}

export function detectPeers(lookup: PeerLookup): PeerStatus[] {
  return [detectFaiss(lookup), loadNpmPeer('hnswlib-node', lookup).status, loadNpmPeer('usearch', lookup).status];
}

/** Graph settings shared by both HNSW peers: M (connectivity) and efConstruction (expansion_add). */
export interface HnswSettings {
  m: number;
  efConstruction: number;
  efSearch: number[];
  seed: number;
  /** Faiss's HNSW beside a CAGRA string: its M (null: the degree / 2). */
  faissM?: number | null;
}

/** One searchable configuration of a peer. */
export interface PeerConfig {
  param: string;
  search: BatchSearch;
}

export interface PeerBuild {
  index: string;
  threads: number;
  buildSeconds: number;
  indexBytes: number;
  configs: PeerConfig[];
}

interface HnswlibModule {
  HierarchicalNSW: new (space: string, dim: number) => {
    initIndex(o: { maxElements: number; m: number; efConstruction: number; randomSeed: number }): void;
    addPoint(point: number[], label: number): void;
    setEf(ef: number): void;
    searchKnn(query: number[], k: number): { neighbors: number[] };
    writeIndexSync(path: string): void;
  };
}

/** hnswlib-node: one thread (its calls are synchronous, one point or query at a time). */
export async function buildHnswlib(
  lookup: PeerLookup,
  xb: Float32Array,
  n: number,
  d: number,
  metric: Metric,
  k: number,
  s: HnswSettings,
  log: (l: string) => void,
): Promise<PeerBuild> {
  const { module } = loadNpmPeer('hnswlib-node', lookup);
  if (!module) throw new Error('hnswlib-node is not available');
  const { HierarchicalNSW } = module as HnswlibModule;
  const index = new HierarchicalNSW(metric === 'l2' ? 'l2' : metric, d);
  const t0 = performance.now();
  index.initIndex({ maxElements: n, m: s.m, efConstruction: s.efConstruction, randomSeed: s.seed });
  for (let i = 0; i < n; i++) {
    index.addPoint(Array.from(xb.subarray(i * d, (i + 1) * d)), i);
    if ((i + 1) % 20_000 === 0) log(`hnswlib-node: added ${i + 1}/${n}, ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  const buildSeconds = (performance.now() - t0) / 1000;
  const configs = s.efSearch.map((ef) => ({
    param: `ef=${ef}`,
    search: (xq: Float32Array, nb: number): Int32Array => {
      index.setEf(ef);
      const out = new Int32Array(nb * k).fill(-1);
      for (let q = 0; q < nb; q++) {
        const { neighbors } = index.searchKnn(Array.from(xq.subarray(q * d, (q + 1) * d)), Math.min(k, n));
        out.set(neighbors, q * k);
      }
      return out;
    },
  }));
  return {
    index: `HNSW${s.m}`,
    threads: 1,
    buildSeconds,
    indexBytes: await serializedBytes((p) => index.writeIndexSync(p)),
    configs,
  };
}

interface UsearchIndex {
  add(keys: BigUint64Array, vectors: Float32Array, threads: number): void;
  search(vectors: Float32Array, k: number, threads: number): { keys: BigUint64Array; counts?: BigUint64Array };
  save(path: string): void;
  load(path: string): void;
}
interface UsearchModule {
  Index: new (config: Record<string, unknown>) => UsearchIndex;
}

/**
 * usearch: every core (threads = 0 lets it choose) for add and search. Its JS binding fixes
 * expansion_search (ef) when an index is made, so the built graph is saved once and loaded (read
 * into memory) into one index per ef.
 */
export async function buildUsearch(lookup: PeerLookup, xb: Float32Array, n: number, d: number, metric: Metric, k: number, s: HnswSettings): Promise<PeerBuild> {
  const { module } = loadNpmPeer('usearch', lookup);
  if (!module) throw new Error('usearch is not available');
  const { Index } = module as UsearchModule;
  const config = (ef: number): Record<string, unknown> => ({
    dimensions: d,
    metric: metric === 'l2' ? 'l2sq' : metric === 'ip' ? 'ip' : 'cos',
    quantization: 'f32',
    connectivity: s.m,
    expansion_add: s.efConstruction,
    expansion_search: ef,
    multi: false,
  });
  const t0 = performance.now();
  const built = new Index(config(s.efSearch[0]));
  built.add(BigUint64Array.from({ length: n }, (_, i) => BigInt(i)), xb, 0);
  const buildSeconds = (performance.now() - t0) / 1000;
  const searchAt = (ef: number, path: string): PeerConfig => {
    const index = new Index(config(ef));
    index.load(path);
    return {
      param: `ef=${ef}`,
      search: (xq: Float32Array, nb: number): Int32Array => {
        const kk = Math.min(k, n);
        const m = index.search(xq, kk, 0);
        const out = new Int32Array(nb * k).fill(-1);
        // One query gives Matches (no counts); a batch gives BatchMatches, kk slots a query.
        for (let q = 0; q < nb; q++) {
          const count = m.counts ? Number(m.counts[q]) : m.keys.length;
          for (let j = 0; j < count; j++) out[q * k + j] = Number(m.keys[q * kk + j]);
        }
        return out;
      },
    };
  };
  const file = (dir: string): string => join(dir, 'index.usearch');
  const [indexBytes, configs] = await inScratchDir((dir) => {
    built.save(file(dir));
    return [statSync(file(dir)).size, s.efSearch.map((ef) => searchAt(ef, file(dir)))] as const;
  });
  return { index: `HNSW${s.m}`, threads: availableParallelism(), buildSeconds, indexBytes, configs };
}

/** A configuration Faiss built; `pass` has scripts/faiss-peer.py run one pass of it (see bench/measure.ts): a search error there fails that pass alone. */
export interface FaissConfig {
  index: string;
  param: string;
  threads: number;
  buildSeconds: number;
  indexBytes: number;
  /** One pass over the queries in batches of `batch` (absent: the job's). */
  pass: (warm: boolean, batch?: number) => Promise<Pass>;
}

/** The Faiss process, its indexes built, running passes when asked. */
export interface FaissSession {
  configs: FaissConfig[];
  /** Ends the process (it exits when its stdin closes; killed if it has not in 10 s) and removes its files. */
  close(): Promise<void>;
}

/** One factory string for faiss.index_factory, trained on the base and searched with each config. */
export interface FaissFactoryJob {
  description: string;
  /** k-means iterations and seed of an IVF string's coarse quantiser. */
  niter: number;
  seed: number;
  /** An HNSW string's efConstruction (absent: Faiss's default). */
  efConstruction?: number;
  /** Each search: nprobe and kFactor, or an HNSW's efSearch. */
  configs: FaissSearchConfig[];
}

export interface FaissJob {
  metric: Metric;
  k: number;
  /** Queries a search call (bench/measure.ts), unless a pass asks for another. */
  batch: number;
  /** IVF lists and the nprobe sweep; null: Flat only. Ignored when `factory` is given. */
  ivf: { nlist: number; niter: number; seed: number; nprobes: number[] } | null;
  /** Factory strings to run instead of IndexFlat and IndexIVFFlat; null or absent: those two. */
  factory?: FaissFactoryJob[] | null;
}

/**
 * Starts `python` (one that imports faiss: `PeerStatus.python`) on scripts/faiss-peer.py, which
 * builds IndexFlat and IndexIVFFlat, or the job's factory strings, and then runs passes over the
 * queries when asked, so that they interleave with the other engines' (bench/measure.ts). Cosine
 * runs as inner product on rows normalised here. Progress lines from Python go to `log`; a factory
 * string Faiss could not build goes to `failed` (with Faiss's message) and the others are built.
 * Throws, leaving nothing behind (the process killed, its files removed), when the process ends
 * before its indexes are built or a `failed` callback throws.
 */
export async function startFaiss(
  python: string,
  xb: Float32Array,
  xq: Float32Array,
  n: number,
  nq: number,
  d: number,
  job: FaissJob,
  log: (l: string) => void,
  failed: (index: string, why: string) => void = () => {},
): Promise<FaissSession> {
  const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-faiss-'));
  const cosine = job.metric === 'cosine';
  writeFileSync(join(dir, 'base.f32'), cosine ? normalizeRows(xb, d) : xb);
  writeFileSync(join(dir, 'query.f32'), cosine ? normalizeRows(xq, d) : xq);
  writeFileSync(join(dir, 'job.json'), JSON.stringify({ ...job, metric: cosine ? 'ip' : job.metric, n, nq, d, dir }));
  const child = spawn(python, [FAISS_SCRIPT, join(dir, 'job.json')], { stdio: ['pipe', 'pipe', 'pipe'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  let errTail = '';
  let closed = false;
  /** Why the process ended (set when it has). */
  let ended: Error | null = null;
  child.stderr.on('data', (b: Buffer) => {
    for (const line of b.toString().split('\n').filter(Boolean)) {
      errTail = line;
      log(`faiss: ${line}`);
    }
  });
  child.stdin.on('error', () => {}); // a write after the process died: its exit says why
  const exited = new Promise<void>((resolve) => {
    child.on('error', (err) => {
      ended ??= err;
      resolve();
    });
    child.on('close', (code, signal) => {
      const how = signal ? `was killed by ${signal}${signal === 'SIGKILL' ? ' (out of memory?)' : ''}` : `exited with ${code}`;
      ended ??= new Error(`${FAISS_SCRIPT} ${how}: ${errTail}`);
      resolve();
    });
  });
  /** Ends the process: it exits when its stdin closes; `kill` (or CLOSE_GRACE_MS without an exit) kills it. */
  const close = async (kill = false): Promise<void> => {
    closed = true;
    child.stdin.end();
    if (kill) child.kill();
    const timer = setTimeout(() => child.kill('SIGKILL'), CLOSE_GRACE_MS);
    await exited;
    clearTimeout(timer);
    rmSync(dir, { recursive: true, force: true });
  };
  /** The next JSON object the process prints; other lines (a library's own output) are logged and skipped. */
  const message = async (): Promise<Record<string, unknown>> => {
    for (;;) {
      const { value: line, done } = await lines.next();
      if (done) {
        await exited;
        throw ended!;
      }
      if (!line) continue;
      try {
        const m = JSON.parse(line) as unknown;
        if (m !== null && typeof m === 'object' && !Array.isArray(m)) return m as Record<string, unknown>;
      } catch {
        // not JSON: logged below
      }
      log(`faiss (stdout): ${line}`);
    }
  };

  const pass = async (config: number, warm: boolean, batch = job.batch): Promise<Pass> => {
    if (closed) throw new Error('the Faiss process was closed');
    child.stdin.write(`${JSON.stringify({ pass: config, warm, batch })}\n`);
    const r = (await message()) as { pass?: number; error?: string; batchMs: number[]; labels: string };
    if (r.pass !== config) throw new Error(`${FAISS_SCRIPT} answered for pass ${r.pass} when asked for pass ${config}`);
    if (r.error !== undefined) throw new Error(r.error);
    const raw = readFileSync(join(dir, r.labels));
    return { batchMs: r.batchMs, labels: new Int32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4).slice() };
  };
  const configs: FaissConfig[] = [];
  try {
    for (;;) {
      const r = (await message()) as { ready: true } | { index: string; error: string } | (Omit<FaissConfig, 'pass'> & { config: number });
      if ('ready' in r) break;
      if ('error' in r) failed(r.index, r.error);
      else {
        const { config, ...rest } = r;
        configs.push({ ...rest, pass: (warm, batch) => pass(config, warm, batch) });
      }
    }
  } catch (err) {
    await close(true);
    throw err;
  }
  return { configs, close: () => close() };
}

/** How long closing waits for the Faiss process to exit before it kills it. */
const CLOSE_GRACE_MS = 10_000;
