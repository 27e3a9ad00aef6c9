/**
 * The demo (the README's run command): the 778 real text embeddings (all-MiniLM-L6-v2, 384-d) of
 * SAP's Fiori documentation, from npm @sap-ux/fiori-docs-embeddings: its near-duplicate documents
 * at cosine >= 0.95 with their titles, the nearest documents to a few of them, and the WebGPU and
 * CPU timings side by side. Without that package (it is a devDependency, so an installed
 * webgpu-knn lacks it) the demo says so in one line and runs on generated vectors of the same shape
 * with planted near-duplicates (generatedCorpus).
 */
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Backend } from '../backend/backend.js';
import { createBackend } from '../backend/create-backend.js';
import { FlatIndex } from '../indexes/flat/flat-index.js';
import { rng } from '../common/random.js';
import { FileError } from '../errors.js';
import { dedup } from '../jobs/dedup.js';

const PACKAGE = '@sap-ux/fiori-docs-embeddings';

export interface Corpus {
  x: Float32Array;
  n: number;
  d: number;
  titles: string[];
}

/** The folder of the package's embeddings, or null when the package is not installed. */
function fioriFolder(): string | null {
  try {
    return `${dirname(fileURLToPath(import.meta.resolve(PACKAGE)))}/data/embeddings/`;
  } catch {
    return null;
  }
}

/** The Fiori corpus; a FileError saying what to install when its package is missing. */
export function loadFioriCorpus(): Corpus {
  const dir = fioriFolder();
  if (dir === null) throw new FileError(`the Fiori corpus is the npm package ${PACKAGE}, which is not installed: npm install ${PACKAGE}`);
  const meta = JSON.parse(readFileSync(`${dir}metadata.json`, 'utf8')) as { dimensions: number; totalVectors: number };
  const buf = readFileSync(`${dir}embeddings.bin`);
  const x = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
  const d = meta.dimensions;
  if (x.length !== meta.totalVectors * d) throw new Error(`${dir}embeddings.bin holds ${x.length} floats; metadata says ${meta.totalVectors} x ${d}`);
  const titles = readFileSync(`${dir}records.jsonl`, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => {
      const r = JSON.parse(l) as { title?: string; id?: string };
      return r.title || r.id || '?';
    });
  return { x, n: meta.totalVectors, d, titles };
}

/** Every COPY_EVERY-th row of the generated corpus is a noisy copy of the row before it. */
const COPY_EVERY = 20;

/**
 * The demo's stand-in data: n seeded random rows of d values in [-1, 1) (two such rows are far
 * apart: their cosine is about N(0, 1/sqrt(d))), every COPY_EVERY-th (from row 1) replaced by the
 * row before it plus noise of 1% (cosine about 0.9999), so the dedup finds those pairs exactly.
 */
export function generatedCorpus(n = 778, d = 384, seed = 36): Corpus {
  const next = rng(seed);
  const x = new Float32Array(n * d);
  const titles: string[] = [];
  for (let i = 0; i < n; i++) {
    const copy = i % COPY_EVERY === 1;
    for (let c = 0; c < d; c++) x[i * d + c] = copy ? x[(i - 1) * d + c] + 0.01 * (2 * next() - 1) : 2 * next() - 1;
    titles.push(copy ? `generated row ${i} (a noisy copy of row ${i - 1})` : `generated row ${i}`);
  }
  return { x, n, d, titles };
}

const short = (s: string, w = 60): string => (s.length > w ? `${s.slice(0, w - 1)}…` : s).padEnd(w);

/** Runs the demo, printing as it goes; returns what it found, for --json (src/cli/report.ts). */
export async function runDemo(threshold = 0.95, show = 3, k = 4): Promise<Record<string, unknown>> {
  const real = fioriFolder() !== null;
  const { x, n, d, titles } = real ? loadFioriCorpus() : generatedCorpus();
  if (real) console.log(`${n} documents of SAP Fiori documentation, embedded by all-MiniLM-L6-v2 (${d}-d), from npm ${PACKAGE}\n`);
  else console.log(`npm ${PACKAGE} (the demo's real text embeddings) is not installed, so this runs on ${n} generated ${d}-d vectors with a noisy copy every ${COPY_EVERY} rows instead (npm install ${PACKAGE} for the real ones)\n`);
  const backends: Backend[] = [];
  const auto = await createBackend({ backend: 'auto' });
  backends.push(auto);
  if (auto.kind !== 'cpu') backends.push(await createBackend({ backend: 'cpu' }));
  const timings: string[][] = [];
  const summary: Record<string, unknown> = { corpus: real ? PACKAGE : 'generated', rows: n, dim: d, threshold, k };
  const measured: { backend: string; dedupMs: number; knnMs: number }[] = [];
  try {
    let pairsShown = false;
    for (const backend of backends) {
      // Warm up once (pipelines compile on first use), then time.
      await dedup(backend, x.subarray(0, 64 * d), d, { metric: 'cosine', threshold });
      const t0 = performance.now();
      const r = await dedup(backend, x, d, { metric: 'cosine', threshold });
      const dedupMs = performance.now() - t0;
      const index = new FlatIndex(backend, { dim: d, metric: 'cosine' });
      const t1 = performance.now();
      await index.add(x);
      const all = await index.search(x, k + 1);
      const knnMs = performance.now() - t1;
      if (!pairsShown) {
        pairsShown = true;
        Object.assign(summary, { pairs: r.i.length, clusters: r.clusters.length, drop: r.drop.length });
        console.log(`Near-duplicate pairs at cosine >= ${threshold}: ${r.i.length}, in ${r.clusters.length} groups; keeping the lowest id of each group drops ${r.drop.length} documents.`);
        for (let p = 0; p < r.i.length; p++) {
          console.log(`  ${r.score[p].toFixed(3)}  #${String(r.i[p]).padEnd(4)} ${short(titles[r.i[p]], 48)} ~ #${String(r.j[p]).padEnd(4)} ${short(titles[r.j[p]], 48).trimEnd()}`);
        }
        const picks = [...new Set(Array.from(r.i))].slice(0, show);
        for (const q of picks) {
          console.log(`\nNearest documents to #${q} "${titles[q]}":`);
          for (let j = 0, shown = 0; j < k + 1 && shown < k; j++) {
            const id = all.labels[q * (k + 1) + j];
            if (id === q || id < 0) continue;
            console.log(`  ${all.distances[q * (k + 1) + j].toFixed(3)}  #${String(id).padEnd(4)} ${titles[id]}`);
            shown++;
          }
        }
      }
      measured.push({ backend: backend.description, dedupMs: Number(dedupMs.toFixed(1)), knnMs: Number(knnMs.toFixed(1)) });
      timings.push([backend.description.length > 70 ? `${backend.description.slice(0, 69)}…` : backend.description, dedupMs.toFixed(1), knnMs.toFixed(1), String(r.i.length)]);
      await index.dispose();
    }
  } finally {
    for (const b of backends) b.dispose();
  }
  console.log(`\nTimings (milliseconds; after one warm-up run):`);
  const header = ['backend', `dedup (all ${(n * (n - 1)) / 2} pairs)`, `kNN of all ${n} (k=${k})`, 'pairs'];
  const widths = header.map((h, i) => Math.max(h.length, ...timings.map((t) => t[i].length)));
  for (const row of [header, ...timings]) console.log(('  ' + row.map((c, i) => c.padEnd(widths[i])).join('  ')).trimEnd());
  if (backends.length === 1) console.log('  (no WebGPU adapter here: CPU only; see webgpu-knn --help for how to get a software one)');
  return { ...summary, timings: measured };
}
