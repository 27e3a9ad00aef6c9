/**
 * CAGRA shards through the CLI (CPU backend, no Redis): `build --type CAGRA16 --shards 3` builds a
 * graph a shard, and `search --index MANIFEST` merges the shards' re-scored results exactly as
 * Flat shards are merged: each query's k best by (distance, id) over what every shard's own
 * search found (each shard file searched alone gives its part), and the recall of the merge
 * against the exact answer holds above a floor. `--itopk` reaches every shard's walk (a short list
 * gives other answers than a long one), and so do the walk's other flags (--search-width,
 * --max-iterations, --seeds, --entry-rows: on one index, the library's search with them).
 * `knn-graph` on graph shards, and on a CAGRA index it builds (`--type CAGRA16 --itopk L`), gives
 * each row the search's answers without the row itself.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeVectors } from '../../src/io/vectors.js';
import { randomFloats } from '../../src/common/random.js';
import { cliIn } from '../helpers/cli.js';
import { createBackend } from '../../src/backend/create-backend.js';
import { loadIndex } from '../../src/indexes/load-index.js';

const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-shards-graph-'));
const { cli, ok } = cliIn(dir, '--backend', 'cpu');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const n = 3000;
const d = 8;
const nq = 100;
const k = 10;
/** Recall@10 of the merged graph shards against Flat (random 8-d floats, itopk 64: measured 1.000). */
const RECALL_FLOOR = 0.95;
const x = randomFloats(n * d, 6);
writeVectors(join(dir, 'x.fvecs'), x, n, d);
writeVectors(join(dir, 'q.fvecs'), randomFloats(nq * d, 7), nq, d);

/** A CSV of one row a query as numbers. */
const csv = (name: string): number[][] => readFileSync(join(dir, name), 'utf8').trim().split('\n').map((l) => l.split(',').map(Number));

