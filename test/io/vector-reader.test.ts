/**
 * The block reader: every format read in small blocks gives the rows the whole-file read gives,
 * with rows and dim known at open; a pass can be repeated and abandoned (the file is closed);
 * errors found while reading name the row, byte or line; and a .npy over 4 GiB reads exactly.
 */
import { closeSync, existsSync, ftruncateSync, mkdirSync, mkdtempSync, openSync, readFileSync as readFileBytes, readdirSync, readlinkSync, realpathSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';

import { npyHeader } from '../../src/io/npy.js';
import { type VectorReader, openVectors, readIvecs, readVectors } from '../../src/io/vector-reader.js';
import { writeVectors } from '../../src/io/vectors.js';
import { randomFloats } from '../../src/common/random.js';

import { npyBytes } from '../helpers/files.js';
import { FileError, InvalidArgumentError } from '../../src/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-reader-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const file = (name: string, content: Uint8Array | string): string => {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
};

/** Whether this process has `path` open (Linux: /proc/self/fd). */
const canSeeFds = existsSync('/proc/self/fd');
const isOpen = (path: string): boolean =>
  readdirSync('/proc/self/fd').some((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === realpathSync(path);
    } catch {
      return false; // closed meanwhile
    }
  });

/** Every block of a pass, checked to follow on from the one before, and their rows concatenated. */
async function pass(reader: VectorReader, blockRows?: number): Promise<{ shape: number[][]; values: number[]; ids: string[] | null }> {
  const shape: number[][] = [];
  const values: number[] = [];
  let ids: string[] | null = null;
  for await (const block of reader.blocks({ blockRows })) {
    expect(block.start).toBe(shape.length ? shape.at(-1)![0] + shape.at(-1)![1] : 0);
    expect(block.data.length).toBe(block.rows * reader.dim);
    shape.push([block.start, block.rows]);
    values.push(...block.data);
    if (block.ids) {
      expect(block.ids).toHaveLength(block.rows);
      ids = [...(ids ?? []), ...block.ids];
    }
  }
  return { shape, values, ids };
}

/** An IDX file of `n` images of 2 x 3 unsigned bytes, with `rowsInData` of them present. */
function idxBytes(n: number, rowsInData = n): Uint8Array {
  const out = new Uint8Array(16 + rowsInData * 6);
  const view = new DataView(out.buffer);
  view.setUint32(0, 0x0803);
  view.setUint32(4, n);
  view.setUint32(8, 2);
  view.setUint32(12, 3);
  for (let i = 16; i < out.length; i++) out[i] = (i * 7) % 256;
  return out;
}

