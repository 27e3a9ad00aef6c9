/**
 * CAGRA shards through the CLI (CPU backend, no Redis): `build --type CAGRA16 --shards 3` builds a
 * graph a shard, and `search --index MANIFEST` merges the shards' re-scored results exactly as
 * Flat shards are merged: each query's k best by (distance, id) over what every shard's own
 * search found (each shard file searched alone gives its part), and the recall of the merge
 * against the exact answer holds above a floor. `knn-graph --index MANIFEST` runs on graph shards.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeVectors } from '../../src/io/vectors.js';
import { randomFloats } from '../../src/common/random.js';
import { cliIn } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-shards-graph-'));
const { ok } = cliIn(dir, '--backend', 'cpu');
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
    ok('search', '--index', 'g.json', '--queries', 'q.fvecs', '--k', `${k}`, '--itopk', '64', '--out', 's.csv', '--distances', 'sd.csv');
    const parts = manifest.shards.map((s, i) => {
      ok('search', '--index', s.file, '--queries', 'q.fvecs', '--k', `${k}`, '--itopk', '64', '--out', `p${i}.csv`, '--distances', `pd${i}.csv`);
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
    ok('build', '--input', 'x.fvecs', '--type', 'Flat', '--out', 'flat.idx');
    ok('search', '--index', 'flat.idx', '--queries', 'q.fvecs', '--k', `${k}`, '--out', 'f.csv');
    const exact = csv('f.csv');
    let hit = 0;
    for (let q = 0; q < nq; q++) hit += ids[q].filter((id) => exact[q].includes(id)).length;
    expect(hit / (nq * k)).toBeGreaterThanOrEqual(RECALL_FLOOR);
  });

  it('knn-graph --index MANIFEST on graph shards: every row its k neighbours, never itself', () => {
    ok('knn-graph', '--index', 'g.json', '--k', '5', '--out', 'kg.csv');
    const rows = csv('kg.csv');
    expect(rows.length).toBe(n);
    rows.forEach((r, i) => {
      expect(r.length, `row ${i}`).toBe(5);
      expect(r.includes(i), `row ${i} lists itself`).toBe(false);
      expect(r.every((v) => v >= 0 && v < n)).toBe(true);
    });
  });
});

