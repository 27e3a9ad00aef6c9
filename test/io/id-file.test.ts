/**
 * Id files (src/io/id-file.ts): .npy of int64 / int32 / uint32, or text with one id per line; every
 * id checked to be an integer in [0, 2^53 - 1], a bad one named with its file, line or element and
 * value. And the id tables written back (VectorStreamWriter's `id` kind): int64 .npy, exact text,
 * .ivecs refused past int32.
 */
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import { readIdFile, readJsonlIds } from '../../src/io/id-file.js';
import { VectorStreamWriter } from '../../src/io/stream-writer.js';
import { readVectors } from '../../src/io/vectors.js';
import { npyBytes } from '../helpers/files.js';
import { MAX_ID } from '../../src/types.js';

const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-ids-'));
const file = (name: string, content: string | Uint8Array): string => {
  writeFileSync(join(dir, name), content);
  return join(dir, name);
};
const bytes = (a: BigInt64Array | Int32Array | Uint32Array): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
const read = async (name: string, content: string | Uint8Array): Promise<bigint[]> => Array.from(await readIdFile(file(name, content)));

describe('readIdFile', () => {
  it('reads .npy int64, int32 and uint32, shaped (n,) or (n, 1)', async () => {
    const big = BigInt64Array.from([0n, 7n, 2n ** 32n + 5n, BigInt(MAX_ID)]);
    expect(await read('a.npy', npyBytes('<i8', '(4,)', bytes(big)))).toEqual(Array.from(big));
    expect(await read('b.npy', npyBytes('<i8', '(4, 1)', bytes(big)))).toEqual(Array.from(big));
    expect(await read('c.npy', npyBytes('<i4', '(3,)', bytes(Int32Array.from([5, 0, 2 ** 31 - 1]))))).toEqual([5n, 0n, 2n ** 31n - 1n]);
    expect(await read('d.npy', npyBytes('<u4', '(2,)', bytes(Uint32Array.from([2 ** 32 - 1, 1]))))).toEqual([2n ** 32n - 1n, 1n]);
    expect(await read('e.npy', npyBytes('<i8', '(0,)', new Uint8Array(0)))).toEqual([]);
    const r = await readIdFile(join(dir, 'a.npy'));
    expect(r).toBeInstanceOf(BigInt64Array);
  });

  it('reads text: one id per line, blanks and CRLF ignored, any extension', async () => {
    expect(await read('a.txt', '3\n1\n\n  4  \r\n9007199254740991\n')).toEqual([3n, 1n, 4n, BigInt(MAX_ID)]);
    expect(await read('b.csv', '10\r\n20')).toEqual([10n, 20n]); // no final newline
    expect(await read('c', '\n\n')).toEqual([]);
    expect(await read('d.ids', '007\n')).toEqual([7n]);
  });

  it('reads text longer than one block, with lines across block edges', async () => {
    const ids = Array.from({ length: 600_000 }, (_, i) => i * 1_000_003);
    const got = await readIdFile(file('long.txt', ids.join('\n') + '\n'));
    expect(got.length).toBe(ids.length);
    expect(Array.from(got.subarray(0, 3))).toEqual([0n, 1_000_003n, 2_000_006n]);
    expect(got[got.length - 1]).toBe(BigInt(ids[ids.length - 1]));
    expect(ids.every((id, i) => got[i] === BigInt(id))).toBe(true);
  });

  it('names the file, the line and the bad value in text', async () => {
    const bad = async (content: string, message: RegExp): Promise<void> => {
      await expect(readIdFile(file('bad.txt', content))).rejects.toThrow(message);
    };
    await bad('1\n2\nabc\n', /bad\.txt: line 3: "abc" is not an id; expected an integer in \[0, 9007199254740991\]/);
    await bad('1\n\n-5\n', /bad\.txt: line 3: "-5" is not an id/);
    await bad('1.5\n', /line 1: "1.5" is not an id/);
    await bad('0x10\n', /line 1: "0x10" is not an id/);
    await bad('1e3\n', /line 1: "1e3" is not an id/);
    await bad('1,2\n', /line 1: "1,2" is not an id/);
    await bad('9007199254740992\n', /line 1: "9007199254740992" is not an id/); // 2^53
    await bad('id\n1\n', /line 1: "id" is not an id/);
    await expect(readIdFile(file('dup.txt', '5\n6\n5\n'), { unique: true })).rejects.toThrow(/dup\.txt: line 3: id 5 appears twice \(first at line 1\)/);
    expect(Array.from(await readIdFile(join(dir, 'dup.txt')))).toEqual([5n, 6n, 5n]); // allowed unless unique
  });

  it('names the file, the element and the bad value in .npy; refuses other dtypes and shapes', async () => {
    const bad = async (content: Uint8Array, message: RegExp): Promise<void> => {
      await expect(readIdFile(file('bad.npy', content))).rejects.toThrow(message);
    };
    await bad(npyBytes('<i8', '(3,)', bytes(BigInt64Array.from([1n, -1n, 2n]))), /bad\.npy: element 1: -1 is not an id; expected an integer in \[0, 9007199254740991\]/);
    await bad(npyBytes('<i8', '(1,)', bytes(BigInt64Array.from([2n ** 53n]))), /element 0: 9007199254740992 is not an id/);
    await bad(npyBytes('<i4', '(2,)', bytes(Int32Array.from([4, -3]))), /element 1: -3 is not an id/);
    await bad(npyBytes('<f4', '(1,)', new Uint8Array(4)), /bad\.npy: dtype <f4 is not supported for ids; expected int64 \(<i8\), int32 \(<i4\) or uint32 \(<u4\)/);
    await bad(npyBytes('<i8', '(2, 2)', new Uint8Array(32)), /bad\.npy: shape \(2, 2\) is not a list of ids; expected \(n,\) or \(n, 1\)/);
    await bad(npyBytes('<i8', '(2, 1, 1)', new Uint8Array(16)), /bad\.npy: shape \(2, 1, 1\) is not a list of ids; expected \(n,\) or \(n, 1\)/);
    await bad(npyBytes('<i8', '()', new Uint8Array(8)), /bad\.npy: shape \(\) is not a list of ids; expected \(n,\) or \(n, 1\)/);
    await bad(npyBytes('<i8', '(3,)', new Uint8Array(16)), /bad\.npy: truncated: 3 ids of <i8 need \d+ bytes; the file ends at byte \d+/);
    const three = npyBytes('<i8', '(3,)', new Uint8Array(24));
    await bad(Uint8Array.from([...three, 0, 0, 0, 0, 0, 0, 0, 0]), new RegExp(`bad\\.npy: 8 bytes after the data: 3 ids of <i8 end at byte ${three.length}; the file has ${three.length + 8} bytes`));
    await bad(new Uint8Array(20), /bad\.npy: not a \.npy file \(bad magic at byte 0\)/);
    await expect(readIdFile(file('dup.npy', npyBytes('<i8', '(3,)', bytes(BigInt64Array.from([1n, 2n, 1n])))), { unique: true })).rejects.toThrow(
      /dup\.npy: element 2: id 1 appears twice \(first at element 0\)/,
    );
  });

  it('a missing file is a FileError naming it', async () => {
    await expect(readIdFile(join(dir, 'missing.txt'))).rejects.toThrow(/missing\.txt: cannot read: no such file or directory \(ENOENT\)/);
  });
});

