import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cpuBackend } from '../helpers/cpu.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { loadIndex } from '../../src/indexes/load-index.js';
import { readVectors, writeVectors } from '../../src/io/vectors.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { randomFloats, randomSmallInts } from '../../src/common/random.js';
import { expectIdentical } from '../helpers/compare.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { npyBytes } from '../helpers/files.js';

const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-io-'));
const gpu = await gpuBackend();
const cpu = cpuBackend();
afterAll(disposeGpuBackends);

describe('vector files', () => {
  const x = randomFloats(7 * 5, 1);
  for (const ext of ['.fvecs', '.npy', '.jsonl']) {
    it(`round-trips ${ext}`, async () => {
      const path = join(dir, `x${ext}`);
      writeVectors(path, x, 7, 5);
      const back = await readVectors(path);
      expect([back.n, back.d]).toEqual([7, 5]);
      expect(Array.from(back.data)).toEqual(Array.from(x));
    });
  }

  it('round-trips .ivecs and writes .csv', async () => {
    const ids = Int32Array.from({ length: 6 }, (_, i) => i * 3 - 1);
    writeVectors(join(dir, 'ids.ivecs'), ids, 3, 2);
    expect(Array.from((await readVectors(join(dir, 'ids.ivecs'))).data)).toEqual(Array.from(ids));
    writeVectors(join(dir, 'ids.csv'), ids, 3, 2);
    expect(readFileSync(join(dir, 'ids.csv'), 'utf8')).toBe('-1,2\n5,8\n11,14\n');
  });

  it('reads .bvecs (uint8 rows)', async () => {
    const bytes = new Uint8Array([2, 0, 0, 0, 7, 255, 2, 0, 0, 0, 0, 1]);
    writeFileSync(join(dir, 'b.bvecs'), bytes);
    const v = await readVectors(join(dir, 'b.bvecs'));
    expect([v.n, v.d]).toEqual([2, 2]);
    expect(Array.from(v.data)).toEqual([7, 255, 0, 1]);
  });

  it('reads .npy float64, float16, uint8, int8 and int32', async () => {
    const read = async (name: string, bytes: Uint8Array): Promise<number[]> => {
      writeFileSync(join(dir, name), bytes);
      return Array.from((await readVectors(join(dir, name))).data);
    };
    const f64 = new Float64Array([1.5, -2, 3, 4]);
    expect(await read('a.npy', npyBytes('<f8', '(2, 2)', new Uint8Array(f64.buffer)))).toEqual([1.5, -2, 3, 4]);
    const f16 = new Uint16Array([0x3c00, 0xc000, 0x3800, 0x7bff]); // 1, -2, 0.5, 65504
    expect(await read('b.npy', npyBytes('<f2', '(1, 4)', new Uint8Array(f16.buffer)))).toEqual([1, -2, 0.5, 65504]);
    expect(await read('c.npy', npyBytes('|u1', '(2, 1)', new Uint8Array([7, 255])))).toEqual([7, 255]);
    expect(await read('d.npy', npyBytes('|i1', '(2, 1)', new Uint8Array([0x80, 5])))).toEqual([-128, 5]);
    expect(await read('e.npy', npyBytes('<i4', '(1, 2)', new Uint8Array(new Int32Array([-7, 1 << 20]).buffer)))).toEqual([-7, 1 << 20]);
  });

  it('rejects malformed files with the byte offset or line number', async () => {
    const bad = async (name: string, content: Uint8Array | string, message: RegExp): Promise<void> => {
      const path = join(dir, name);
      writeFileSync(path, content);
      await expect(readVectors(path)).rejects.toThrow(message);
    };
    const good = new Uint8Array(readFileSync(join(dir, 'x.fvecs')));
    await bad('t.fvecs', good.subarray(0, good.length - 3), /truncated: 165 bytes .* the incomplete last row starts at byte 144/);
    await bad('m.npy', npyBytes('<f4', '(2, 2)', new Uint8Array(12)), /truncated: 2 x 2 <f4 needs \d+ bytes; the file ends at byte \d+/);
    await bad('f.npy', npyBytes('<f4', '(1, 1)', new Uint8Array(4), 'True'), /Fortran-order/);
    await bad('s.npy', npyBytes('<f4', '(4,)', new Uint8Array(16)), /shape \(4,\) is not 2-D/);
    // 3-D and 0-D: refused naming the shape, never read as n x d (a 3-D (2, 3, 4) would pass as 2 x 3).
    await bad('s3.npy', npyBytes('<f4', '(2, 3, 4)', new Uint8Array(96)), /s3\.npy: shape \(2, 3, 4\) is not 2-D; expected \(n, d\)/);
    await bad('s0.npy', npyBytes('<f4', '()', new Uint8Array(4)), /s0\.npy: shape \(\) is not 2-D; expected \(n, d\)/);
    await bad('c.npy', npyBytes('<c8', '(1, 1)', new Uint8Array(8)), /dtype <c8 is not supported/);
    await bad('j.jsonl', '{"id": 1, "embedding": [1, 2]}\n{"id": 2, "embedding": [1]}\n', /line 2 has 1 values; expected 2/);
    await bad('k.jsonl', '{"id": 1, "embedding": [1, 2]}\nnot json\n', /line 2 is not valid JSON/);
    await bad('u.txt', 'x', /unknown vector file type '.txt'/);
    await bad('z.fvecs', new Uint8Array([0, 0, 0, 0]), /z\.fvecs: bad dim 0 at byte 0; expected an integer in \[1, 1048576\]/);
    await bad('y.fvecs', new Uint8Array([1, 0]), /y\.fvecs: truncated at byte 0: expected a 4-byte dim/);
    const rowDim = good.slice();
    rowDim[2 * 24] = 9; // row 2 of 24-byte rows (dim 5) says dim 9
    await bad('r.fvecs', rowDim, /r\.fvecs: row 2 at byte 48 has dim 9; expected 5/);
    await bad('g.npy', new Uint8Array(20), /g\.npy: not a \.npy file \(bad magic at byte 0\)/);
    const v9 = npyBytes('<f4', '(1, 1)', new Uint8Array(4));
    v9[6] = 9;
    await bad('v.npy', v9, /v\.npy: unsupported \.npy version 9\.0 at byte 6/);
    await bad('h.npy', npyBytes('<f4', '(1, 1)', new Uint8Array(4)).subarray(0, 40), /h\.npy: truncated header \(needs \d+ bytes; file has 40\)/);
    await bad('e.npy', npyBytes('<f4', '[1, 1]', new Uint8Array(4)), /e\.npy: malformed header at byte 10/);
    await bad('n.jsonl', '{"id": 1, "embedding": [1, 2]}\n{"id": 2, "embedding": "1, 2"}\n', /n\.jsonl: line 2 has no numeric 'embedding' \(or 'vector'\) array/);
    const idx = new Uint8Array(16 + 5);
    new DataView(idx.buffer).setUint32(0, 0x0803);
    new DataView(idx.buffer).setUint32(4, 2);
    new DataView(idx.buffer).setUint32(8, 1);
    new DataView(idx.buffer).setUint32(12, 3);
    await bad('a-idx3-ubyte', idx, /a-idx3-ubyte: truncated: 2 x 3 bytes need 22; the data ends at byte 21/);
    await bad('b-idx3-ubyte', new Uint8Array(16), /b-idx3-ubyte: not an IDX file of unsigned bytes with 3 dimensions \(magic 0x00000803 at byte 0\)/);
    await bad('c-idx3-ubyte.gz', 'plain text', /c-idx3-ubyte\.gz: not a valid gzip file/);
    await expect(readVectors(join(dir, 'missing.jsonl'))).rejects.toThrow(/missing\.jsonl: cannot read: no such file or directory \(ENOENT\)/);
  });
});

