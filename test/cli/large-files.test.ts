/**
 * The CLI on files larger than one read block (16 MiB): build, search and knn-graph read their
 * inputs block by block, IVF builds in two passes, and the results equal the library's on the
 * whole arrays.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { readVectors, writeVectors } from '../../src/io/vectors.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { clusteredFloats } from '../../src/common/random.js';
import { cpuBackend } from '../helpers/cpu.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-large-'));
const cli = (...args: string[]) => {
  const r = spawnSync(process.execPath, [join(root, 'dist/cli/main.js'), ...args], { cwd: dir, encoding: 'utf8', timeout: 300_000 });
  return { code: r.status, err: r.stderr };
};

// 40,000 x 128 float32: 20.5 MB, two read blocks; queries: 20 rows of the base, 20 new ones.
const d = 128;
const n = 40_000;
const x = clusteredFloats(n, d, 64, 21);
writeVectors(join(dir, 'x.npy'), x, n, d);
const xq = new Float32Array(40 * d);
xq.set(x.subarray(0, 20 * d));
xq.set(clusteredFloats(20, d, 64, 22), 20 * d);
writeVectors(join(dir, 'q.fvecs'), xq, 40, d);

describe('the CLI on files larger than one block', () => {
  it('build and search (Flat and IVF), and knn-graph --queries, give what the library gives on the whole arrays', { timeout: 300_000 }, async () => {
    const backend = cpuBackend();
    const flat = new FlatIndex(backend, { dim: d });
    await flat.add(x);
    const wantFlat = await flat.search(xq, 10);

    const b = cli('build', '--input', 'x.npy', '--out', 'flat.idx', '--backend', 'cpu');
    expect(b.code, b.err).toBe(0);
    expect(b.err).toMatch(/adding: 40000\/40000 \(100%\)/);
    expect(b.err).toMatch(/saving: \d+\/\d+ \(100%\)/);
    const s = cli('search', '--index', 'flat.idx', '--queries', 'q.fvecs', '--k', '10', '--out', 'nn.ivecs', '--distances', 'nn.fvecs', '--backend', 'cpu');
    expect(s.code, s.err).toBe(0);
    expect(s.err).toMatch(/loading: \d+\/\d+ \(100%\)/);
    expect(Array.from((await readVectors(join(dir, 'nn.ivecs'))).data)).toEqual(Array.from(wantFlat.labels));
    expect(Array.from((await readVectors(join(dir, 'nn.fvecs'))).data)).toEqual(Array.from(wantFlat.distances));

    const ivf = new IvfFlatIndex(backend, { dim: d, nlist: 32, nprobe: 4 });
    await ivf.train(x);
    await ivf.add(x);
    const wantIvf = await ivf.search(xq, 10);
    const bi = cli('build', '--input', 'x.npy', '--out', 'ivf.idx', '--type', 'IVF32,Flat', '--nprobe', '4', '--backend', 'cpu');
    expect(bi.code, bi.err).toBe(0);
    expect(bi.err).toMatch(/reading the training sample: .*\(100%\)/);
    expect(bi.err).toMatch(/assigning to lists: 40000\/40000/);
    expect(bi.err).toMatch(/adding to lists: 40000\/40000/);
    const si = cli('search', '--index', 'ivf.idx', '--queries', 'q.fvecs', '--k', '10', '--out', 'nn-ivf.ivecs', '--backend', 'cpu');
    expect(si.code, si.err).toBe(0);
    expect(Array.from((await readVectors(join(dir, 'nn-ivf.ivecs'))).data)).toEqual(Array.from(wantIvf.labels));

    const g = cli('knn-graph', '--input', 'x.npy', '--queries', 'q.fvecs', '--k', '10', '--out', 'g.npy', '--backend', 'cpu');
    expect(g.code, g.err).toBe(0);
    expect(Array.from((await readVectors(join(dir, 'g.npy'))).data)).toEqual(Array.from(wantFlat.labels));
  });
});