describe('CAGRA shards', () => {
  it('search --index MANIFEST: the k best by (distance, id) of the shards searched alone; recall against Flat above the floor', () => {
    ok('build', '--input', 'x.fvecs', '--type', 'CAGRA16', '--shards', '3', '--out', 'g.json');
    const manifest = JSON.parse(readFileSync(join(dir, 'g.json'), 'utf8')) as { type: string; shards: { file: string }[] };
    expect(manifest.type).toBe('CAGRA16');
    // itopk = k, the shortest walk, so that the check below sees it reach the shards.
    ok('search', '--index', 'g.json', '--queries', 'q.fvecs', '--k', `${k}`, '--itopk', `${k}`, '--out', 's.csv', '--distances', 'sd.csv');
    const parts = manifest.shards.map((s, i) => {
      ok('search', '--index', s.file, '--queries', 'q.fvecs', '--k', `${k}`, '--itopk', `${k}`, '--out', `p${i}.csv`, '--distances', `pd${i}.csv`);
      return { ids: csv(`p${i}.csv`), dist: csv(`pd${i}.csv`) };
    });
    const ids = csv('s.csv');
    const dist = csv('sd.csv');
    for (let q = 0; q < nq; q++) {
      const all = parts.flatMap((p) => p.ids[q].map((id, j) => ({ id, dist: p.dist[q][j] }))).filter((e) => e.id >= 0);
      all.sort((a, b) => a.dist - b.dist || a.id - b.id);
      expect(ids[q], `query ${q}: ids`).toEqual(all.slice(0, k).map((e) => e.id));
      expect(dist[q], `query ${q}: distances`).toEqual(all.slice(0, k).map((e) => e.dist));
    }
    ok('search', '--index', 'g.json', '--queries', 'q.fvecs', '--k', `${k}`, '--itopk', '64', '--out', 's64.csv');
    const long = csv('s64.csv');
    expect(long, 'itopk 64 and itopk 10 gave the same answers: --itopk did not reach the shards').not.toEqual(ids);
    ok('build', '--input', 'x.fvecs', '--type', 'Flat', '--out', 'flat.idx');
    ok('search', '--index', 'flat.idx', '--queries', 'q.fvecs', '--k', `${k}`, '--out', 'f.csv');
    const exact = csv('f.csv');
    let hit = 0;
    for (let q = 0; q < nq; q++) hit += long[q].filter((id) => exact[q].includes(id)).length;
    expect(hit / (nq * k)).toBeGreaterThanOrEqual(RECALL_FLOOR);
  });

  it('knn-graph --index MANIFEST on graph shards: every row its k neighbours, never itself; --itopk reaches the shards', () => {
    ok('knn-graph', '--index', 'g.json', '--k', '5', '--out', 'kg.csv');
    ok('knn-graph', '--index', 'g.json', '--k', '5', '--itopk', '6', '--out', 'kg6.csv');
    expect(csv('kg6.csv'), 'itopk 6 and the default 64 gave the same graph').not.toEqual(csv('kg.csv'));
    const rows = csv('kg.csv');
    expect(rows.length).toBe(n);
    rows.forEach((r, i) => {
      expect(r.length, `row ${i}`).toBe(5);
      expect(r.includes(i), `row ${i} lists itself`).toBe(false);
      expect(r.every((v) => v >= 0 && v < n)).toBe(true);
    });
  });

  it('knn-graph --type CAGRA16 --itopk L: each row the search of its own index at that itopk, itself left out; --itopk refused elsewhere', () => {
    const small = 2000;
    writeVectors(join(dir, 'y.fvecs'), x.subarray(0, small * d), small, d);
    // itopk 6, the shortest walk for k = 5 (k + 1 with the row itself), against 64.
    ok('knn-graph', '--input', 'y.fvecs', '--type', 'CAGRA16', '--itopk', '6', '--k', '5', '--out', 'kgc.csv');
    ok('build', '--input', 'y.fvecs', '--type', 'CAGRA16', '--out', 'y.idx');
    ok('search', '--index', 'y.idx', '--queries', 'y.fvecs', '--k', '6', '--itopk', '6', '--out', 'ys.csv');
    const graph = csv('kgc.csv');
    const searched = csv('ys.csv');
    expect(graph.length).toBe(small);
    graph.forEach((row, i) => expect(row, `row ${i}`).toEqual(searched[i].filter((id) => id !== i).slice(0, 5)));
    ok('knn-graph', '--input', 'y.fvecs', '--type', 'CAGRA16', '--itopk', '64', '--k', '5', '--out', 'kgc64.csv');
    expect(csv('kgc64.csv'), 'itopk 64 and 6 gave the same graph: --itopk did not reach the walk').not.toEqual(graph);
    // As search does: a kind's own flag given to another kind is ignored, with a line saying so.
    const flat = cli('knn-graph', '--input', 'y.fvecs', '--type', 'Flat', '--itopk', '12', '--k', '5', '--out', 'flat.csv');
    expect(flat.code, flat.err).toBe(0);
    expect(flat.err).toMatch(/webgpu-knn: --itopk ignored: Flat indexes take no itopk/);
    expect(cli('search', '--index', 'flat.idx', '--queries', 'q.fvecs', '--k', '5', '--itopk', '12', '--nprobe', '3', '--out', 'fi.csv').err)
      .toMatch(/--nprobe ignored: Flat indexes take no nprobe[\s\S]*--itopk ignored: Flat indexes take no itopk/);
    const big = cli('knn-graph', '--input', 'y.fvecs', '--type', 'CAGRA16', '--itopk', '300', '--k', '5', '--out', 'bad.csv');
    expect(big.code).toBe(2);
    expect(big.err).toMatch(/--itopk must be an integer in \[1, 256\]; got 300/);
  });

  it('search and knn-graph take the walk\'s --search-width, --max-iterations, --seeds and --entry-rows: the library\'s search with those parameters, on one index and through shards', async () => {
    const walk = { searchWidth: 2, maxIterations: 6, seeds: 2, entryRows: 300 };
    const flags = ['--search-width', '2', '--max-iterations', '6', '--seeds', '2', '--entry-rows', '300'];
    ok('search', '--index', 'y.idx', '--queries', 'q.fvecs', '--k', '5', '--itopk', '16', ...flags, '--out', 'yw.csv');
    const backend = await createBackend({ backend: 'cpu' });
    try {
      const index = await loadIndex(backend, join(dir, 'y.idx'));
      const q = randomFloats(nq * d, 7);
      const lib = await index.search(q, 5, { itopk: 16, ...walk });
      const rows = csv('yw.csv');
      rows.forEach((row, i) => expect(row, `query ${i}`).toEqual(Array.from(lib.labels.subarray(i * 5, (i + 1) * 5), Number)));
      const plain = await index.search(q, 5, { itopk: 16 });
      expect(Array.from(plain.labels), 'the walk flags changed nothing: the test cannot tell').not.toEqual(Array.from(lib.labels));
    } finally {
      backend.dispose();
    }
    // Through the shards' jobs and knn-graph: a walk cut short (one iteration from one seed) gives
    // other answers than the defaults.
    const short = ['--search-width', '2', '--max-iterations', '1', '--seeds', '1', '--entry-rows', '1'];
    ok('search', '--index', 'g.json', '--queries', 'q.fvecs', '--k', `${k}`, '--itopk', `${k}`, '--out', 'sd0.csv');
    ok('search', '--index', 'g.json', '--queries', 'q.fvecs', '--k', `${k}`, '--itopk', `${k}`, ...short, '--out', 'sd1.csv');
    expect(csv('sd1.csv'), 'the walk flags did not reach the shards').not.toEqual(csv('sd0.csv'));
    ok('knn-graph', '--input', 'y.fvecs', '--type', 'CAGRA16', '--itopk', '16', '--k', '5', ...short, '--out', 'kgw.csv');
    ok('knn-graph', '--input', 'y.fvecs', '--type', 'CAGRA16', '--itopk', '16', '--k', '5', '--out', 'kgw0.csv');
    expect(csv('kgw.csv'), 'the walk flags did not reach knn-graph').not.toEqual(csv('kgw0.csv'));
    // Out of range: the flag, its range and the value; another kind's index: ignored with a line.
    const wide = cli('search', '--index', 'y.idx', '--queries', 'q.fvecs', '--k', '5', '--search-width', '33', '--out', 'bad.csv');
    expect(wide.code).toBe(2);
    expect(wide.err).toMatch(/--search-width must be an integer in \[1, 32\]; got 33/);
    const seeds = cli('search', '--index', 'y.idx', '--queries', 'q.fvecs', '--k', '5', '--seeds', '0', '--out', 'bad.csv');
    expect(seeds.err).toMatch(/--seeds must be an integer in \[1, 256\]; got 0/);
    expect(cli('search', '--index', 'flat.idx', '--queries', 'q.fvecs', '--k', '5', '--entry-rows', '64', '--out', 'fe.csv').err).toMatch(/--entry-rows ignored: Flat indexes take no entry-rows/);
  });
});
