/**
 * The shard merge's order end to end (issue 33, item 13): `build --shards 3` then `search --index`
 * and `knn-graph --index` on data built so that the merge decides every tie across shards, and
 * the output must be the unsharded bytes.
 *
 * - Near ties: around each query row u, rows at squared distance 1 and 1 + 2^-26 (equal in
 *   float32, not in float64), the nearer one in a later shard or with a larger id; a merge that
 *   orders by the float32 distances (then the id) puts them in the wrong order.
 * - Exact ties: a row and its copy in another shard, at distance 4; with caller ids that fall as
 *   the row grows, the copy in the later shard has the smaller id, so the merge's id tie-break
 *   (not the shards' order) decides.
 * Both id kinds and IVF (all lists probed, so a shard's candidates are its exact top-k); the
 * sharded search on WebGPU too, where an adapter exists.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeVectors } from '../../src/io/vectors.js';
import { randomSmallInts } from '../../src/common/random.js';
import { cliIn } from '../helpers/cli.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-shard-ties-'));
const { ok } = cliIn(dir);
const text = (name: string): string => readFileSync(join(dir, name), 'utf8');
const bytes = (name: string): Buffer => readFileSync(join(dir, name));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const gpu = await gpuBackend();
const gpuThere = gpu !== null;
disposeGpuBackends();

// 300 rows of d = 4 in 3 shards of 100: [0, 100), [100, 200), [200, 300). Group j (20 of them),
// around u = (10 j, 0, 0, 0) in row j (shard 0):
//   a  row 100 + j (shard 1)  u + (1, 2^-13)   distance 1 + 2^-26
//   c  row 120 + j (shard 1)  u + (0, 2)       distance 4, the same vector as e
//   b' row 140 + j (shard 1)  u + (-1, 0)      distance 1
//   b  row 200 + j (shard 2)  u + (1, 0)       distance 1
//   e  row 220 + j (shard 2)  u + (0, 2)       distance 4
//   a' row 240 + j (shard 2)  u + (-1, 2^-13)  distance 1 + 2^-26
// The other rows sit far away (first coordinate 1000..1007; many exact ties among them too).
const n = 300;
const d = 4;
const groups = 20;
const tiny = 2 ** -13;
const x = randomSmallInts(n * d, 31, 7);
for (let r = 0; r < n; r++) x[r * d] += 1000;
const put = (row: number, v: number[]): void => x.set(v, row * d);
for (let j = 0; j < groups; j++) {
  const u = 10 * j;
  put(j, [u, 0, 0, 0]);
  put(100 + j, [u + 1, tiny, 0, 0]);
  put(120 + j, [u, 2, 0, 0]);
  put(140 + j, [u - 1, 0, 0, 0]);
  put(200 + j, [u + 1, 0, 0, 0]);
  put(220 + j, [u, 2, 0, 0]);
  put(240 + j, [u - 1, tiny, 0, 0]);
}
expect(Math.fround(1 + 2 ** -26)).toBe(1);
writeVectors(join(dir, 'x.fvecs'), x, n, d);
writeVectors(join(dir, 'q.fvecs'), x.subarray(0, groups * d), groups, d);
// Caller ids falling as the row grows: a later shard's rows have the smaller ids.
writeFileSync(join(dir, 'ids.txt'), Array.from({ length: n }, (_, r) => 1_000_000 - 7 * r).join('\n'));
const idOf = (r: number, callerIds: boolean): number => (callerIds ? 1_000_000 - 7 * r : r);

const cases = [
  { name: 'Flat, row ids', build: ['--type', 'Flat'], search: [] as string[], callerIds: false },
  { name: 'Flat, caller ids', build: ['--type', 'Flat', '--ids', 'ids.txt'], search: [], callerIds: true },
  { name: 'IVF4,Flat, row ids, all lists probed', build: ['--type', 'IVF4,Flat', '--nprobe', '4'], search: [], callerIds: false },
];

describe('sharded search and knn-graph break ties across shards as one index does', () => {
  cases.forEach((c, i) => {
    it(`${c.name}: search --index MANIFEST writes the unsharded bytes${c.callerIds ? '' : ', and knn-graph --index those of knn-graph'}`, () => {
      ok('build', '--input', 'x.fvecs', '--out', `one-${i}.idx`, '--backend', 'cpu', ...c.build);
      ok('build', '--input', 'x.fvecs', '--out', `sh-${i}.json`, '--shards', '3', '--backend', 'cpu', ...c.build);
      // k = 9: the query itself, b' b a a' (float32 distance 1), c e (4), and two beyond.
      ok('search', '--index', `one-${i}.idx`, '--queries', 'q.fvecs', '--k', '9', '--out', `one-${i}.csv`, '--distances', `one-${i}-d.csv`, '--backend', 'cpu');
      // Query blocks of 7 rows: odd, so blocks' results of 7 x 9 neighbours are odd-sized too.
      ok('search', '--index', `sh-${i}.json`, '--queries', 'q.fvecs', '--k', '9', '--out', `sh-${i}.csv`, '--distances', `sh-${i}-d.csv`, '--query-rows', '7', '--backend', 'cpu');
      expect(text(`sh-${i}.csv`)).toBe(text(`one-${i}.csv`));
      expect(text(`sh-${i}-d.csv`)).toBe(text(`one-${i}-d.csv`));

      // The data does what it is for: in each row, the four at float32 distance 1 come in float64
      // order (b' and b before a and a', each pair by id), not by id; c and e by id, not by shard.
      const rows = text(`one-${i}.csv`).trim().split('\n').map((l) => l.split(',').map(Number));
      const dist = text(`one-${i}-d.csv`).trim().split('\n').map((l) => l.split(',').map(Number));
      const byId = (r1: number, r2: number): number[] => [idOf(r1, c.callerIds), idOf(r2, c.callerIds)].sort((p, q) => p - q);
      rows.forEach((got, j) => {
        expect(dist[j].slice(1, 7)).toEqual([1, 1, 1, 1, 4, 4]);
        expect(got.slice(1, 7)).toEqual([...byId(140 + j, 200 + j), ...byId(100 + j, 240 + j), ...byId(120 + j, 220 + j)]);
      });

      if (c.callerIds) return; // a graph of the index's own vectors needs row-number ids
      ok('knn-graph', '--input', 'x.fvecs', '--k', '8', '--out', `g-one-${i}.npy`, '--distances', `g-one-${i}-d.npy`, '--backend', 'cpu', ...c.build);
      ok('knn-graph', '--index', `sh-${i}.json`, '--k', '8', '--out', `g-sh-${i}.npy`, '--distances', `g-sh-${i}-d.npy`, '--query-rows', '33', '--backend', 'cpu');
      expect(bytes(`g-sh-${i}.npy`).equals(bytes(`g-one-${i}.npy`))).toBe(true);
      expect(bytes(`g-sh-${i}-d.npy`).equals(bytes(`g-one-${i}-d.npy`))).toBe(true);
    }, 60_000);
  });

  it.skipIf(!gpuThere)('on WebGPU: the sharded search and knn-graph write the CPU backend\'s unsharded bytes', () => {
    ok('search', '--index', 'sh-1.json', '--queries', 'q.fvecs', '--k', '9', '--out', 'gpu-sh-1.csv', '--distances', 'gpu-sh-1-d.csv', '--query-rows', '7', '--backend', 'webgpu');
    expect(text('gpu-sh-1.csv')).toBe(text('one-1.csv'));
    expect(text('gpu-sh-1-d.csv')).toBe(text('one-1-d.csv'));
    ok('knn-graph', '--index', 'sh-0.json', '--k', '8', '--out', 'gpu-g-sh-0.npy', '--distances', 'gpu-g-sh-0-d.npy', '--backend', 'webgpu');
    expect(bytes('gpu-g-sh-0.npy').equals(bytes('g-one-0.npy'))).toBe(true);
    expect(bytes('gpu-g-sh-0-d.npy').equals(bytes('g-one-0-d.npy'))).toBe(true);
  }, 120_000);
});
