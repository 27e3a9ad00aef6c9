/**
 * `webgpu-knn export --format hnswlib`, end to end through the built CLI: a CAGRA index written
 * as an hnswlib file holds the index's rows, graph and ids (read back with readHnswlibFile), after
 * a removal too; a non-CAGRA index and an unknown format are refused, nothing written. Where
 * hnswlib-node is installed (an optional peer: bash scripts/install-peers.sh), it loads the file
 * and its searches find the exact neighbours as often as the index's own.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { randomFloats } from '../../src/common/random.js';
import { GraphIndex } from '../../src/indexes/graph/graph-index.js';
import { loadIndex } from '../../src/indexes/load-index.js';
import { readHnswlibFile } from '../../src/io/hnswlib-file.js';
import { writeVectors } from '../../src/io/vectors.js';
import { PAD_ID } from '../../src/kernel-facts.js';
import { cliIn } from '../helpers/cli.js';
import { cpuBackend } from '../helpers/cpu.js';

const root = join(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-export-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const at = (name: string): string => join(dir, name);
const { cli, ok } = cliIn(dir, '--backend', 'cpu');

const n = 800;
const d = 8;
const degree = 8;
const x = randomFloats(n * d, 21);
writeVectors(at('x.npy'), x, n, d);

/** hnswlib-node, resolved as bench/peers.ts resolves the npm peers (peers/, then the project's node_modules); null when absent. */
interface Hnswlib {
  HierarchicalNSW: new (space: string, dim: number) => {
    readIndexSync?: (path: string) => void;
    readIndex: (path: string) => unknown;
    setEf(ef: number): void;
    searchKnn(q: number[], k: number): { neighbors: number[] };
  };
}
const hnswlib = ((): Hnswlib | null => {
  try {
    const require = createRequire(join(root, 'package.json'));
    return require(require.resolve('hnswlib-node', { paths: [join(root, 'peers')] })) as Hnswlib;
  } catch {
    return null;
  }
})();

/** The k nearest rows of q (squared L2, exact; ties to the smaller row). */
function exact(q: Float32Array, k: number, rows = x, ids = (r: number) => r): number[] {
  const m = rows.length / d;
  const dist = (r: number): number => rows.subarray(r * d, (r + 1) * d).reduce((s, v, j) => s + (v - q[j]) ** 2, 0);
  return Array.from({ length: m }, (_, r) => [dist(r), r]).sort((a, b) => a[0] - b[0] || a[1] - b[1]).slice(0, k).map(([, r]) => ids(r));
}

