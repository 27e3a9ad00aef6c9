/**
 * Sharded indexes through the CLI, on the CPU backend (no Redis): `build --shards 3` + `search
 * --index MANIFEST` writes the very bytes `build` + `search` write, for Flat (l2, cosine, caller
 * ids, a filter, --kfactor) and IVF (same nprobe, and an overriding --nprobe); `knn-graph --index MANIFEST`
 * writes the bytes of `knn-graph`; and the refusals: a changed shard file, S above the rows, a
 * type that cannot be sharded, a manifest name without .json.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeVectors } from '../../src/io/vectors.js';
import { randomFloats, randomSmallInts } from '../../src/common/random.js';
import { cliIn } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-shards-'));
const { cli, ok } = cliIn(dir, '--backend', 'cpu');
const bytes = (name: string): Buffer => readFileSync(join(dir, name));

const n = 3000;
const d = 8;
// Small integers (0..7): squared L2 distances are small integers, exact in float32, so many
// neighbours tie at equal distance and the merge's tie rule (the smaller id) decides across
// shards. Every 100th row is an exact copy of a row in another shard.
const ints = randomSmallInts(n * d, 5, 7);
// Floats for cosine (ties from the copies only).
const floats = randomFloats(n * d, 6);
for (const x of [ints, floats]) {
  for (let r = 0; r < n; r += 100) x.copyWithin(r * d, ((r + 1500) % n) * d, ((r + 1500) % n + 1) * d);
}
writeVectors(join(dir, 'ints.fvecs'), ints, n, d);
writeVectors(join(dir, 'floats.fvecs'), floats, n, d);
writeVectors(join(dir, 'q-ints.fvecs'), ints.subarray(0, 400 * d), 400, d);
writeVectors(join(dir, 'q-floats.fvecs'), floats.subarray(0, 400 * d), 400, d);
// Caller ids that decrease with the row: ties by id then run against the row order.
writeFileSync(join(dir, 'ids.txt'), Array.from({ length: n }, (_, r) => 1_000_000 - 7 * r).join('\n'));
// Every third id allowed.
writeFileSync(join(dir, 'allowed.txt'), Array.from({ length: n / 3 }, (_, i) => 3 * i).join('\n'));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The 0-based shard (of 3 over n rows) holding row r. */
const shardOf = (r: number): number => Math.min(2, Math.floor(r / (n / 3)));

/** Reads an .npy of int64 ids (header, then the values) as numbers. */
function npyIds(name: string): number[] {
  const buf = bytes(name);
  const header = 10 + buf.readUInt16LE(8);
  return Array.from(new BigInt64Array(buf.buffer.slice(buf.byteOffset + header, buf.byteOffset + buf.length)), Number);
}
function npyFloats(name: string): Float32Array {
  const buf = bytes(name);
  const header = 10 + buf.readUInt16LE(8);
  return new Float32Array(buf.buffer.slice(buf.byteOffset + header, buf.byteOffset + buf.length));
}