describe('openVectors and blocks', () => {
  const n = 10;
  const x = randomFloats(n * 4, 1);
  const ints = Int32Array.from({ length: n * 4 }, (_, i) => i * 1000 - 7);
  const bvecs = new Uint8Array(n * 7);
  for (let i = 0; i < n; i++) bvecs.set([3, 0, 0, 0, i, 255 - i, 2 * i], i * 7);
  const f64 = Float64Array.from({ length: n * 3 }, (_, i) => i / 8 - 1);
  const idx = idxBytes(n);
  const jsonl =
    '{"id": "a", "embedding": [1, 2]}\n\n{"vector": [3, 4]}\r\n  \n' +
    Array.from({ length: 8 }, (_, i) => JSON.stringify({ id: i * 10, embedding: [i, 10 - i] })).join('\n');
  const cases: { name: string; make: () => string; format: string; dim: number; values: number[]; ids?: string[] }[] = [
    { name: 'x.fvecs', make: () => (writeVectors(join(dir, 'x.fvecs'), x, n, 4), join(dir, 'x.fvecs')), format: '.fvecs', dim: 4, values: Array.from(x) },
    { name: 'x.ivecs', make: () => (writeVectors(join(dir, 'x.ivecs'), ints, n, 4), join(dir, 'x.ivecs')), format: '.ivecs', dim: 4, values: Array.from(ints) },
    { name: 'x.bvecs', make: () => file('x.bvecs', bvecs), format: '.bvecs', dim: 3, values: Array.from({ length: n * 3 }, (_, k) => [Math.floor(k / 3), 255 - Math.floor(k / 3), 2 * Math.floor(k / 3)][k % 3]) },
    { name: 'x.npy (<f4)', make: () => (writeVectors(join(dir, 'x.npy'), x, n, 4), join(dir, 'x.npy')), format: '.npy', dim: 4, values: Array.from(x) },
    { name: 'y.npy (<f8)', make: () => file('y.npy', npyBytes('<f8', `(${n}, 3)`, new Uint8Array(f64.buffer))), format: '.npy', dim: 3, values: Array.from(f64) },
    { name: 'IDX', make: () => file('t-idx3-ubyte', idx), format: 'idx', dim: 6, values: Array.from(idx.subarray(16)) },
    { name: 'gzip IDX', make: () => file('t-idx3-ubyte.gz', gzipSync(idx)), format: 'idx.gz', dim: 6, values: Array.from(idx.subarray(16)) },
    {
      name: 'x.jsonl',
      make: () => file('x.jsonl', jsonl),
      format: '.jsonl',
      dim: 2,
      values: [1, 2, 3, 4, ...Array.from({ length: 8 }, (_, i) => [i, 10 - i]).flat()],
      ids: ['a', '1', ...Array.from({ length: 8 }, (_, i) => String(i * 10))],
    },
  ];

  for (const c of cases) {
    it(`${c.name}: blocks of 3 rows give the whole file's rows, pass after pass`, async () => {
      const path = c.make();
      const reader = await openVectors(path);
      expect([reader.path, reader.format, reader.rows, reader.dim, reader.bytes]).toEqual([path, c.format, n, c.dim, statSync(path).size]);
      const first = await pass(reader, 3);
      expect(first.shape).toEqual([[0, 3], [3, 3], [6, 3], [9, 1]]);
      expect(first.values).toEqual(c.values);
      expect(first.ids).toEqual(c.ids ?? null);
      expect(await pass(reader, 3)).toEqual(first);
      const whole = await readVectors(path);
      expect([whole.n, whole.d, whole.ids]).toEqual([n, c.dim, c.ids ?? null]);
      expect(Array.from(whole.data)).toEqual(c.values);
      // The default block (16 MiB) and a block larger than the file: one block.
      expect((await pass(reader)).shape).toEqual([[0, n]]);
      expect((await pass(reader, 1000)).shape).toEqual([[0, n]]);
      expect((await pass(reader, 1)).shape).toHaveLength(n);
    });
  }

  it('reports progress after each block, up to the whole file', async () => {
    for (const c of cases) {
      const path = c.make();
      const reader = await openVectors(path);
      const seen: number[][] = [];
      for await (const _ of reader.blocks({ blockRows: 4, onProgress: (done, total) => seen.push([done, total]) })) expect(seen).not.toHaveLength(0);
      expect(seen, c.name).toHaveLength(3);
      expect(seen.every(([, total]) => total === reader.bytes), c.name).toBe(true);
      expect(seen.map(([done]) => done), c.name).toEqual(seen.map(([done]) => done).sort((a, b) => a - b));
      expect(seen.at(-1)![0], c.name).toBe(reader.bytes);
    }
  });

  it.skipIf(!canSeeFds)('closes the file when a pass ends, is abandoned or fails', async () => {
    for (const c of cases) {
      const path = c.make();
      const reader = await openVectors(path);
      expect(isOpen(path), c.name).toBe(false);
      for await (const block of reader.blocks({ blockRows: 2 })) {
        expect(isOpen(path), c.name).toBe(true);
        if (block.start === 2) break;
      }
      expect(isOpen(path), c.name).toBe(false);
      await pass(reader, 3);
      expect(isOpen(path), c.name).toBe(false);
      // An iterator never started opens nothing; one returned early closes.
      reader.blocks();
      const iterator = reader.blocks({ blockRows: 1 });
      await iterator.next();
      expect(isOpen(path), c.name).toBe(true);
      await iterator.return!();
      expect(isOpen(path), c.name).toBe(false);
    }
    const bad = file('bad-row.fvecs', new Uint8Array([1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]));
    await expect(pass(await openVectors(bad))).rejects.toThrow(/row 1 at byte 8 has dim 2/);
    expect(isOpen(bad)).toBe(false);
  });

  it('empty files: 0 rows of dim 0, no blocks', async () => {
    for (const [name, ids] of [['e.fvecs', null], ['e.jsonl', []]] as const) {
      const path = file(name, name.endsWith('.jsonl') ? '\n  \n' : '');
      const reader = await openVectors(path);
      expect([reader.rows, reader.dim]).toEqual([0, 0]);
      expect((await pass(reader)).shape).toEqual([]);
      expect(await readVectors(path)).toEqual({ data: new Float32Array(0), n: 0, d: 0, ids });
    }
  });

  it('readIvecs keeps int32 values exact; readVectors gives them as float32', async () => {
    const big = new Int32Array([2 ** 24 + 1, -(2 ** 31), 2 ** 31 - 1, 5]);
    writeVectors(join(dir, 'big.ivecs'), big, 2, 2);
    const exact = await readIvecs(join(dir, 'big.ivecs'));
    expect([exact.n, exact.d]).toEqual([2, 2]);
    expect(Array.from(exact.data)).toEqual(Array.from(big));
    expect(Array.from((await readVectors(join(dir, 'big.ivecs'))).data)).toEqual(Array.from(Float32Array.from(big)));
    await expect(readIvecs(join(dir, 'x.fvecs'))).rejects.toThrow(/expected an .ivecs file/);
  });

  it('blockRows must be a positive integer', async () => {
    const reader = await openVectors(join(dir, 'x.fvecs'));
    for (const blockRows of [0, -1, 1.5, NaN]) expect(() => reader.blocks({ blockRows })).toThrow(InvalidArgumentError);
  });
});