describe('webgpu-knn export --format hnswlib', () => {
  it('writes the CAGRA index as an hnswlib file: its rows, graph and ids; says which space to load it with', async () => {
    const built = ok('build', '--input', 'x.npy', '--out', 'g.idx', '--type', `CAGRA${degree}`);
    // The graph's build has its progress, phase by phase, before the save (GRAPH_KIND.prepare).
    const lines = built.split('\n');
    const at1 = (text: string): number => lines.findIndex((l) => l.includes(text));
    const order = [`graph: each row's nearest rows: ${n}/${n} (100%)`, 'graph: pruning, reverse edges: 1/1 (100%)', 'graph: linking parts no walk reaches: 4/4 (100%)', 'saving:'].map(at1);
    expect(order.every((i, j) => i >= 0 && (j === 0 || i > order[j - 1])), built).toBe(true);
    const err = ok('export', '--format', 'hnswlib', '--index', 'g.idx', '--out', 'g.hnsw');
    expect(err).toMatch(new RegExp(`wrote .*g\\.hnsw: hnswlib index of ${n} vectors of dim ${d}, one layer, maxM0 ${degree}, entry point \\d+; load it with the space 'l2' \\(squared L2\\)`));
    const f = await readHnswlibFile(at('g.hnsw'), d);
    expect([f.header.curElementCount, f.header.maxElements, f.header.maxM0, f.header.m, f.header.maxLevel]).toEqual([n, n, degree, degree / 2, 0]);
    expect(err).toContain(`entry point ${f.header.enterPoint};`);
    expect(f.rows).toEqual(x);
    expect(Array.from(f.labels, Number)).toEqual(Array.from({ length: n }, (_, i) => i));
    expect(Array.from(f.upperSizes).every((s) => s === 0)).toBe(true);
    // The links are the saved graph's edges, PADs left out.
    const index = (await loadIndex(cpuBackend(), at('g.idx'))) as GraphIndex;
    const g = index.graphRows!;
    for (let r = 0; r < n; r++) {
      const edges = Array.from(g.subarray(r * degree, (r + 1) * degree)).filter((e) => e !== PAD_ID);
      expect(Array.from(f.links.subarray(r * degree, r * degree + f.counts[r])), `row ${r}`).toEqual(edges);
    }
    await index.dispose();
    expect(cli('export', '--help').code).toBe(0);
  });

  it('after a removal: the labels are the ids that remain; cosine rows unit-norm, with the ip space', async () => {
    const ids = BigInt64Array.from({ length: n }, (_, i) => BigInt(100 + 2 * i));
    writeFileSync(at('ids.txt'), `${Array.from(ids, String).join('\n')}\n`);
    writeFileSync(at('drop.txt'), `${[100, 102, 300, 1000].join('\n')}\n`);
    ok('build', '--input', 'x.npy', '--ids', 'ids.txt', '--metric', 'cosine', '--out', 'c.idx', '--type', 'CAGRA8');
    ok('remove', '--index', 'c.idx', '--ids', 'drop.txt');
    const err = ok('export', '--format', 'hnswlib', '--index', 'c.idx', '--out', 'c.hnsw');
    expect(err).toMatch(/hnswlib index of 796 vectors .* the space 'ip' \(1 - inner product; the rows are unit-norm/);
    const f = await readHnswlibFile(at('c.hnsw'), d);
    const gone = new Set([100, 102, 300, 1000]);
    expect(Array.from(f.labels, Number)).toEqual(Array.from(ids, Number).filter((id) => !gone.has(id)));
    for (let i = 0; i < 796; i++) {
      const norm = Math.hypot(...f.rows.subarray(i * d, (i + 1) * d));
      expect(norm).toBeCloseTo(1, 5);
      for (let e = 0; e < f.counts[i]; e++) expect(f.links[i * degree + e]).toBeLessThan(796);
    }
  });

  it('remove past the compaction fraction rebuilds the graph with progress before it saves', () => {
    ok('build', '--input', 'x.npy', '--out', 'r.idx', '--type', `CAGRA${degree}`);
    writeFileSync(at('quarter.txt'), `${Array.from({ length: 250 }, (_, i) => String(i)).join('\n')}\n`);
    const err = ok('remove', '--index', 'r.idx', '--ids', 'quarter.txt');
    const lines = err.split('\n');
    const built = lines.findIndex((l) => l.includes(`graph: each row's nearest rows: ${n - 250}/${n - 250} (100%)`));
    expect(built, err).toBeGreaterThanOrEqual(0);
    expect(lines.findIndex((l) => l.startsWith('saving:'))).toBeGreaterThan(built);
    expect(err).toContain(`ntotal ${n} -> ${n - 250}`);
  });

  it('refuses an index that is not CAGRA and a format it does not write (exit 2, one line, nothing written)', () => {
    ok('build', '--input', 'x.npy', '--out', 'flat.idx');
    let r = cli('export', '--format', 'hnswlib', '--index', 'flat.idx', '--out', 'flat.hnsw');
    expect(r.code, r.err).toBe(2);
    expect(r.err.trim()).toBe("webgpu-knn export: --index flat.idx is a Flat index; --format hnswlib exports a CAGRA index (build --type CAGRA<degree>)");
    r = cli('export', '--format', 'faiss', '--index', 'g.idx', '--out', 'g.faiss');
    expect(r.code, r.err).toBe(2);
    expect(r.err.trim()).toBe('webgpu-knn export: --format must be hnswlib; got faiss');
    r = cli('export', '--index', 'g.idx', '--out', 'g2.hnsw');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--format is required/);
    r = cli('export', '--format', 'hnswlib', '--index', 'g.idx', '--out', 'g.idx');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--out g\.idx is the same file as --index g\.idx/);
    expect(readdirSync(dir).filter((f) => /flat\.hnsw|g\.faiss|g2\.hnsw|webgpu-knn-tmp/.test(f))).toEqual([]);
  });

  it.skipIf(!hnswlib)(
    `hnswlib-node loads the file and finds the exact neighbours as the index does${hnswlib ? '' : ' [skipped: hnswlib-node not installed (bash scripts/install-peers.sh)]'}`,
    async () => {
      const { HierarchicalNSW } = hnswlib!;
      const h = new HierarchicalNSW('l2', d);
      await (h.readIndexSync ? h.readIndexSync(at('g.hnsw')) : h.readIndex(at('g.hnsw')));
      h.setEf(64);
      const index = (await loadIndex(cpuBackend(), at('g.idx'))) as GraphIndex;
      const nq = 100;
      const xq = randomFloats(nq * d, 22);
      const ours = await index.search(xq, 10, { itopk: 64 });
      let hits = 0;
      let ourHits = 0;
      for (let q = 0; q < nq; q++) {
        const query = xq.subarray(q * d, (q + 1) * d);
        const truth = new Set(exact(query, 10));
        hits += h.searchKnn(Array.from(query), 10).neighbors.filter((id) => truth.has(id)).length;
        ourHits += Array.from(ours.labels.subarray(q * 10, (q + 1) * 10)).filter((id) => truth.has(id)).length;
      }
      // The floor: what hnswlib's own walk over the same graph (test/io/hnswlib-file.test.ts) measured here.
      expect(hits / (nq * 10)).toBeGreaterThanOrEqual(0.95);
      expect(hits / (nq * 10)).toBeGreaterThanOrEqual(ourHits / (nq * 10) - 0.05);
      await index.dispose();
    },
  );
});