describe('index files', () => {
  const d = 6;
  const xb = randomSmallInts(400 * d, 3);
  const xq = randomSmallInts(10 * d, 4);
  for (const [name, backend] of [['cpu', cpu], ['webgpu', gpu]] as const) {
    it.skipIf(!backend)(`${name}: Flat (cosine) and IVF save and load to the same results`, async () => {
      const flat = new FlatIndex(backend!, { dim: d, metric: 'cosine' });
      await flat.add(xb);
      await flat.save(join(dir, `${name}-flat.idx`));
      const flat2 = await loadIndex(backend!, join(dir, `${name}-flat.idx`));
      expect(flat2).toBeInstanceOf(FlatIndex);
      expectIdentical(await flat2.search(xq, 5), await flat.search(xq, 5), 'flat');

      const ivf = new IvfFlatIndex(backend!, { dim: d, nlist: 8, niter: 3, nprobe: 3 });
      await ivf.train(xb);
      await ivf.add(xb);
      await ivf.save(join(dir, `${name}-ivf.idx`));
      const ivf2 = (await loadIndex(backend!, join(dir, `${name}-ivf.idx`))) as IvfFlatIndex;
      expect([ivf2.nlist, ivf2.nprobe, ivf2.ntotal]).toEqual([8, 3, 400]);
      expectIdentical(await ivf2.search(xq, 7), await ivf.search(xq, 7), 'ivf');
      expect(readdirSync(dir).filter((f) => f.includes('.tmp-'))).toEqual([]);
    });
  }

  it('refuses another version, a wrong checksum, a truncated file and a non-index', async () => {
    const flat = new FlatIndex(cpu, { dim: 2 });
    await flat.add(new Float32Array([1, 2, 3, 4]));
    const path = join(dir, 'small.idx');
    await flat.save(path);
    const good = new Uint8Array(readFileSync(path));
    const variant = (name: string, edit: (b: Uint8Array) => Uint8Array): string => {
      const p = join(dir, name);
      writeFileSync(p, edit(good.slice()));
      return p;
    };
    const v3 = variant('v3.idx', (b) => ((b[8] = 3), b));
    await expect(loadIndex(cpu, v3)).rejects.toThrow(/index format version 3; this build reads versions 1 and 2/);
    // Version 1 (no ids section) still loads, with sequential ids.
    const v1 = variant('v1.idx', (b) => {
      const body = b.slice(0, b.length - 32 - 8 * 3); // without the ids section (next id and 2 ids) and the checksum
      body[8] = 1;
      return new Uint8Array([...body, ...createHash('sha256').update(body).digest()]);
    });
    const old = await loadIndex(cpu, v1);
    expect(Array.from((await old.search(new Float32Array([3, 4]), 2)).labels)).toEqual([1, 0]);
    await old.add(new Float32Array([5, 5]));
    expect(Array.from((await old.search(new Float32Array([5, 5]), 1)).labels)).toEqual([2]);
    const flipped = variant('flip.idx', (b) => ((b[45] ^= 1), b));
    await expect(loadIndex(cpu, flipped)).rejects.toThrow(/checksum mismatch: the file is corrupt/);
    const cut = variant('cut.idx', (b) => b.subarray(0, b.length - 10));
    await expect(loadIndex(cpu, cut)).rejects.toThrow(/truncated: the header describes \d+ bytes; the file has \d+/);
    const other = variant('other.idx', () => new Uint8Array(64));
    await expect(loadIndex(cpu, other)).rejects.toThrow(/not a webgpu-knn index file/);
  });
});
