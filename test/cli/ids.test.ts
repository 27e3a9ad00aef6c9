/**
 * The CLI with caller ids: build --ids, search --filter-ids, remove, range-search, and id files
 * that are wrong. End to end through a child process, against the built CLI (scripts/test.sh
 * builds first), each compared with the library doing the same on the same data.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { loadIndex } from '../../src/indexes/load-index.js';
import { readVectors, writeVectors } from '../../src/io/vectors.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { randomSmallInts } from '../../src/common/random.js';
import type { RangeSearchResult } from '../../src/types.js';
import type { SearchParams, VectorIndex } from '../../src/indexes/vector-index.js';
import { cpuBackend } from '../helpers/cpu.js';
import { npyBytes } from '../helpers/files.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-ids-cli-'));
const cli = (...args: string[]) => {
  const r = spawnSync(process.execPath, [join(root, 'dist/cli/main.js'), ...args, '--backend', 'cpu'], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
};
const at = (name: string): string => join(dir, name);

/** A user error: the exit code, a line naming what is wrong, no stack trace, no temporary file left. */
function expectUserError(r: ReturnType<typeof cli>, code: number, pattern: RegExp): void {
  expect(r.code, r.err).toBe(code);
  expect(r.err).toMatch(pattern);
  expect(r.err).not.toMatch(/^\s+at /m);
  expect(readdirSync(dir).filter((f) => f.includes('webgpu-knn-tmp'))).toEqual([]);
}

/** An int64 .npy file (as the CLI writes ids): its shape and values, exactly. */
function readInt64Npy(path: string): { shape: number[]; values: bigint[] } {
  const raw = readFileSync(path);
  const start = 10 + raw.readUInt16LE(8);
  const header = raw.subarray(10, start).toString('latin1');
  expect(header).toContain("'descr': '<i8'");
  const shape = /'shape': \(([^)]*)\)/.exec(header)![1].split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  const data = raw.buffer.slice(raw.byteOffset + start, raw.byteOffset + raw.byteLength);
  return { shape, values: Array.from(new BigInt64Array(data)) };
}

const bytes = (a: BigInt64Array): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

const d = 6;
const n = 300;
const nq = 12;
const x = randomSmallInts(n * d, 31, 15);
const xq = randomSmallInts(nq * d, 32, 15);
writeVectors(at('x.fvecs'), x, n, d);
writeVectors(at('q.npy'), xq, nq, d);
// Caller ids: none equal to its row, every third above 2^32, one at 2^53 - 1.
const ids = BigInt64Array.from({ length: n }, (_, i) => BigInt(1000 + i * 7919) + (i % 3 === 0 ? 2n ** 33n : 0n));
ids[7] = BigInt(Number.MAX_SAFE_INTEGER);
writeFileSync(at('ids.npy'), npyBytes('<i8', `(${n},)`, bytes(ids)));
writeFileSync(at('ids.txt'), Array.from(ids, String).join('\n') + '\n');

/** The library's index over the same data and ids. */
async function libraryIndex(type: 'Flat' | 'IVF4' = 'Flat'): Promise<VectorIndex> {
  if (type === 'Flat') {
    const flat = new FlatIndex(cpuBackend(), { dim: d });
    await flat.addWithIds(x, ids);
    return flat;
  }
  const ivf = new IvfFlatIndex(cpuBackend(), { dim: d, nlist: 4 });
  await ivf.train(x);
  await ivf.addWithIds(x, ids);
  return ivf;
}

/** A search's ids as the CLI wrote them to .npy (int64), as numbers (all exact below 2^53). */
const npyIds = (name: string): number[] => readInt64Npy(at(name)).values.map(Number);