describe('ids of a JSON Lines file of vectors', () => {
  const lines = (ids: unknown[]): string => ids.map((id, i) => JSON.stringify({ ...(id === undefined ? {} : { id }), vector: [i, 1] })).join('\n') + '\n';

  it('every line\'s id (numbers and decimal strings, blank lines skipped); null when no line has one', async () => {
    const path = file('ids.jsonl', lines([7, '9007199254740991', 0]).replace('\n', '\n\n'));
    expect(Array.from((await readJsonlIds(path))!)).toEqual([7n, 9007199254740991n, 0n]);
    expect(Array.from(await readIdFile(path))).toEqual([7n, 9007199254740991n, 0n]);
    expect(await readJsonlIds(file('none.jsonl', lines([undefined, undefined])))).toBeNull();
    await expect(readIdFile(join(dir, 'none.jsonl'))).rejects.toThrow(/none\.jsonl: no line has an 'id'; an id file of JSON Lines gives one on every line/);
    expect(await readJsonlIds(file('empty.jsonl', '\n'))).toBeNull();
  });

  it('refuses a bad id naming the line and the value, a repeat (unique), and ids on some lines only', async () => {
    const bad = async (ids: unknown[], message: RegExp): Promise<void> => {
      await expect(readJsonlIds(file('bad.jsonl', lines(ids)), { unique: true })).rejects.toThrow(message);
    };
    for (const [id, shown] of [[-1, '-1'], [1.5, '1\\.5'], ['a7', '"a7"'], [2 ** 53, '9007199254740992'], ['9007199254740992', '"9007199254740992"'], [null, 'null'], ['0x10', '"0x10"'], [[1], '\\[1\\]'], ['x'.repeat(60), `"${'x'.repeat(39)}\\.\\.\\.`]] as const) {
      await bad([1, id], new RegExp(`bad\\.jsonl: line 2: ${shown} is not an id; expected an integer in \\[0, 9007199254740991\\]`));
    }
    await bad([4, 5, '4'], /bad\.jsonl: line 3: id 4 appears twice \(first at line 1\); each id may be given once/);
    expect(Array.from((await readJsonlIds(join(dir, 'bad.jsonl')))!)).toEqual([4n, 5n, 4n]); // allowed unless unique
    await bad([1, undefined], /bad\.jsonl: line 2 has no 'id', but line 1 has one; give every line an id, or none \(the ids are then the row numbers\)/);
    await bad([undefined, 1], /bad\.jsonl: line 2 has an 'id', but line 1 has none/);
    // An id whose key is spelled with an escape is found too; a line that is not JSON is refused.
    expect(Array.from((await readJsonlIds(file('esc.jsonl', '{"\\u0069d": 3, "vector": [1]}\n')))!)).toEqual([3n]);
    await expect(readJsonlIds(file('nojson.jsonl', '{"id": 1, "vector": [1]}\n{"id": 2, "vector": [1\n'))).rejects.toThrow(/nojson\.jsonl: line 2 is not valid JSON/);
  });

  it('a number id must be an integer literal as written: a fraction, an exponent or -0 is refused, never rounded', async () => {
    // Each of these parses to a double that is an integer (9007199254740991, 1, 1000, 0, ...).
    for (const text of ['9007199254740990.6', '1.0000000000000001', '1e3', '1E+3', '-0', '4.0', '5e0', '0.0']) {
      const path = file('lit.jsonl', `{"id": 1, "vector": [1, 2]}\n{"vector": [3, 4], "id": ${text}}\n`);
      await expect(readJsonlIds(path)).rejects.toThrow(`lit.jsonl: line 2: ${text} is not an id; expected an integer in [0, 9007199254740991]`);
    }
    // Integer literals, and strings of digits, stay ids; the id is the object's own 'id' (the last
    // one, as JSON.parse takes it), not an 'id' nested in another field or spelled inside a string.
    const ok = [
      '{"id": 9007199254740991, "vector": [1, 2]}',
      '{"id" :\t0 , "vector": [1, 2]}',
      '{"id": "12", "vector": [1, 2]}',
      '{"meta": {"id": 2.5, "x": [1.5, "}"]}, "note": "\\"id\\": 3.5", "id": 13, "vector": [1, 2]}',
      '{"id": 1.5, "vector": [1, 2], "id": 14}',
      '{"\\u0069d": 15, "vector": [1e3, -0]}',
    ];
    expect(Array.from((await readJsonlIds(file('lits.jsonl', ok.join('\n'))))!)).toEqual([9007199254740991n, 0n, 12n, 13n, 14n, 15n]);
    await expect(readJsonlIds(file('last.jsonl', '{"id": 16, "vector": [1, 2], "id": 2e1}\n'))).rejects.toThrow('last.jsonl: line 1: 2e1 is not an id');
  });
});

