import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cpuBackend } from '../helpers/cpu.js';
import { FlatIndex } from '../../src/flat-index.js';
import { formatNpy, parseNpy } from '../../src/io/npy.js';
import { loadIndex } from '../../src/io/load-index.js';
import { readVectors, writeVectors } from '../../src/io/vectors.js';
import { IvfFlatIndex } from '../../src/ivf-flat-index.js';
import { randomFloats, randomSmallInts } from '../../src/random.js';
import { expectIdentical } from '../helpers/compare.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-io-'));
const gpu = await gpuBackend();
const cpu = cpuBackend();
afterAll(disposeGpuBackends);

/** A hand-made .npy file of the given dtype and raw little-endian bytes. */
function npyBytes(descr: string, shape: string, body: Uint8Array, fortran = 'False'): Uint8Array {
  let header = `{'descr': '${descr}', 'fortran_order': ${fortran}, 'shape': ${shape}, }`;
  header = header.padEnd(Math.ceil((11 + header.length) / 64) * 64 - 11, ' ') + '\n';
  const out = new Uint8Array(10 + header.length + body.length);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0], 0);
  new DataView(out.buffer).setUint16(8, header.length, true);
  out.set(new TextEncoder().encode(header), 10);
  out.set(body, 10 + header.length);
  return out;
}

describe('vector files', () => {
  const x = randomFloats(7 * 5, 1);
  for (const ext of ['.fvecs', '.npy', '.jsonl']) {
    it(`round-trips ${ext}`, () => {
      const path = join(dir, `x${ext}`);
      writeVectors(path, x, 7, 5);
      const back = readVectors(path);
      expect([back.n, back.d]).toEqual([7, 5]);
      expect(Array.from(back.data)).toEqual(Array.from(x));
    });
  }

  it('round-trips .ivecs and writes .csv', () => {
    const ids = Int32Array.from({ length: 6 }, (_, i) => i * 3 - 1);
    writeVectors(join(dir, 'ids.ivecs'), ids, 3, 2);
    expect(Array.from(readVectors(join(dir, 'ids.ivecs')).data)).toEqual(Array.from(ids));
    writeVectors(join(dir, 'ids.csv'), ids, 3, 2);
    expect(readFileSync(join(dir, 'ids.csv'), 'utf8')).toBe('-1,2\n5,8\n11,14\n');
  });

  it('reads .bvecs (uint8 rows)', () => {
    const bytes = new Uint8Array([2, 0, 0, 0, 7, 255, 2, 0, 0, 0, 0, 1]);
    writeFileSync(join(dir, 'b.bvecs'), bytes);
    const v = readVectors(join(dir, 'b.bvecs'));
    expect([v.n, v.d]).toEqual([2, 2]);
    expect(Array.from(v.data)).toEqual([7, 255, 0, 1]);
  });

  it('reads .npy float64, float16, uint8 and int8', () => {
    const f64 = new Float64Array([1.5, -2, 3, 4]);
    expect(Array.from(parseNpy(npyBytes('<f8', '(2, 2)', new Uint8Array(f64.buffer)), 'a').data)).toEqual([1.5, -2, 3, 4]);
    const f16 = new Uint16Array([0x3c00, 0xc000, 0x3800, 0x7bff]); // 1, -2, 0.5, 65504
    expect(Array.from(parseNpy(npyBytes('<f2', '(1, 4)', new Uint8Array(f16.buffer)), 'b').data)).toEqual([1, -2, 0.5, 65504]);
    expect(Array.from(parseNpy(npyBytes('|u1', '(2, 1)', new Uint8Array([7, 255])), 'c').data)).toEqual([7, 255]);
    expect(Array.from(parseNpy(npyBytes('|i1', '(2, 1)', new Uint8Array([0x80, 5])), 'd').data)).toEqual([-128, 5]);
    const own = formatNpy(new Float32Array([1, 2, 3]), 3, 1);
    expect(Array.from(parseNpy(own, 'e').data)).toEqual([1, 2, 3]);
  });

  it('rejects malformed files with the byte offset or line number', () => {
    const bad = (name: string, content: Uint8Array | string, message: RegExp): void => {
      const path = join(dir, name);
      writeFileSync(path, content);
      expect(() => readVectors(path)).toThrow(message);
    };
    const good = new Uint8Array(readFileSync(join(dir, 'x.fvecs')));
    bad('t.fvecs', good.subarray(0, good.length - 3), /truncated: 165 bytes .* the incomplete last row starts at byte 144/);
    bad('m.npy', npyBytes('<f4', '(2, 2)', new Uint8Array(12)), /truncated: 2 x 2 <f4 needs \d+ bytes; the file ends at byte \d+/);
    bad('f.npy', npyBytes('<f4', '(1, 1)', new Uint8Array(4), 'True'), /Fortran-order/);
    bad('s.npy', npyBytes('<f4', '(4,)', new Uint8Array(16)), /shape \(4,\) is not 2-D/);
    bad('c.npy', npyBytes('<c8', '(1, 1)', new Uint8Array(8)), /dtype <c8 is not supported/);
    bad('j.jsonl', '{"id": 1, "embedding": [1, 2]}\n{"id": 2, "embedding": [1]}\n', /line 2 has 1 values; expected 2/);
    bad('k.jsonl', '{"id": 1, "embedding": [1, 2]}\nnot json\n', /line 2 is not valid JSON/);
    bad('u.txt', 'x', /unknown vector file type '.txt'/);
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
    const v2 = variant('v2.idx', (b) => ((b[8] = 2), b));
    await expect(loadIndex(cpu, v2)).rejects.toThrow(/index format version 2; this build reads version 1/);
    const flipped = variant('flip.idx', (b) => ((b[45] ^= 1), b));
    await expect(loadIndex(cpu, flipped)).rejects.toThrow(/checksum mismatch: the file is corrupt/);
    const cut = variant('cut.idx', (b) => b.subarray(0, b.length - 10));
    await expect(loadIndex(cpu, cut)).rejects.toThrow(/truncated: the header describes \d+ bytes; the file has \d+/);
    const other = variant('other.idx', () => new Uint8Array(64));
    await expect(loadIndex(cpu, other)).rejects.toThrow(/not a webgpu-knn index file/);
  });
});