describe('build --ids, then search', () => {
  it('results carry the given ids: .npy int64 and .csv exact, above 2^32 too; equal to the library', async () => {
    let r = cli('build', '--input', 'x.fvecs', '--ids', 'ids.npy', '--out', 'ids.idx');
    expect(r.code, r.err).toBe(0);
    r = cli('search', '--index', 'ids.idx', '--queries', 'q.npy', '--k', '8', '--out', 'nn.npy', '--distances', 'nn.fvecs');
    expect(r.code, r.err).toBe(0);
    const want = await (await libraryIndex()).search(xq, 8);
    expect(readInt64Npy(at('nn.npy')).shape).toEqual([nq, 8]);
    expect(npyIds('nn.npy')).toEqual(Array.from(want.labels));
    expect(Array.from((await readVectors(at('nn.fvecs'))).data)).toEqual(Array.from(want.distances));
    expect(npyIds('nn.npy').some((id) => id > 2 ** 32)).toBe(true);
    // Every result is one of the given ids (never a row number).
    const given = new Set(Array.from(ids, Number));
    expect(npyIds('nn.npy').every((id) => given.has(id))).toBe(true);

    // Searched for the row holding id 2^53 - 1 itself: that id comes first, exactly, in every format.
    writeVectors(at('q7.fvecs'), x.subarray(7 * d, 8 * d), 1, d);
    expect(cli('search', '--index', 'ids.idx', '--queries', 'q7.fvecs', '--k', '2', '--out', 'n7.csv').code).toBe(0);
    expect(readFileSync(at('n7.csv'), 'utf8').split(',')[0]).toBe('9007199254740991');
    expect(cli('search', '--index', 'ids.idx', '--queries', 'q7.fvecs', '--k', '2', '--out', 'n7.jsonl').code).toBe(0);
    expect(readFileSync(at('n7.jsonl'), 'utf8')).toMatch(/^\{"id":0,"neighbors":\[9007199254740991,\d+\]\}\n$/);
    expect(readInt64Npy(at('nn.npy')).values.length).toBe(nq * 8);
    expect(cli('search', '--index', 'ids.idx', '--queries', 'q.npy', '--k', '8', '--out', 'nn.csv').code).toBe(0);
    const csv = readFileSync(at('nn.csv'), 'utf8').trimEnd().split('\n').map((l) => l.split(','));
    expect(csv.flat()).toEqual(Array.from(want.labels, String));
  });

  it('.ivecs refuses an id above 2^31 - 1, by name, and writes nothing', () => {
    const r = cli('search', '--index', 'ids.idx', '--queries', 'q.npy', '--k', '8', '--out', 'nn.ivecs', '--distances', 'd.fvecs');
    expectUserError(r, 1, /nn\.ivecs: id \d+ \(row \d+\) does not fit \.ivecs, which holds int32 \(integers in \[-2147483648, 2147483647\]\); write it to \.npy \(<i8\), \.csv or \.jsonl instead/);
    expect(existsSync(at('nn.ivecs'))).toBe(false);
    expect(existsSync(at('d.fvecs'))).toBe(false);
  });

  it('IVF from a text id file, nprobe = nlist, gives the Flat answer with the same ids', async () => {
    const r = cli('build', '--input', 'x.fvecs', '--ids', 'ids.txt', '--type', 'IVF4,Flat', '--out', 'ivf-ids.idx');
    expect(r.code, r.err).toBe(0);
    expect(cli('search', '--index', 'ivf-ids.idx', '--queries', 'q.npy', '--k', '8', '--nprobe', '4', '--out', 'ivf.npy').code).toBe(0);
    const want = await (await libraryIndex()).search(xq, 8);
    expect(npyIds('ivf.npy')).toEqual(Array.from(want.labels));
  });

  it('--nprobe is passed as a search param: the same as the library with { nprobe }', async () => {
    const lib = await libraryIndex('IVF4');
    for (const nprobe of [1, 2]) {
      expect(cli('search', '--index', 'ivf-ids.idx', '--queries', 'q.npy', '--k', '8', '--nprobe', String(nprobe), '--out', `p${nprobe}.npy`).code).toBe(0);
      expect(npyIds(`p${nprobe}.npy`)).toEqual(Array.from((await lib.search(xq, 8, { nprobe })).labels));
    }
    // Default: the nprobe saved (1 here).
    expect(cli('search', '--index', 'ivf-ids.idx', '--queries', 'q.npy', '--k', '8', '--out', 'pdef.npy').code).toBe(0);
    expect(npyIds('pdef.npy')).toEqual(npyIds('p1.npy'));
    expect(npyIds('p1.npy')).not.toEqual(npyIds('ivf.npy')); // nprobe matters on this data
  });
});