describe('errors found while reading blocks', () => {
  it('.fvecs: a bad dim in the second block names its row and byte; the first block came through', async () => {
    writeVectors(join(dir, 'r.fvecs'), randomFloats(10 * 4, 2), 10, 4);
    const bytes = statSync(join(dir, 'r.fvecs')).size;
    const fd = openSync(join(dir, 'r.fvecs'), 'r+');
    writeSync(fd, new Uint8Array(new Int32Array([7]).buffer), 0, 4, 4 * 20); // row 4 (20-byte rows)
    closeSync(fd);
    const reader = await openVectors(join(dir, 'r.fvecs')); // open reads only the first dim
    expect([reader.rows, reader.dim, reader.bytes]).toEqual([10, 4, bytes]);
    const starts: number[] = [];
    const read = async (): Promise<void> => {
      for await (const block of reader.blocks({ blockRows: 3 })) starts.push(block.start);
    };
    await expect(read()).rejects.toThrow(/r\.fvecs: row 4 at byte 80 has dim 7; expected 4/);
    expect(starts).toEqual([0]);
    await expect(readVectors(join(dir, 'r.fvecs'))).rejects.toThrow(/row 4 at byte 80 has dim 7; expected 4/);
  });

  it('a file changed after it was opened is refused at the next pass (an IVF build reads twice)', async () => {
    writeVectors(join(dir, 'cut.fvecs'), randomFloats(10 * 4, 3), 10, 4);
    writeVectors(join(dir, 'cut.npy'), randomFloats(10 * 4, 3), 10, 4);
    const fvecs = await openVectors(join(dir, 'cut.fvecs'));
    const npy = await openVectors(join(dir, 'cut.npy'));
    const npyEnd = npy.bytes;
    const cut = (path: string, size: number): void => {
      const fd = openSync(path, 'r+');
      ftruncateSync(fd, size);
      closeSync(fd);
    };
    cut(join(dir, 'cut.fvecs'), 130);
    cut(join(dir, 'cut.npy'), npyEnd - 20);
    await expect(pass(fvecs, 3)).rejects.toThrow(/cut\.fvecs: the file changed since it was opened \(200 bytes then, 130 now\); run again/);
    await expect(pass(npy, 3)).rejects.toThrow(new RegExp(`cut\\.npy: the file changed since it was opened \\(${npyEnd} bytes then, ${npyEnd - 20} now\\)`));
  });

  it('JSON Lines: the line number of a bad row in a later block, counting blank lines', async () => {
    const lines = ['{"embedding": [1, 2]}', '', '{"embedding": [3, 4]}', '{"embedding": [5, 6]}', ''];
    const make = (name: string, badLine: string): Promise<VectorReader> =>
      openVectors(file(name, [...lines, badLine, '{"embedding": [7, 8]}'].join('\n') + '\n'));
    const cases: [string, string, RegExp][] = [
      ['dim.jsonl', '{"embedding": [1, 2, 3]}', /dim\.jsonl: line 6 has 3 values; expected 2 \(as on the first line\)/],
      ['json.jsonl', '{"embedding": [1, 2]', /json\.jsonl: line 6 is not valid JSON \(/],
      ['none.jsonl', '{"embedding": [1, "2"]}', /none\.jsonl: line 6 has no numeric 'embedding' \(or 'vector'\) array/],
      ['null.jsonl', 'null', /null\.jsonl: line 6 has no numeric 'embedding' \(or 'vector'\) array/],
    ];
    for (const [name, badLine, message] of cases) {
      const reader = await make(name, badLine); // the count does not parse the rows after the first
      expect([reader.rows, reader.dim]).toEqual([5, 2]);
      const starts: number[] = [];
      const read = async (): Promise<void> => {
        for await (const block of reader.blocks({ blockRows: 2 })) starts.push(block.start);
      };
      await expect(read()).rejects.toThrow(message);
      expect(starts).toEqual([0]);
    }
    // The first row is parsed at open, for the dim.
    await expect(openVectors(file('first.jsonl', '\n\n{"embedding": []}\n'))).rejects.toThrow(/first\.jsonl: line 3 has 0 values; expected 0/);
    await expect(openVectors(file('first2.jsonl', '\n{"id": 3}\n'))).rejects.toThrow(/first2\.jsonl: line 2 has no numeric 'embedding'/);
  });

  it('gzip IDX: data shorter than the header declares, or a broken gzip, is refused at open', async () => {
    const short = file('s-idx3-ubyte.gz', gzipSync(idxBytes(10, 5)));
    await expect(openVectors(short)).rejects.toThrow(/s-idx3-ubyte\.gz: declares 10 x 6 \(240 B of float32\) but holds 30 bytes of data once decompressed \(60 needed\)/);
    await expect(openVectors(file('n-idx3-ubyte.gz', 'not gzip at all'))).rejects.toThrow(/n-idx3-ubyte\.gz: not a valid gzip file \(incorrect header check\)/);
    // Cut in the middle of the compressed stream: the header decompresses, the rows do not.
    const big = idxBytes(20_000);
    for (let i = 16; i < big.length; i++) big[i] = (i * 2654435761) >>> 24; // hardly compressible
    const gz = gzipSync(big);
    const cut = file('c-idx3-ubyte.gz', gz.subarray(0, gz.length >> 1));
    await expect(openVectors(cut)).rejects.toThrow(/c-idx3-ubyte\.gz: not a valid gzip file \(unexpected end of file\)/);
  });

  it('bytes after the declared data are refused, naming how many: IDX (plain and gzip) and .npy', async () => {
    const tail = (bytes: Uint8Array, extra: number): Uint8Array => Uint8Array.from([...bytes, ...new Uint8Array(extra).fill(9)]);
    const idx = idxBytes(10); // 10 x 6 bytes after a 16-byte header: the data ends at byte 76
    await expect(openVectors(file('t1-idx3-ubyte', tail(idx, 5)))).rejects.toThrow('t1-idx3-ubyte: 5 bytes after the data: 10 x 6 bytes end at byte 76; the file has 81 bytes');
    await expect(openVectors(file('t2-idx3-ubyte.gz', gzipSync(tail(idx, 1))))).rejects.toThrow(
      't2-idx3-ubyte.gz: 1 byte after the data once decompressed: 10 x 6 bytes end at byte 76; the data has 77 bytes',
    );
    // A whole image more than declared is extra bytes too (the header's count is the file's rows).
    await expect(openVectors(file('t3-idx3-ubyte.gz', gzipSync(tail(idx, 6))))).rejects.toThrow('t3-idx3-ubyte.gz: 6 bytes after the data once decompressed');
    const npy = npyBytes('<f4', '(2, 2)', new Uint8Array(16));
    await expect(openVectors(file('t.npy', tail(npy, 3)))).rejects.toThrow(`t.npy: 3 bytes after the data: 2 x 2 <f4 ends at byte ${npy.length}; the file has ${npy.length + 3} bytes`);
    // TEXMEX files have no row count: bytes that are not a whole row are refused; exact files open.
    const fvecs = new Uint8Array(readFileBytes(join(dir, 'x.fvecs')));
    await expect(openVectors(file('t.fvecs', tail(fvecs, 3)))).rejects.toThrow(/t\.fvecs: truncated: \d+ bytes is not a whole number of 20-byte rows/);
    await expect(openVectors(file('t.bvecs', Uint8Array.from([3, 0, 0, 0, 1, 2, 3, 9])))).rejects.toThrow(/t\.bvecs: truncated: 8 bytes is not a whole number of 7-byte rows/);
    for (const [name, bytes] of [['e-idx3-ubyte', idx], ['e-idx3-ubyte.gz', gzipSync(idx)], ['e.npy', npy]] as const) {
      const r = await openVectors(file(name, bytes));
      expect([r.rows, r.dim]).toEqual(name === 'e.npy' ? [2, 2] : [10, 6]);
    }
  });

  it('a missing file, a folder, an unknown type', async () => {
    await expect(openVectors(join(dir, 'missing.fvecs'))).rejects.toThrow(FileError);
    await expect(openVectors(join(dir, 'missing.fvecs'))).rejects.toThrow(/missing\.fvecs: cannot read: no such file or directory \(ENOENT\)/);
    mkdirSync(join(dir, 'folder.npy'));
    await expect(readVectors(join(dir, 'folder.npy'))).rejects.toThrow(/folder\.npy: cannot read: is a directory, not a file \(EISDIR\)/);
    await expect(openVectors(join(dir, 'v.txt'))).rejects.toThrow(/v\.txt: unknown vector file type '\.txt'; expected one of \.fvecs, \.bvecs, \.ivecs, \.npy, \.jsonl, IDX/);
  });
});

describe('a declared shape is never trusted', () => {
  /** An IDX header declaring `n` images of 4 x 4 bytes, then `have` bytes of data. */
  const declaring = (n: number, have: number): Uint8Array => {
    const out = idxBytes(0);
    const bytes = new Uint8Array(16 + have);
    bytes.set(out);
    const view = new DataView(bytes.buffer);
    view.setUint32(4, n);
    view.setUint32(8, 4);
    view.setUint32(12, 4);
    for (let i = 16; i < bytes.length; i++) bytes[i] = (i * 2654435761) >>> 24; // so that it stays about 1 KB compressed
    return bytes;
  };

  it('a 1 KB gzip IDX declaring 2e9 x 16 is refused at open, having decompressed only what it holds', async () => {
    const gz = gzipSync(declaring(2_000_000_000, 1000));
    expect(gz.length).toBeLessThan(1100);
    const path = file('bomb-idx3-ubyte.gz', gz);
    await expect(openVectors(path)).rejects.toThrow(/bomb-idx3-ubyte\.gz: declares 2000000000 x 16 \(128 GB of float32\) but holds 1000 bytes of data once decompressed \(32000000000 needed\)/);
    await expect(readVectors(path)).rejects.toThrow(/declares 2000000000 x 16/);
    // What it holds is what it declares: opened, rows and dim as declared.
    const ok = await openVectors(file('ok-idx3-ubyte.gz', gzipSync(declaring(3, 48))));
    expect([ok.rows, ok.dim]).toEqual([3, 16]);
  });

  it('JSON Lines: a line too short to hold the first line\'s values is refused at open (rows x dim stays within the file)', async () => {
    const first = JSON.stringify({ vector: Array.from({ length: 1000 }, () => 0) });
    await expect(openVectors(file('short.jsonl', `${first}\n{"vector": [1]}\n`))).rejects.toThrow(
      /short\.jsonl: line 2 \(15 bytes\) is too short to hold 1000 values \(as on the first line\); a row of 1000 values takes at least 1999 bytes/,
    );
    const blanks = `${first}\n\n${'x'.repeat(3000)}\n{}\n`;
    await expect(openVectors(file('short2.jsonl', blanks))).rejects.toThrow(/short2\.jsonl: line 4 \(2 bytes\) is too short to hold 1000 values/);
    // A minimal row of the same dim is long enough.
    const minimal = `[${Array.from({ length: 1000 }, () => 0).join(',')}]`;
    expect((await openVectors(file('min.jsonl', `${first}\n{"vector":${minimal}}\n`))).rows).toBe(2);
  });

  it('rows of no values (.npy (n, 0), IDX n x 0 x 4) are refused at open, naming the file', async () => {
    await expect(openVectors(file('zero.npy', npyBytes('<f4', '(1000000000000, 0)', new Uint8Array(0))))).rejects.toThrow(
      /zero\.npy: shape \(1000000000000, 0\) holds rows of no values; expected \(n, d\) with d >= 1/,
    );
    const idx = idxBytes(0);
    new DataView(idx.buffer).setUint32(4, 4_000_000_000);
    new DataView(idx.buffer).setUint32(8, 0);
    await expect(openVectors(file('zero-idx3-ubyte', idx))).rejects.toThrow(/zero-idx3-ubyte: 4000000000 images of 0 x 3 bytes hold no values; expected rows and columns >= 1/);
    // An empty array stays readable.
    expect((await openVectors(file('none.npy', npyBytes('<f4', '(0, 4)', new Uint8Array(0))))).rows).toBe(0);
  });
});

describe('a .npy file over 4 GiB', () => {
  // 16,843,009 rows of 64 float32: 4,311,810,304 bytes of data, sparse (only the header and a few
  // rows are written), read block by block; rows at byte offsets past 2^32 and one across it.
  const n = 16_843_009;
  const d = 64;
  const path = join(dir, 'huge.npy');
  afterAll(() => rmSync(path, { force: true }));

  it('reads every row exactly: zeros but for the rows written, at any offset', async () => {
    const header = npyHeader('float', n, d);
    const rowOf = (i: number): number => header.length + i * d * 4; // byte offset of row i
    const last = n - 1;
    const acrossBoundary = Math.floor((2 ** 32 - header.length) / (d * 4)); // starts below 2^32, ends above it
    const written = [0, 1, 1_000_000, acrossBoundary - 1, acrossBoundary, acrossBoundary + 1, 16_800_000, last];
    expect(rowOf(acrossBoundary)).toBeLessThan(2 ** 32);
    expect(rowOf(acrossBoundary + 1)).toBeGreaterThan(2 ** 32);
    const expected = new Map(written.map((i, k) => [i, Float32Array.from({ length: d }, (_, j) => (k + 1) * 1000 + j * 0.5 - i / 7)]));
    const fd = openSync(path, 'w');
    try {
      writeSync(fd, header, 0, header.length, 0);
      ftruncateSync(fd, rowOf(n));
      for (const [i, row] of expected) writeSync(fd, new Uint8Array(row.buffer), 0, row.byteLength, rowOf(i));
    } finally {
      closeSync(fd);
    }
    expect(statSync(path).size).toBe(rowOf(n));
    expect(rowOf(n)).toBeGreaterThan(2 ** 32 + 16 * 2 ** 20);

    const reader = await openVectors(path);
    expect([reader.format, reader.rows, reader.dim, reader.bytes]).toEqual(['.npy', n, d, rowOf(n)]);
    let next = 0;
    let seen = 0;
    let lastProgress = 0;
    const zeros = Buffer.alloc(16 * 2 ** 20);
    for await (const block of reader.blocks({ onProgress: (done) => (lastProgress = done) })) {
      expect(block.start).toBe(next);
      next += block.rows;
      for (const [i, row] of expected) {
        if (i < block.start || i >= block.start + block.rows) continue;
        const at = (i - block.start) * d;
        expect(Buffer.from(block.data.buffer, block.data.byteOffset + at * 4, d * 4).equals(Buffer.from(row.buffer)), `row ${i}`).toBe(true);
        block.data.fill(0, at, at + d);
        seen++;
      }
      const bytes = Buffer.from(block.data.buffer, block.data.byteOffset, block.data.byteLength);
      expect(bytes.length).toBeLessThanOrEqual(zeros.length);
      if (!bytes.equals(zeros.subarray(0, bytes.length))) throw new Error(`block at row ${block.start} has a nonzero value outside the rows written`);
    }
    expect([next, seen, lastProgress]).toEqual([n, written.length, rowOf(n)]);
  }, 120_000);
});