describe('build --shards + search --index MANIFEST', () => {
  const cases = [
    { name: 'Flat l2', input: 'ints', build: ['--type', 'Flat'], search: [] as string[] },
    { name: 'Flat cosine', input: 'floats', build: ['--type', 'Flat', '--metric', 'cosine'], search: [] },
    { name: 'Flat l2, caller ids', input: 'ints', build: ['--ids', 'ids.txt'], search: [] },
    { name: 'Flat l2, --filter-ids', input: 'ints', build: [], search: ['--filter-ids', 'allowed.txt'] },
    { name: 'Flat l2, --kfactor 2', input: 'ints', build: [], search: ['--kfactor', '2'] },
    { name: 'IVF16,Flat l2, nprobe 3', input: 'ints', build: ['--type', 'IVF16,Flat', '--nprobe', '3'], search: [] },
    { name: 'IVF16,Flat cosine, --nprobe 5 at search', input: 'floats', build: ['--type', 'IVF16,Flat', '--metric', 'cosine', '--nprobe', '2'], search: ['--nprobe', '5'] },
  ];
  cases.forEach((c, i) => {
    it(`${c.name}: the same bytes as the unsharded index`, () => {
      ok('build', '--input', `${c.input}.fvecs`, '--out', `one-${i}.idx`, ...c.build);
      ok('build', '--input', `${c.input}.fvecs`, '--out', `sh-${i}.json`, '--shards', '3', ...c.build);
      const q = `q-${c.input}.fvecs`;
      ok('search', '--index', `one-${i}.idx`, '--queries', q, '--k', '20', '--out', `one-${i}.npy`, '--distances', `one-${i}-d.npy`, ...c.search);
      // Query blocks of 150 rows: 3 blocks x 3 shards, merged block by block.
      const log = ok('search', '--index', `sh-${i}.json`, '--queries', q, '--k', '20', '--out', `sh-${i}.npy`, '--distances', `sh-${i}-d.npy`, '--query-rows', '150', ...c.search);
      expect(log.match(/loading shard /g)?.length, 'each shard loaded once for its 3 query blocks').toBe(3);
      expect(bytes(`sh-${i}.npy`).equals(bytes(`one-${i}.npy`))).toBe(true);
      expect(bytes(`sh-${i}-d.npy`).equals(bytes(`one-${i}-d.npy`))).toBe(true);
      const manifest = JSON.parse(bytes(`sh-${i}.json`).toString()) as { shards: { rows: number; firstRow: number }[]; ntotal: number };
      expect(manifest.shards.map((s) => [s.firstRow, s.rows])).toEqual([[0, 1000], [1000, 1000], [2000, 1000]]);
      expect(manifest.ntotal).toBe(n);
    });
  });

  it('the data has ties across shards: equal distances in one row from rows of different shards', () => {
    const ids = npyIds('one-0.npy');
    const dist = npyFloats('one-0-d.npy');
    let across = 0;
    for (let j = 1; j < ids.length; j++) {
      if (j % 20 !== 0 && dist[j] === dist[j - 1] && shardOf(ids[j]) !== shardOf(ids[j - 1])) across++;
    }
    expect(across).toBeGreaterThan(100);
  });

  it('IVF shards share the unsharded centroids: --nprobe 16 (all lists) equals Flat', () => {
    ok('search', '--index', 'sh-5.json', '--queries', 'q-ints.fvecs', '--k', '20', '--out', 'all.npy', '--nprobe', '16');
    expect(bytes('all.npy').equals(bytes('one-0.npy'))).toBe(true);
  });

  it('knn-graph --index MANIFEST writes the bytes of knn-graph (Flat; IVF with the same --nprobe)', () => {
    ok('knn-graph', '--input', 'ints.fvecs', '--k', '10', '--out', 'g-one.csv', '--distances', 'g-one-d.csv');
    ok('knn-graph', '--index', 'sh-0.json', '--k', '10', '--out', 'g-sh.csv', '--distances', 'g-sh-d.csv', '--query-rows', '1000');
    expect(bytes('g-sh.csv').toString()).toBe(bytes('g-one.csv').toString());
    expect(bytes('g-sh-d.csv').toString()).toBe(bytes('g-one-d.csv').toString());
    ok('knn-graph', '--input', 'ints.fvecs', '--type', 'IVF16,Flat', '--nprobe', '3', '--k', '10', '--out', 'gi-one.npy');
    ok('knn-graph', '--index', 'sh-5.json', '--nprobe', '3', '--k', '10', '--out', 'gi-sh.npy');
    expect(bytes('gi-sh.npy').equals(bytes('gi-one.npy'))).toBe(true);
    // Built with --ids: the graph of its own vectors cannot drop each row's id.
    const r = cli('knn-graph', '--index', 'sh-2.json', '--k', '10', '--out', 'g-ids.npy');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/was built with --ids/);
  });

  it('refuses a shard file changed since the manifest, naming it (exit 1, nothing written)', () => {
    ok('build', '--input', 'ints.fvecs', '--out', 'bad.json', '--shards', '3');
    const name = JSON.parse(bytes('bad.json').toString()).shards[1].file;
    expect(name).toMatch(/^bad\.[0-9a-f]{8}\.shard-1\.idx$/);
    const path = join(dir, name);
    const shard = bytes(name);
    shard[shard.length - 100] ^= 1;
    writeFileSync(path, shard);
    const r = cli('search', '--index', 'bad.json', '--queries', 'q-ints.fvecs', '--k', '5', '--out', 'bad.npy');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/shard file .*bad\.[0-9a-f]{8}\.shard-1\.idx has SHA-256 [0-9a-f]{64}; the manifest says [0-9a-f]{64}/);
    expect(() => bytes('bad.npy')).toThrow();
    writeFileSync(path, shard.subarray(0, 1000));
    expect(cli('search', '--index', 'bad.json', '--queries', 'q-ints.fvecs', '--k', '5', '--out', 'bad.npy').err).toMatch(/bad\.[0-9a-f]{8}\.shard-1\.idx has 1000 bytes; the manifest says/);
  });

  it('a rebuild over a manifest replaces its shard files (new names) and removes the old ones once the new manifest is in place', () => {
    ok('build', '--input', 'ints.fvecs', '--out', 're.json', '--shards', '3');
    const first = JSON.parse(bytes('re.json').toString()).shards.map((e: { file: string }) => e.file);
    ok('build', '--input', 'ints.fvecs', '--out', 're.json', '--shards', '2');
    const second = JSON.parse(bytes('re.json').toString()).shards.map((e: { file: string }) => e.file);
    expect(second).toHaveLength(2);
    expect(second.some((f: string) => first.includes(f))).toBe(false);
    expect(readdirSync(dir).filter((f) => f.startsWith('re.')).sort()).toEqual(['re.json', ...second].sort());
    ok('search', '--index', 're.json', '--queries', 'q-ints.fvecs', '--k', '5', '--out', 're.npy');
  });

  it('refuses bad --shards, types that cannot be sharded and manifest names (exit 2)', () => {
    writeVectors(join(dir, 'five.fvecs'), ints.subarray(0, 5 * d), 5, d);
    const expectUsage = (re: RegExp, ...args: string[]) => {
      const r = cli(...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err).toMatch(re);
    };
    expectUsage(/--shards must be an integer in \[1, 5\]; got 6/, 'build', '--input', 'five.fvecs', '--out', 'five.json', '--shards', '6');
    expectUsage(/--shards must be an integer in \[1, 5\]; got 0/, 'build', '--input', 'five.fvecs', '--out', 'five.json', '--shards', '0');
    expectUsage(/--out with --shards \(the manifest\) must end in \.json; got five\.idx/, 'build', '--input', 'five.fvecs', '--out', 'five.idx', '--shards', '2');
    expectUsage(/a \.json index is a shard manifest; give --shards S/, 'build', '--input', 'five.fvecs', '--out', 'five.json');
    expectUsage(/--type IVF4,SQ8 cannot be sharded/, 'build', '--input', 'ints.fvecs', '--out', 'sq.json', '--shards', '2', '--type', 'IVF4,SQ8');
    expectUsage(/--distributed and --query-rows search a sharded index/, 'search', '--index', 'one-0.idx', '--queries', 'q-ints.fvecs', '--k', '5', '--out', 'x.npy', '--query-rows', '10');
  });

  it('S = rows: one row a shard still gives the unsharded bytes', () => {
    writeVectors(join(dir, 'six.fvecs'), ints.subarray(0, 6 * d), 6, d);
    ok('build', '--input', 'six.fvecs', '--out', 'six.idx');
    ok('build', '--input', 'six.fvecs', '--out', 'six.json', '--shards', '6');
    ok('search', '--index', 'six.idx', '--queries', 'q-ints.fvecs', '--k', '8', '--out', 'six-one.csv', '--distances', 'six-one-d.csv');
    ok('search', '--index', 'six.json', '--queries', 'q-ints.fvecs', '--k', '8', '--out', 'six-sh.csv', '--distances', 'six-sh-d.csv');
    expect(bytes('six-sh.csv').toString()).toBe(bytes('six-one.csv').toString());
    expect(bytes('six-sh-d.csv').toString()).toBe(bytes('six-one-d.csv').toString());
    expect(bytes('six-sh.csv').toString()).toMatch(/,-1\n/); // k > n: padded
  });
});