describe('search --filter-ids', () => {
  // 60% allowed (a post-filter by the automatic rule) and 5% (a pre-filter), and one id.
  const cases: [string, BigInt64Array][] = [
    ['most', ids.filter((_, i) => i % 5 !== 0 && i % 5 !== 1)],
    ['few', ids.filter((_, i) => i % 20 === 3)],
    ['one', ids.subarray(7, 8)],
  ];
  for (const [name, allowed] of cases) {
    it(`${name} (${allowed.length} of ${n} allowed): only allowed ids, as the library's filtered search`, async () => {
      writeFileSync(at(`allow-${name}.txt`), Array.from(allowed, String).join('\n'));
      const r = cli('search', '--index', 'ids.idx', '--queries', 'q.npy', '--k', '8', '--filter-ids', `allow-${name}.txt`, '--out', `f-${name}.npy`, '--distances', `f-${name}.csv`);
      expect(r.code, r.err).toBe(0);
      const got = npyIds(`f-${name}.npy`);
      const ok = new Set(Array.from(allowed, Number));
      expect(got.filter((id) => id !== -1 && !ok.has(id))).toEqual([]);
      // Each query gets min(k, allowed) results.
      for (let q = 0; q < nq; q++) expect(got.slice(q * 8, q * 8 + 8).filter((id) => id !== -1)).toHaveLength(Math.min(8, allowed.length));
      const want = await (await libraryIndex()).search(xq, 8, { filter: allowed });
      expect(got).toEqual(Array.from(want.labels));
    });
  }

  it('a filter file in .npy (int32) with ids the index does not hold', async () => {
    // Row 2's id, then 1000 (row 0's id less 2^33), 5 and 6: ids the index does not hold.
    const allowed = Int32Array.from([1000 + 2 * 7919, 1000, 5, 6]);
    expect(ids[2]).toBe(16838n);
    writeFileSync(at('allow.npy'), npyBytes('<i4', '(4,)', new Uint8Array(allowed.buffer)));
    const r = cli('search', '--index', 'ids.idx', '--queries', 'q.npy', '--k', '3', '--filter-ids', 'allow.npy', '--out', 'fa.csv');
    expect(r.code, r.err).toBe(0);
    expect(readFileSync(at('fa.csv'), 'utf8')).toBe('16838,-1,-1\n'.repeat(nq));
  });
});

describe('remove', () => {
  it('removes in place, atomically: ntotal drops, removed ids never come back, the rest as the library', async () => {
    expect(cli('build', '--input', 'x.fvecs', '--ids', 'ids.npy', '--out', 'rm.idx').code).toBe(0);
    const inodeBefore = statSync(at('rm.idx')).ino;
    // 100 ids of the index (every third row), 2 it does not hold, one given twice.
    const gone = ids.filter((_, i) => i % 3 === 1);
    writeFileSync(at('rm.txt'), [...Array.from(gone, String), '5', '6', String(gone[0])].join('\n'));
    const r = cli('remove', '--index', 'rm.idx', '--ids', 'rm.txt');
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(new RegExp(`removed ${gone.length} of the ${gone.length + 2} ids given \\(2 not in the index\\); ntotal ${n} -> ${n - gone.length}; wrote .*rm\\.idx`));
    // Replaced by a rename (a new inode), no temporary file left.
    expect(statSync(at('rm.idx')).ino).not.toBe(inodeBefore);
    expect(readdirSync(dir).filter((f) => f.includes('rm.idx') && f !== 'rm.idx')).toEqual([]);
    const saved = await loadIndex(cpuBackend(), at('rm.idx'));
    expect(saved.ntotal).toBe(n - gone.length);
    // k = everything: the removed ids are nowhere, the others all there; as the library after removeIds.
    expect(cli('search', '--index', 'rm.idx', '--queries', 'q.npy', '--k', String(n), '--out', 'rm.npy').code).toBe(0);
    const got = npyIds('rm.npy');
    const removed = new Set(Array.from(gone, Number));
    expect(got.filter((id) => removed.has(id))).toEqual([]);
    expect(new Set(got.slice(0, n)).size).toBe(n - gone.length + 1); // the live ids and -1
    const lib = await libraryIndex();
    expect(await lib.removeIds(gone)).toBe(gone.length);
    expect(got).toEqual(Array.from((await lib.search(xq, n)).labels));
    // Removing them again removes nothing.
    expect(cli('remove', '--index', 'rm.idx', '--ids', 'rm.txt').err).toMatch(/removed 0 of the 102 ids given/);
  });

  it('--out writes elsewhere and leaves --index as it was; IVF too', async () => {
    expect(cli('build', '--input', 'x.fvecs', '--ids', 'ids.npy', '--type', 'IVF4,Flat', '--nprobe', '4', '--out', 'rm-ivf.idx').code).toBe(0);
    const before = readFileSync(at('rm-ivf.idx'));
    writeFileSync(at('rm2.npy'), npyBytes('<i8', '(3, 1)', bytes(ids.subarray(0, 3))));
    const r = cli('remove', '--index', 'rm-ivf.idx', '--ids', 'rm2.npy', '--out', 'rm-ivf2.idx');
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/removed 3 of the 3 ids given \(0 not in the index\); ntotal 300 -> 297/);
    expect(readFileSync(at('rm-ivf.idx')).equals(before)).toBe(true);
    expect((await loadIndex(cpuBackend(), at('rm-ivf2.idx'))).ntotal).toBe(n - 3);
    expect(cli('search', '--index', 'rm-ivf2.idx', '--queries', 'q.npy', '--k', String(n), '--out', 'rm-ivf.npy').code).toBe(0);
    const lib = await libraryIndex();
    await lib.removeIds(ids.subarray(0, 3));
    expect(npyIds('rm-ivf.npy')).toEqual(Array.from((await lib.search(xq, n)).labels));
  });

  it('a bad ids file, or an output that is an input, leaves the index untouched', () => {
    const before = readFileSync(at('rm-ivf.idx'));
    writeFileSync(at('rm-bad.txt'), '5\n6\nseven\n');
    expectUserError(cli('remove', '--index', 'rm-ivf.idx', '--ids', 'rm-bad.txt'), 1, /rm-bad\.txt: line 3: "seven" is not an id/);
    expectUserError(cli('remove', '--index', 'rm-ivf.idx', '--ids', 'rm-bad.txt', '--out', 'rm-bad.txt'), 2, /--out rm-bad\.txt is the same file as --ids rm-bad\.txt/);
    expectUserError(cli('remove', '--index', 'rm-ivf.idx', '--ids', 'rm-ivf.idx'), 2, /--index rm-ivf\.idx is the same file as --ids rm-ivf\.idx/);
    expectUserError(cli('remove', '--index', 'rm-ivf.idx'), 2, /--ids is required/);
    expect(readFileSync(at('rm-ivf.idx')).equals(before)).toBe(true);
  });
});

