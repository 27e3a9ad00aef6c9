// writeVectors keeps the array's type in .npy (the bytes numpy reads: checked against a decoding
// written here from the format's description, and read back by our reader), and every writer
// refuses an array it cannot write exactly, leaving no file behind.
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SearchResult } from '../../src/types.js';
import { readIvecs, readVectors, writeVectors } from '../../src/io/vectors.js';

const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-npy-write-'));

/** A .npy file decoded by hand: magic, version 1.0, the header dict as text, and the data's bytes. */
function decodeNpy(bytes: Uint8Array): { header: string; data: DataView } {
  expect(Array.from(bytes.subarray(0, 8))).toEqual([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]);
  const headerLen = bytes[8] | (bytes[9] << 8); // little-endian uint16
  const dataStart = 10 + headerLen;
  expect(dataStart % 64).toBe(0);
  const text = new TextDecoder().decode(bytes.subarray(10, dataStart));
  expect(text.endsWith('\n')).toBe(true);
  return { header: text.trimEnd(), data: new DataView(bytes.buffer, bytes.byteOffset + dataStart, bytes.byteLength - dataStart) };
}

/** The values of a little-endian `descr` array in `data`. */
function values(descr: string, data: DataView): Array<number | bigint> {
  const size = Number(descr.slice(2));
  const out: Array<number | bigint> = [];
  for (let o = 0; o < data.byteLength; o += size) {
    if (descr === '<f4') out.push(data.getFloat32(o, true));
    else if (descr === '<f8') out.push(data.getFloat64(o, true));
    else if (descr === '<i4') out.push(data.getInt32(o, true));
    else if (descr === '<i8') out.push(data.getBigInt64(o, true));
    else throw new Error(descr);
  }
  return out;
}

describe('.npy keeps the dtype', () => {
  // 2 x 3 each; values a float32 cannot hold where the type can (so a conversion would show).
  const labels = Float64Array.from([0, 88, 16, 1, 62, 52]); // the labels
  const cases = [
    { name: 'Float32Array', data: Float32Array.from([0.5, -1.25, 3, 1e-3, 7, -0]), options: {}, descr: '<f4' },
    { name: 'Float64Array', data: Float64Array.from([0.1, -1e300, 2 ** 53, 1 / 3, 5, -2.5]), options: {}, descr: '<f8' },
    { name: 'Int32Array', data: Int32Array.from([-(2 ** 31), 2 ** 31 - 1, 0, 16_777_217, -1, 9]), options: {}, descr: '<i4' },
    { name: 'BigInt64Array', data: BigInt64Array.from([-(2n ** 63n), 2n ** 63n - 1n, 0n, 2n ** 53n + 1n, -1n, 9n]), options: {}, descr: '<i8' },
    { name: 'labels (Float64Array, labels: true)', data: labels, options: { labels: true }, descr: '<i8' },
  ];
  for (const c of cases) {
    it(`${c.name} -> ${c.descr}`, async () => {
      const path = join(dir, `${c.name.replace(/\W+/g, '-')}.npy`);
      writeVectors(path, c.data, 2, 3, c.options);
      const { header, data } = decodeNpy(readFileSync(path));
      expect(header).toBe(`{'descr': '${c.descr}', 'fortran_order': False, 'shape': (2, 3), }`);
      const expected: Array<number | bigint> = c.data instanceof Float64Array && c.descr === '<i8' ? Array.from(c.data, BigInt) : Array.from(c.data as ArrayLike<number | bigint>);
      expect(values(c.descr, data)).toEqual(expected);
      // Our reader: float32 rows of the same values (as float32 holds them).
      const back = await readVectors(path);
      expect([back.n, back.d]).toEqual([2, 3]);
      expect(Array.from(back.data)).toEqual(Array.from(Float32Array.from(expected, Number)));
    });
  }

  it('a label that is not an id is refused, naming it, and nothing is written', () => {
    const path = join(dir, 'bad-labels.npy');
    expect(() => writeVectors(path, Float64Array.from([0, 1.5]), 1, 2, { labels: true })).toThrow(
      /bad-labels\.npy: label 1\.5 \(row 0\) is not an id; labels are integers in \[-1, 2\^53 - 1\]/,
    );
    expect(() => writeVectors(path, Float64Array.from([0, -2]), 2, 1, { labels: true })).toThrow(/label -2 \(row 1\) is not an id/);
    expect(() => writeVectors(path, Float32Array.from([0, 1]), 1, 2, { labels: true })).toThrow(/labels: true takes search labels in a Float64Array; got a Float32Array/);
    expect(readdirSync(dir).filter((f) => f.includes('bad-labels'))).toEqual([]);
  });
});