describe('id tables written by VectorStreamWriter', () => {
  const ids = Float64Array.from([0, 5, -1, 2 ** 32 + 1, MAX_ID, -1]); // 2 rows of 3; -1 pads
  const write = (name: string): string => {
    const w = new VectorStreamWriter(join(dir, name), 2, 3, 'id');
    w.write(ids.subarray(0, 3), 1);
    w.write(ids.subarray(3), 1);
    w.close();
    return join(dir, name);
  };

  it('.npy holds int64, exact up to 2^53 - 1, -1 as -1', () => {
    const raw = readFileSync(write('ids.npy'));
    const start = 10 + raw.readUInt16LE(8);
    expect(raw.subarray(0, start).toString('latin1')).toContain("'descr': '<i8'");
    expect(raw.subarray(0, start).toString('latin1')).toContain("'shape': (2, 3)");
    const values = new BigInt64Array(raw.buffer.slice(raw.byteOffset + start, raw.byteOffset + raw.byteLength));
    expect(Array.from(values)).toEqual(Array.from(ids, BigInt));
  });

  it('.npy of ids reads back as vectors too (float32: exact below 2^24)', async () => {
    const w = new VectorStreamWriter(join(dir, 'small.npy'), 2, 2, 'id');
    w.write(Float64Array.from([1, 2, -1, 1 << 20]), 2);
    w.close();
    expect(Array.from((await readVectors(join(dir, 'small.npy'))).data)).toEqual([1, 2, -1, 1 << 20]);
  });

  it('.csv and .jsonl hold exact decimal integers', () => {
    expect(readFileSync(write('ids.csv'), 'utf8')).toBe('0,5,-1\n4294967297,9007199254740991,-1\n');
    const lines = readFileSync(write('ids.jsonl'), 'utf8').trimEnd().split('\n');
    expect(lines[1]).toBe('{"id":1,"neighbors":[4294967297,9007199254740991,-1]}');
  });

  it('.ivecs takes ids up to 2^31 - 1 and refuses a larger one by name, leaving nothing', () => {
    const ok = new VectorStreamWriter(join(dir, 'ok.ivecs'), 1, 3, 'id');
    ok.write(Float64Array.from([2 ** 31 - 1, -1, 3]), 1);
    ok.close();
    const raw = readFileSync(join(dir, 'ok.ivecs'));
    expect(Array.from(new Int32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength)))).toEqual([3, 2 ** 31 - 1, -1, 3]);
    const w = new VectorStreamWriter(join(dir, 'big.ivecs'), 2, 3, 'id');
    w.write(ids.subarray(0, 3), 1);
    expect(() => w.write(ids.subarray(3), 1)).toThrow(
      /big\.ivecs: id 4294967297 \(row 1\) does not fit \.ivecs, which holds int32 \(integers in \[-2147483648, 2147483647\]\); write it to \.npy \(<i8\), \.csv or \.jsonl instead/,
    );
    expect(readdirSync(dir).filter((f) => f.includes('big.ivecs'))).toEqual([]);
  });

  it('.fvecs refuses ids', () => {
    expect(() => new VectorStreamWriter(join(dir, 'x.fvecs'), 1, 1, 'id')).toThrow(/x\.fvecs: a Float64Array of labels cannot be written to \.fvecs faithfully: \.fvecs holds float32 \(a Float32Array\)/);
  });
});