/** range-search's CSV output as the library's layout: lims, labels, distances. */
function readRangeCsv(name: string): RangeSearchResult {
  const lines = readFileSync(at(name), 'utf8').trimEnd().split('\n');
  expect(lines[0]).toBe('query,id,distance');
  const rows = lines.slice(1).map((l) => l.split(',').map(Number));
  const lims = new Float64Array(nq + 1);
  for (const [q] of rows) lims[q + 1]++;
  for (let q = 0; q < nq; q++) lims[q + 1] += lims[q];
  for (let i = 1; i < rows.length; i++) expect(rows[i][0]).toBeGreaterThanOrEqual(rows[i - 1][0]); // queries in order
  return { lims, labels: Float64Array.from(rows, (r) => r[1]), distances: Float32Array.from(rows, (r) => r[2]) };
}

function expectSameRange(got: RangeSearchResult, want: RangeSearchResult): void {
  expect(Array.from(got.lims)).toEqual(Array.from(want.lims));
  expect(Array.from(got.labels)).toEqual(Array.from(want.labels));
  expect(Array.from(got.distances)).toEqual(Array.from(want.distances));
}

describe('range-search', () => {
  const radii = [0, 40, 120, 1e9];
  for (const radius of radii) {
    it(`l2 radius ${radius}: every result within it, best first, as the library's rangeSearch`, async () => {
      const r = cli('range-search', '--index', 'ids.idx', '--queries', 'q.npy', '--radius', String(radius), '--out', `r${radius}.csv`);
      expect(r.code, r.err).toBe(0);
      const want = await (await libraryIndex()).rangeSearch(xq, radius);
      const got = readRangeCsv(`r${radius}.csv`);
      expectSameRange(got, want);
      expect(r.err).toMatch(new RegExp(`${want.labels.length} results for ${nq} queries within radius ${radius}; wrote`));
      if (radius === 1e9) expect(got.labels.length).toBe(n * nq); // everything
      if (radius === 40) expect(got.labels.length).toBeGreaterThan(0);
    });
  }

  it('.jsonl, --filter-ids and IVF --nprobe, as the library with the same params', async () => {
    const allowed = ids.filter((_, i) => i % 4 === 0);
    writeFileSync(at('allow-range.txt'), Array.from(allowed, String).join('\n'));
    const cases: [string, string[], SearchParams, () => Promise<VectorIndex>][] = [
      ['ids.idx', ['--filter-ids', 'allow-range.txt'], { filter: allowed }, () => libraryIndex()],
      ['ivf-ids.idx', ['--nprobe', '2'], { nprobe: 2 }, () => libraryIndex('IVF4')],
      ['ivf-ids.idx', ['--nprobe', '4', '--filter-ids', 'allow-range.txt'], { nprobe: 4, filter: allowed }, () => libraryIndex('IVF4')],
    ];
    for (const [index, flags, params, lib] of cases) {
      const r = cli('range-search', '--index', index, '--queries', 'q.npy', '--radius', '120', '--out', 'r.jsonl', ...flags);
      expect(r.code, r.err).toBe(0);
      const rows = readFileSync(at('r.jsonl'), 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as { query: number; id: number; distance: number });
      expect(Object.keys(rows[0])).toEqual(['query', 'id', 'distance']);
      const want = await (await lib()).rangeSearch(xq, 120, params);
      expect(rows.map((o) => o.id)).toEqual(Array.from(want.labels));
      expect(rows.map((o) => o.distance)).toEqual(Array.from(want.distances));
      expect(rows.map((o) => o.query)).toEqual(Array.from(want.labels, (_, j) => want.lims.findIndex((l) => l > j) - 1));
      if (params.filter) {
        const ok = new Set(Array.from(allowed, Number));
        expect(rows.every((o) => ok.has(o.id))).toBe(true);
      }
    }
  });

  it('--max-candidates: a radius letting through more fails (exit 1), naming the cap, and writes nothing', () => {
    expectUserError(cli('range-search', '--index', 'ids.idx', '--queries', 'q.npy', '--radius', '1e9', '--max-candidates', '50', '--out', 'cap.csv'), 1, /lets through more than 50 candidates/);
    expect(existsSync(at('cap.csv'))).toBe(false);
  });

  it('checks --radius by metric, and the output type, before any work', () => {
    expectUserError(cli('range-search', '--index', 'ids.idx', '--queries', 'q.npy', '--radius=-1', '--out', 'r.csv'), 2, /--radius must be a squared L2 distance in \[0, 1e\+38\] \(decimal\); got -1/);
    expectUserError(cli('range-search', '--index', 'ids.idx', '--queries', 'q.npy', '--radius', 'near', '--out', 'r.csv'), 2, /--radius must be a squared L2 distance in \[0, 1e\+38\] \(decimal\); got near/);
    expectUserError(cli('range-search', '--index', 'ids.idx', '--queries', 'q.npy', '--out', 'r.csv'), 2, /--radius is required/);
    expectUserError(cli('range-search', '--index', 'ids.idx', '--queries', 'q.npy', '--radius', '1', '--out', 'r.npy'), 2, /--out must end in \.csv, \.jsonl; got r\.npy/);
    expectUserError(cli('range-search', '--index', 'ivf-ids.idx', '--queries', 'q.npy', '--radius', '1', '--nprobe', '5', '--out', 'r.csv'), 2, /--nprobe must be an integer in \[1, 4\]; got 5/);
  });

  it('cosine radius is a similarity in [-1, 1]; ip any finite number', async () => {
    expect(cli('build', '--input', 'x.fvecs', '--metric', 'cosine', '--out', 'cos.idx').code).toBe(0);
    expectUserError(cli('range-search', '--index', 'cos.idx', '--queries', 'q.npy', '--radius', '1.5', '--out', 'c.csv'), 2, /--radius must be a cosine in \[-1, 1\] \(decimal\); got 1\.5/);
    const r = cli('range-search', '--index', 'cos.idx', '--queries', 'q.npy', '--radius', '0.9', '--out', 'c.csv');
    expect(r.code, r.err).toBe(0);
    const cos = new FlatIndex(cpuBackend(), { dim: d, metric: 'cosine' });
    await cos.add(x);
    expectSameRange(readRangeCsv('c.csv'), await cos.rangeSearch(xq, 0.9));
    expect(cli('build', '--input', 'x.fvecs', '--metric', 'ip', '--out', 'ip.idx').code).toBe(0);
    expectUserError(cli('range-search', '--index', 'ip.idx', '--queries', 'q.npy', '--radius', 'Infinity', '--out', 'c.csv'), 2, /--radius must be an inner product in \[-1e\+38, 1e\+38\] \(decimal\); got Infinity/);
    expect(cli('range-search', '--index', 'ip.idx', '--queries', 'q.npy', '--radius=-1e3', '--out', 'ip.csv').code).toBe(0);
    expect(readRangeCsv('ip.csv').labels.length).toBe(n * nq); // every inner product here is >= 0
  });
});