describe('every writer refuses what it cannot write exactly', () => {
  const refusals = [
    { file: 'a.fvecs', data: new Float64Array(4), message: /a\.fvecs: a Float64Array cannot be written to \.fvecs faithfully: \.fvecs holds float32 \(a Float32Array\)/ },
    { file: 'b.fvecs', data: new Int32Array(4), message: /b\.fvecs: a Int32Array cannot be written to \.fvecs faithfully/ },
    { file: 'c.fvecs', data: new BigInt64Array(4), message: /c\.fvecs: a BigInt64Array cannot be written to \.fvecs faithfully/ },
    { file: 'd.ivecs', data: new Float32Array(4), message: /d\.ivecs: a Float32Array cannot be written to \.ivecs faithfully: \.ivecs holds int32/ },
    { file: 'e.ivecs', data: Float64Array.from([1, 2, 3.5, 4]), message: /e\.ivecs: value 3\.5 \(row 1\) does not fit \.ivecs, which holds int32/ },
    { file: 'f.ivecs', data: BigInt64Array.from([1n, 2n ** 40n, 3n, 4n]), message: /f\.ivecs: value 1099511627776 \(row 0\) does not fit \.ivecs.*write it to \.npy \(<i8\)/ },
    { file: 'g.ivecs', data: Float64Array.from([1, 2, 3, -(2 ** 31) - 1]), message: /g\.ivecs: value -2147483649 \(row 1\)/ },
    { file: 'h.npy', data: new Uint8Array(4) as unknown as Float32Array, message: /writeVectors: data is a Uint8Array; expected a Float32Array, Float64Array, Int32Array or BigInt64Array/ },
  ];
  for (const r of refusals) {
    it(`${r.file} refuses a ${r.data.constructor.name}${/[e-g]\./.test(r.file) ? ' value' : ''}`, () => {
      expect(() => writeVectors(join(dir, r.file), r.data, 2, 2)).toThrow(r.message);
      expect(readdirSync(dir).filter((f) => f.includes(r.file))).toEqual([]);
    });
  }

  it("the README's line writes search labels to .ivecs, and 64-bit integers of int32 range are written exactly", async () => {
    const result: SearchResult = { distances: new Float32Array(4), labels: Float64Array.from([7, -1, 2 ** 31 - 1, 0]) };
    const { labels } = result;
    writeVectors(join(dir, 'nn.ivecs'), labels, 2, 2);
    expect(Array.from((await readIvecs(join(dir, 'nn.ivecs'))).data)).toEqual([7, -1, 2 ** 31 - 1, 0]);
    writeVectors(join(dir, 'big.ivecs'), BigInt64Array.from([-(2n ** 31n), 5n]), 1, 2);
    expect(Array.from((await readIvecs(join(dir, 'big.ivecs'))).data)).toEqual([-(2 ** 31), 5]);
  });

  it('.csv and .jsonl write int64 and float64 values exactly', () => {
    writeVectors(join(dir, 'x.csv'), BigInt64Array.from([2n ** 62n, -3n]), 1, 2);
    expect(readFileSync(join(dir, 'x.csv'), 'utf8')).toBe('4611686018427387904,-3\n');
    writeVectors(join(dir, 'x.jsonl'), Float64Array.from([0.1, 2 ** 60]), 1, 2);
    expect(readFileSync(join(dir, 'x.jsonl'), 'utf8')).toBe('{"id":0,"embedding":[0.1,1152921504606847000]}\n');
  });
});
