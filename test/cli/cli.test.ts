import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cpuBackend } from '../helpers/cpu.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { loadIndex } from '../../src/indexes/load-index.js';
import { readVectors, writeVectors } from '../../src/io/vectors.js';
import { randomSmallInts } from '../../src/common/random.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

// End to end through a child process, against the built CLI (scripts/test.sh builds first).
const root = fileURLToPath(new URL('../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-cli-'));
const cli = (...args: string[]) => {
  const r = spawnSync(process.execPath, [join(root, 'dist/cli/main.js'), ...args], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
};

// Is there a WebGPU adapter? Decided once, up front: without one the webgpu cases are skipped
// (and reported as skipped); with WEBGPU_REQUIRED=1 gpuBackend() throws, failing the file.
const hasGpu = (await gpuBackend()) !== null;
disposeGpuBackends();

const d = 6;
const n = 300;
// Values 0..15 in 6-d: with this seed no two random rows are equal, so the 20 planted copies
// (row 100 + i copies row i) are the only exact duplicates; checked below with a plain loop.
const x = randomSmallInts(n * d, 11, 15);
for (let i = 0; i < 20; i++) x.set(x.subarray(i * d, (i + 1) * d), (100 + i) * d); // planted copies
const PLANTED = Array.from({ length: 20 }, (_, i) => [i, 100 + i]);
const exactDuplicates: number[][] = [];
for (let i = 0; i < n; i++) {
  for (let j = i + 1; j < n; j++) {
    let same = true;
    for (let t = 0; t < d && same; t++) same = x[i * d + t] === x[j * d + t];
    if (same) exactDuplicates.push([i, j]);
  }
}
if (JSON.stringify(exactDuplicates) !== JSON.stringify(PLANTED)) {
  throw new Error(`test data: the exact duplicates must be exactly the planted pairs; got ${JSON.stringify(exactDuplicates)}`);
}
writeVectors(join(dir, 'x.fvecs'), x, n, d);
writeVectors(join(dir, 'q.npy'), x.subarray(0, 10 * d), 10, d);

describe('webgpu-knn CLI', () => {
  it('prints help for every command and exits 2 on usage errors', () => {
    for (const c of ['', 'demo', 'build', 'search', 'remove', 'range-search', 'dedup', 'knn-graph', 'info', 'bench flat']) {
      const r = cli(...c.split(' ').filter(Boolean), '--help');
      expect(r.code, c).toBe(0);
      expect(r.out, c).toMatch(/usage: webgpu-knn/);
    }
    expect(cli('frobnicate').code).toBe(2);
    const missing = cli('dedup', '--input', 'x.fvecs', '--metric', 'l2', '--out', 'p.csv');
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/--threshold is required/);
    expect(cli('dedup', '--input', 'x.fvecs', '--metric', 'dot', '--threshold', '1', '--out', 'p.csv').err).toMatch(/--metric must be cosine or l2; got dot/);
    expect(cli('build', '--input', 'x.fvecs', '--out', 'i.idx', '--type', 'HNSW', '--backend', 'cpu').code).toBe(2);
    expect(cli('search', '--bogus').code).toBe(2);
  });

  it('exits 1 with the byte offset for a truncated input file', () => {
    writeFileSync(join(dir, 'bad.fvecs'), readFileSync(join(dir, 'x.fvecs')).subarray(0, 50));
    const r = cli('dedup', '--input', 'bad.fvecs', '--metric', 'l2', '--threshold', '0', '--out', 'p.csv', '--backend', 'cpu');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/bad.fvecs: truncated: .* starts at byte 28/);
  });

  for (const backend of ['cpu', 'webgpu']) {
    const skip = backend === 'webgpu' && !hasGpu;
    it.skipIf(skip)(`dedup writes the CSV contract (${backend})${skip ? ' [skipped: no WebGPU adapter]' : ''}`, () => {
      const r = cli('dedup', '--input', 'x.fvecs', '--metric', 'l2', '--threshold', '0', '--out', 'pairs.csv', '--clusters', 'c.json', '--backend', backend);
      expect(r.code, r.err).toBe(0);
      // Exactly the planted pairs (i, 100 + i), i = 0..19, sorted by i, at squared distance 0.
      const lines = readFileSync(join(dir, 'pairs.csv'), 'utf8').trimEnd().split('\n');
      expect(lines[0]).toBe('i,j,score');
      expect(lines.slice(1)).toEqual(PLANTED.map(([i, j]) => `${i},${j},0`));
      const clusters = JSON.parse(readFileSync(join(dir, 'c.json'), 'utf8'));
      expect(clusters.clusters).toEqual(PLANTED);
      expect(clusters.drop).toEqual(PLANTED.map(([, j]) => j));
      expect(r.err).toMatch(/20 pairs .* in 20 clusters; 20 ids to drop/);
    });
  }

  it('dedup --partitions C --overlap C writes the exact dedup\'s bytes; usage errors name the flag', () => {
    expect(cli('dedup', '--input', 'x.fvecs', '--metric', 'cosine', '--threshold', '0.99', '--out', 'exact.csv', '--clusters', 'exact.json', '--backend', 'cpu').code).toBe(0);
    const r = cli('dedup', '--input', 'x.fvecs', '--metric', 'cosine', '--threshold', '0.99', '--out', 'part.csv', '--clusters', 'part.json', '--partitions', '5', '--overlap', '5', '--backend', 'cpu');
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/5 partitions x overlap 5 \(largest 300 rows; 500\.00% of the pairs scored\)/);
    expect(readFileSync(join(dir, 'part.csv'), 'utf8')).toBe(readFileSync(join(dir, 'exact.csv'), 'utf8'));
    expect(readFileSync(join(dir, 'part.json'), 'utf8')).toBe(readFileSync(join(dir, 'exact.json'), 'utf8'));
    expect(readFileSync(join(dir, 'exact.csv'), 'utf8').split('\n').length).toBeGreaterThan(21);
    const bad = (args: string[], msg: RegExp) => {
      const b = cli('dedup', '--input', 'x.fvecs', '--metric', 'l2', '--threshold', '0', '--out', 'p.csv', '--backend', 'cpu', ...args);
      expect(b.code).toBe(2);
      expect(b.err).toMatch(msg);
    };
    bad(['--overlap', '2'], /--overlap applies with --partitions only/);
    bad(['--partitions', '4', '--overlap', '5'], /--overlap must be an integer in \[1, 4\]; got 5/);
    bad(['--partitions', '301'], /--partitions must be an integer in \[1, 300\] \(the rows of x\.fvecs\); got 301/);
    bad(['--partitions', '4', '--distributed', 'redis://127.0.0.1:1'], /--partitions runs in one process/);
    bad(['--partitions', '4', '--against', 'flat.idx'], /--partitions applies to a dedup within one input/);
  });

  it('dedup writes JSON Lines too', () => {
    expect(cli('dedup', '--input', 'x.fvecs', '--metric', 'cosine', '--threshold', '0.9999', '--out', 'pairs.jsonl', '--backend', 'cpu').code).toBe(0);
    const first = JSON.parse(readFileSync(join(dir, 'pairs.jsonl'), 'utf8').split('\n')[0]);
    expect(Object.keys(first)).toEqual(['i', 'j', 'score']);
    expect(first.i).toBeLessThan(first.j);
  });

  it('build then search gives what the library gives', async () => {
    expect(cli('build', '--input', 'x.fvecs', '--out', 'flat.idx', '--backend', 'cpu').code).toBe(0);
    const r = cli('search', '--index', 'flat.idx', '--queries', 'q.npy', '--k', '5', '--out', 'nn.ivecs', '--distances', 'nn.fvecs', '--backend', 'cpu');
    expect(r.code, r.err).toBe(0);
    const index = new FlatIndex(cpuBackend(), { dim: d });
    await index.add(x);
    const want = await index.search(x.subarray(0, 10 * d), 5);
    expect(Array.from((await readVectors(join(dir, 'nn.ivecs'))).data)).toEqual(Array.from(want.labels));
    expect(Array.from((await readVectors(join(dir, 'nn.fvecs'))).data)).toEqual(Array.from(want.distances));
    expect(cli('build', '--input', 'x.fvecs', '--out', 'ivf.idx', '--type', 'IVF4,Flat', '--nprobe', '4', '--backend', 'cpu').code).toBe(0);
    expect(cli('search', '--index', 'ivf.idx', '--queries', 'q.npy', '--k', '5', '--out', 'nn2.ivecs', '--backend', 'cpu').code).toBe(0);
    expect(Array.from((await readVectors(join(dir, 'nn2.ivecs'))).data)).toEqual(Array.from(want.labels));
  });

  it('build --type takes codes (IVF4,PQ3x4,RFlat) and transforms (PCAR4,Flat,RFlat); search --kfactor re-ranks against the float32 rows', async () => {
    const index = new FlatIndex(cpuBackend(), { dim: d });
    await index.add(x);
    const want = await index.search(x.subarray(0, 10 * d), 5);
    for (const [type, name] of [['IVF4,PQ3x4,RFlat', 'pq'], ['PCAR4,Flat,RFlat', 'pcar']]) {
      const r = cli('build', '--input', 'x.fvecs', '--out', `${name}.idx`, '--type', type, ...(type.startsWith('IVF') ? ['--nprobe', '4'] : []), '--backend', 'cpu');
      expect(r.code, r.err).toBe(0);
      // k x kFactor = 500 candidates cover the 300 vectors: the exact answer.
      const s = cli('search', '--index', `${name}.idx`, '--queries', 'q.npy', '--k', '5', '--kfactor', '100', '--out', `${name}.ivecs`, '--backend', 'cpu');
      expect(s.code, s.err).toBe(0);
      expect(Array.from((await readVectors(join(dir, `${name}.ivecs`))).data), type).toEqual(Array.from(want.labels));
    }
    for (const bad of ['0.5', 'two', '-1']) {
      const e = cli('search', '--index', 'pq.idx', '--queries', 'q.npy', '--k', '5', `--kfactor=${bad}`, '--out', 'pq2.ivecs', '--backend', 'cpu');
      expect(e.code, bad).toBe(2);
      expect(e.err).toMatch(new RegExp(`--kfactor must be a number >= 1; got ${bad}`));
    }
    const m = cli('build', '--input', 'x.fvecs', '--out', 'pq5.idx', '--type', 'PQ4', '--backend', 'cpu');
    expect(m.code).toBe(2);
    expect(m.err).toMatch(/M \(sub-quantizers\) must be an integer >= 1 that divides d = 6; got 4/);
    const p = cli('build', '--input', 'x.fvecs', '--out', 'pcar7.idx', '--type', 'PCAR7,Flat', '--backend', 'cpu');
    expect(p.code).toBe(2);
    expect(p.err).toMatch(/--type PCAR7,Flat: PCAR7: p \(output dimensions\) must be an integer in \[1, d = 6\]; got 7/);
  });

  it('build --train-sample trains IVF on a seeded sample, as the library does', async () => {
    const r = cli('build', '--input', 'x.fvecs', '--out', 'sampled.idx', '--type', 'IVF4,Flat', '--train-sample', '60', '--backend', 'cpu');
    expect(r.code, r.err).toBe(0);
    const saved = (await loadIndex(cpuBackend(), join(dir, 'sampled.idx'))) as IvfFlatIndex;
    const want = new IvfFlatIndex(cpuBackend(), { dim: d, nlist: 4 });
    await want.train(x, { maxPoints: 60 });
    expect(Array.from(saved.centroids!)).toEqual(Array.from(want.centroids!));
    const all = new IvfFlatIndex(cpuBackend(), { dim: d, nlist: 4 });
    await all.train(x);
    expect(Array.from(saved.centroids!)).not.toEqual(Array.from(all.centroids!));
    const few = cli('build', '--input', 'x.fvecs', '--out', 's2.idx', '--type', 'IVF4,Flat', '--train-sample', '3', '--backend', 'cpu');
    expect(few.code).toBe(2);
    expect(few.err).toMatch(/--train-sample must be an integer in \[4, /);
    const flat = cli('build', '--input', 'x.fvecs', '--out', 's3.idx', '--train-sample', '100', '--backend', 'cpu');
    expect(flat.code).toBe(2);
    expect(flat.err).toMatch(/--train-sample applies to IVF indexes only/);
  });

  it('knn-graph excludes each row itself', async () => {
    const r = cli('knn-graph', '--input', 'x.fvecs', '--k', '3', '--out', 'g.npy', '--backend', 'cpu');
    expect(r.code, r.err).toBe(0);
    const g = await readVectors(join(dir, 'g.npy'));
    expect([g.n, g.d]).toEqual([n, 3]);
    for (let i = 0; i < n; i++) expect(Array.from(g.data.subarray(i * 3, i * 3 + 3))).not.toContain(i);
    // Row 100 is a copy of row 0: its nearest other row is 0 at distance 0.
    expect(g.data[100 * 3]).toBe(0);
  });
});