describe('dedup --against', () => {
  it('new rows against a saved corpus: every (row, corpus id) within the threshold, as the library\'s rangeSearch', async () => {
    // New rows: copies of corpus rows 3 and 250, then the queries (which are not in the corpus).
    const fresh = new Float32Array((2 + nq) * d);
    fresh.set(x.subarray(3 * d, 4 * d), 0);
    fresh.set(x.subarray(250 * d, 251 * d), d);
    fresh.set(xq, 2 * d);
    writeVectors(at('new.fvecs'), fresh, 2 + nq, d);
    expect(cli('build', '--input', 'x.fvecs', '--metric', 'cosine', '--ids', 'ids.npy', '--out', 'corpus.idx').code).toBe(0);
    const r = cli('dedup', '--input', 'new.fvecs', '--against', 'corpus.idx', '--metric', 'cosine', '--threshold', '0.97', '--out', 'against.csv');
    expect(r.code, r.err).toBe(0);
    const lines = readFileSync(at('against.csv'), 'utf8').trimEnd().split('\n');
    expect(lines[0]).toBe('i,j,score');
    const rows = lines.slice(1).map((l) => l.split(',').map(Number));
    const lib = new FlatIndex(cpuBackend(), { dim: d, metric: 'cosine' });
    await lib.addWithIds(x, ids);
    const want = await lib.rangeSearch(fresh, 0.97);
    expect(rows.map((row) => row[1])).toEqual(Array.from(want.labels));
    expect(rows.map((row) => row[2])).toEqual(Array.from(want.distances));
    // Each copy finds its original (by its caller id) first, at cosine exactly 1.
    expect(rows.find((row) => row[0] === 0)).toEqual([0, Number(ids[3]), 1]);
    expect(rows.find((row) => row[0] === 1)).toEqual([1, Number(ids[250]), 1]);
    expect(r.err).toMatch(new RegExp(`${want.labels.length} pairs of ${2 + nq} new rows against ${n} indexed`));
  });

  it('refuses a metric other than the index\'s, and --clusters, before any work', () => {
    expectUserError(cli('dedup', '--input', 'new.fvecs', '--against', 'ids.idx', '--metric', 'cosine', '--threshold', '0.9', '--out', 'a.csv'), 2, /--against ids\.idx is a l2 index; --metric is cosine/);
    expectUserError(cli('dedup', '--input', 'new.fvecs', '--against', 'corpus.idx', '--metric', 'cosine', '--threshold', '0.9', '--out', 'a.csv', '--clusters', 'c.json'), 2, /--clusters .* does not apply with --against/);
  });
});

describe("a JSON Lines input's own ids", () => {
  // The same rows as x.fvecs, each line with its caller id (numbers, and decimal strings as
  // writeVectors writes them).
  const line = (i: number, id?: unknown): string => JSON.stringify({ ...(id === undefined ? {} : { id }), vector: Array.from(x.subarray(i * d, (i + 1) * d)) });
  const jsonl = (name: string, idOf: (i: number) => unknown): void => writeFileSync(at(name), Array.from({ length: n }, (_, i) => line(i, idOf(i))).join('\n') + '\n');
  jsonl('x-ids.jsonl', (i) => (i % 2 ? String(ids[i]) : Number(ids[i])));

  it('build, build --shards and knn-graph use them; as --ids gives the same ids', async () => {
    expect(cli('build', '--input', 'x-ids.jsonl', '--out', 'jl.idx').code).toBe(0);
    expect(cli('search', '--index', 'jl.idx', '--queries', 'q.npy', '--k', '8', '--out', 'jl.npy').code).toBe(0);
    const want = await (await libraryIndex()).search(xq, 8);
    expect(npyIds('jl.npy')).toEqual(Array.from(want.labels));
    const s = cli('build', '--input', 'x-ids.jsonl', '--shards', '3', '--out', 'jl.json');
    expect(s.code, s.err).toBe(0);
    expect(cli('search', '--index', 'jl.json', '--queries', 'q.npy', '--k', '8', '--out', 'jl-sh.npy').code).toBe(0);
    expect(npyIds('jl-sh.npy')).toEqual(Array.from(want.labels));
    // knn-graph: each row's neighbours by their ids, the row itself left out (by its id): the
    // index's 5 nearest of each row without the row's own id (or the fifth, where ties pushed it out).
    expect(cli('knn-graph', '--input', 'x-ids.jsonl', '--k', '4', '--out', 'jl-g.npy').code).toBe(0);
    expect(cli('search', '--index', 'jl.idx', '--queries', 'x.fvecs', '--k', '5', '--out', 'jl-5.npy').code).toBe(0);
    const five = npyIds('jl-5.npy');
    const graph = Array.from({ length: n }, (_, i) => {
      const row = five.slice(i * 5, i * 5 + 5);
      const own = row.indexOf(Number(ids[i]));
      return own === -1 ? row.slice(0, 4) : row.filter((_, j) => j !== own);
    });
    expect(npyIds('jl-g.npy')).toEqual(graph.flat());
    expect(graph.filter((row, i) => row.includes(Number(ids[i])))).toEqual([]);
    expect(cli('knn-graph', '--input', 'x-ids.jsonl', '--queries', 'q.npy', '--k', '8', '--out', 'jl-q.npy').code).toBe(0);
    expect(npyIds('jl-q.npy')).toEqual(Array.from(want.labels));
    // dedup's pairs are rows (0-based, i < j), not the ids: the same output as from x.fvecs.
    expect(cli('dedup', '--input', 'x-ids.jsonl', '--metric', 'l2', '--threshold', '20', '--out', 'jl-pairs.csv').code).toBe(0);
    expect(cli('dedup', '--input', 'x.fvecs', '--metric', 'l2', '--threshold', '20', '--out', 'rows-pairs.csv').code).toBe(0);
    expect(readFileSync(at('jl-pairs.csv'), 'utf8')).toBe(readFileSync(at('rows-pairs.csv'), 'utf8'));
    expect(readFileSync(at('jl-pairs.csv'), 'utf8').split('\n').length).toBeGreaterThan(3);
  });

  it('refuses ids on some lines only, a bad or repeated id, and --ids beside them, naming the line', () => {
    const variant = (name: string, edit: (lines: string[]) => void): string => {
      const lines = readFileSync(at('x-ids.jsonl'), 'utf8').trimEnd().split('\n');
      edit(lines);
      writeFileSync(at(name), lines.join('\n') + '\n');
      return name;
    };
    const some = variant('some.jsonl', (l) => (l[5] = line(5)));
    expectUserError(cli('build', '--input', some, '--out', 'b.idx'), 1, /some\.jsonl: line 6 has no 'id', but line 1 has one; give every line an id, or none \(the ids are then the row numbers\)/);
    const late = variant('late.jsonl', (l) => {
      for (let i = 0; i < n; i++) l[i] = line(i, i === 9 ? 77 : undefined);
    });
    expectUserError(cli('knn-graph', '--input', late, '--k', '2', '--out', 'b.csv'), 1, /late\.jsonl: line 10 has an 'id', but line 1 has none; give every line an id, or none/);
    const bad = variant('bad-id.jsonl', (l) => (l[3] = line(3, 'a7')));
    expectUserError(cli('build', '--input', bad, '--out', 'b.idx'), 1, /bad-id\.jsonl: line 4: "a7" is not an id; expected an integer in \[0, 9007199254740991\]/);
    // A number that JSON.parse rounds to an integer is not one as written (the hostile pass's case).
    const frac = variant('frac-id.jsonl', (l) => (l[6] = line(6, 0).replace('"id":0', '"id":9007199254740990.6')));
    expectUserError(cli('build', '--input', frac, '--out', 'b.idx'), 1, /frac-id\.jsonl: line 7: 9007199254740990\.6 is not an id; expected an integer in \[0, 9007199254740991\]/);
    const twice = variant('twice.jsonl', (l) => (l[8] = line(8, Number(ids[2]))));
    expectUserError(cli('build', '--input', twice, '--shards', '2', '--out', 'b.json'), 1, new RegExp(`twice\\.jsonl: line 9: id ${ids[2]} appears twice \\(first at line 3\\)`));
    // knn-graph --distributed writes row numbers (its shards are built with them): refused before any job is queued.
    const distributed = cli('knn-graph', '--input', 'x-ids.jsonl', '--k', '2', '--out', 'b.csv', '--distributed', 'redis://127.0.0.1:1');
    expectUserError(distributed, 2, /knn-graph --distributed writes row numbers; --input x-ids\.jsonl has 'id' fields: run without --distributed to have its ids/);
    const both = cli('build', '--input', 'x-ids.jsonl', '--ids', 'ids.npy', '--out', 'b.idx');
    expectUserError(both, 2, /--ids ids\.npy and the 'id' fields of --input x-ids\.jsonl both give the vectors' ids; give one of them/);
    expect(both.err).not.toMatch(/backend:/);
    expect(existsSync(at('b.idx')) || existsSync(at('b.json'))).toBe(false);
  });
});

describe('id files that are wrong', () => {
  it('build: a bad line is exit 1 naming file, line and value; a count mismatch is exit 2 naming both counts', () => {
    writeFileSync(at('bad-ids.txt'), [...Array.from(ids.subarray(0, 10), String), '12x', ...Array.from(ids.subarray(11), String)].join('\n'));
    expectUserError(cli('build', '--input', 'x.fvecs', '--ids', 'bad-ids.txt', '--out', 'b.idx'), 1, /bad-ids\.txt: line 11: "12x" is not an id; expected an integer in \[0, 9007199254740991\]/);
    writeFileSync(at('neg.txt'), '1\n-2\n');
    expectUserError(cli('build', '--input', 'x.fvecs', '--ids', 'neg.txt', '--out', 'b.idx'), 1, /neg\.txt: line 2: "-2" is not an id/);
    writeFileSync(at('big.txt'), '9007199254740992\n');
    expectUserError(cli('build', '--input', 'x.fvecs', '--ids', 'big.txt', '--out', 'b.idx'), 1, /big\.txt: line 1: "9007199254740992" is not an id/);
    writeFileSync(at('few.txt'), '1\n2\n3\n');
    const few = cli('build', '--input', 'x.fvecs', '--ids', 'few.txt', '--out', 'b.idx');
    expectUserError(few, 2, /--ids few\.txt holds 3 ids; --input x\.fvecs has 300 vectors \(one id per vector expected\)/);
    expect(few.err).not.toMatch(/backend:/); // refused before the backend was created
    writeFileSync(at('twice.txt'), [...Array.from(ids.subarray(0, 299), String), String(ids[4])].join('\n'));
    expectUserError(cli('build', '--input', 'x.fvecs', '--ids', 'twice.txt', '--out', 'b.idx'), 1, new RegExp(`twice\\.txt: line 300: id ${ids[4]} appears twice \\(first at line 5\\)`));
    writeFileSync(at('float.npy'), npyBytes('<f8', '(300,)', new Uint8Array(2400)));
    expectUserError(cli('build', '--input', 'x.fvecs', '--ids', 'float.npy', '--out', 'b.idx'), 1, /float\.npy: dtype <f8 is not supported for ids; expected int64 \(<i8\)/);
    writeFileSync(at('neg.npy'), npyBytes('<i8', '(2,)', bytes(BigInt64Array.from([3n, -3n]))));
    expectUserError(cli('build', '--input', 'x.fvecs', '--ids', 'neg.npy', '--out', 'b.idx'), 1, /neg\.npy: element 1: -3 is not an id/);
    expectUserError(cli('build', '--input', 'x.fvecs', '--ids', 'missing.txt', '--out', 'b.idx'), 1, /missing\.txt: cannot read: no such file or directory/);
    expectUserError(cli('build', '--input', 'x.fvecs', '--ids', 'ids.txt', '--out', 'ids.txt'), 2, /--out ids\.txt is the same file as --ids ids\.txt/);
    expect(existsSync(at('b.idx'))).toBe(false);
  });

  it('search and range-search: a bad filter file is exit 1 naming it, nothing written', () => {
    writeFileSync(at('bad-filter.csv'), '1\n\n2.5\n');
    expectUserError(cli('search', '--index', 'ids.idx', '--queries', 'q.npy', '--k', '2', '--filter-ids', 'bad-filter.csv', '--out', 'bf.npy'), 1, /bad-filter\.csv: line 3: "2\.5" is not an id/);
    expectUserError(cli('range-search', '--index', 'ids.idx', '--queries', 'q.npy', '--radius', '1', '--filter-ids', 'bad-filter.csv', '--out', 'bf.csv'), 1, /bad-filter\.csv: line 3: "2\.5" is not an id/);
    expectUserError(cli('search', '--index', 'ids.idx', '--queries', 'q.npy', '--k', '2', '--filter-ids', 'bf.npy', '--out', 'bf.npy'), 2, /--out bf\.npy is the same file as --filter-ids bf\.npy/);
    expect(existsSync(at('bf.npy'))).toBe(false);
    expect(existsSync(at('bf.csv'))).toBe(false);
  });
});

describe('help', () => {
  it('documents every new command and flag', () => {
    const top = cli('--help');
    expect(top.out).toMatch(/^ {2}remove /m);
    expect(top.out).toMatch(/^ {2}range-search /m);
    const help = (c: string): string => cli(c, '--help').out;
    expect(help('build')).toMatch(/--ids FILE/);
    expect(help('search')).toMatch(/--filter-ids FILE/);
    expect(help('search')).toMatch(/\.ivecs \(int32:/);
    for (const c of ['build', 'search', 'remove', 'range-search']) expect(help(c)).toMatch(/Id files: \.npy of int64/);
    expect(help('remove')).toMatch(/usage: webgpu-knn remove --index INDEX --ids FILE \[--out INDEX2\]/);
    expect(help('range-search')).toMatch(/--radius R +l2: a squared distance in \[0, 1e38\]; ip: a number in \[-1e38, 1e38\]; cosine:/);
    expect(help('dedup')).toMatch(/--against INDEX +instead of pairs within the input/);
    expect(help('range-search')).toMatch(/header query,id,distance/);
  });
});
