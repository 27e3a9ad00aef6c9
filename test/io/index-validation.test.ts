/**
 * Index files that pass the checksum but not the format (rewritten with a valid SHA-256), an IVF
 * nlist too large for its training set, and zero vectors under cosine.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cpuBackend } from '../helpers/cpu.js';
import { GraphIndex } from '../../src/indexes/graph/graph-index.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { loadIndex } from '../../src/indexes/load-index.js';
import { readIndexHeader } from '../../src/io/index-file.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { randomFloats } from '../../src/common/random.js';
import { InvalidArgumentError } from '../../src/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-idxval-'));
const cpu = cpuBackend();
const d = 4;
const n = 50;
const nlist = 3;
const HEADER = 40;

const x = randomFloats(n * d, 9);
const flat = new FlatIndex(cpu, { dim: d, metric: 'cosine' });
await flat.add(x);
await flat.save(join(dir, 'flat.idx'));
const ivf = new IvfFlatIndex(cpu, { dim: d, nlist, nprobe: 2 });
await ivf.train(x);
await ivf.add(x);
await ivf.save(join(dir, 'ivf.idx'));
// A transformed Flat index (type 11): PCAR2 tables (2 eigenvalues, a 2 x 4 matrix), rows of 2, full refine rows.
const pcar = new FlatIndex(cpu, { dim: d, metric: 'cosine', transform: 'PCAR2', refine: 'Flat' });
await pcar.train(x);
await pcar.add(x);
await pcar.save(join(dir, 'pcar.idx'));
// A graph index (type 13): rows, then the graph (degree 3 ids a row: nlist is the degree).
const cagra = new GraphIndex(cpu, { dim: d, degree: 3 });
await cagra.add(x);
await cagra.save(join(dir, 'cagra.idx'));
const CAGRA_GRAPH = HEADER + n * d * 4;
const PCAR_ROWS = HEADER + 4 * (2 + 2 * d);
/** PCAR2 with refine rows: p = 2, kind 3 (bits 24-25), refine (bit 31). */
const PCAR_WORD = (2 | (3 << 24) | 0x80000000) >>> 0;

// Byte offsets in the IVF file (see the format at the top of src/io/index-file.ts).
const CENTROIDS = HEADER;
const OFFSETS = CENTROIDS + nlist * d * 4;
const IDS = OFFSETS + (nlist + 1) * 4;
const XB = IDS + n * 4;
const FIELD = { type: 12, metric: 16, dim: 20, ntotal: 24, nlist: 28, nprobe: 32, reserved: 36 };

/** A copy of `file` changed by `mutate`, with a freshly computed (valid) SHA-256 at its end. */
function corrupt(file: string, mutate: (v: DataView) => void): string {
  const buf = new Uint8Array(readFileSync(join(dir, file)));
  mutate(new DataView(buf.buffer));
  buf.set(createHash('sha256').update(buf.subarray(0, buf.length - 32)).digest(), buf.length - 32);
  const out = join(dir, `bad-${Math.random().toString(16).slice(2)}.idx`);
  writeFileSync(out, buf);
  return out;
}

const u32 = (at: number, value: number) => (v: DataView) => v.setUint32(at, value, true);
const f32 = (at: number, value: number) => (v: DataView) => v.setFloat32(at, value, true);

describe('index files are checked beyond the checksum', () => {
  it('valid files load', async () => {
    expect(await readIndexHeader(join(dir, 'flat.idx'))).toMatchObject({ type: 'Flat', dim: d, ntotal: n });
    expect((await loadIndex(cpu, join(dir, 'flat.idx'))).ntotal).toBe(n);
    expect((await loadIndex(cpu, join(dir, 'ivf.idx'))).ntotal).toBe(n);
    expect(await readIndexHeader(join(dir, 'pcar.idx'))).toMatchObject({ type: 'Transform,Flat', dim: d, ntotal: n, transform: { kind: 'PCAR', p: 2 }, refine: 'Flat' });
    expect((await loadIndex(cpu, join(dir, 'pcar.idx'))).ntotal).toBe(n);
  });

  const cases: [string, string, (v: DataView) => void, RegExp][] = [
    ['type', 'flat.idx', u32(FIELD.type, 14), /bad header: type is 14; expected an integer in \[1, 13\] \(1 Flat, 2 IVF, 3 SQ8, 4 SQ4, 5 SQfp16, 6 PQ, 7 IVF,SQ8, 8 IVF,SQ4, 9 IVF,SQfp16, 10 IVF,PQ, 11 LSH, 12 Transform,Flat, 13 CAGRA\)/],
    ['metric', 'flat.idx', u32(FIELD.metric, 9), /bad header: metric is 9; expected 0 \(l2\), 1 \(ip\) or 2 \(cosine\)/],
    ['dim 0', 'flat.idx', u32(FIELD.dim, 0), /bad header: dim is 0; expected an integer in \[1, 65536\]/],
    ['dim huge', 'flat.idx', u32(FIELD.dim, 1 << 30), /bad header: dim is 1073741824/],
    ['Flat with an nlist', 'flat.idx', u32(FIELD.nlist, 5), /bad header: nlist is 5; expected 0 for a Flat type/],
    ['a codec word on Flat', 'flat.idx', u32(FIELD.reserved, 1), /bad header: codec word is 1; expected 0 for Flat/],
    ['a PQ type with no M', 'flat.idx', (v) => (u32(FIELD.type, 6)(v), u32(FIELD.reserved, 8 << 16)(v)), /bad header: codec word is 524288; expected M \(bits 0-15\) dividing dim = 4, nbits \(bits 16-23\) in \[4, 8\], refine \(bits 30-31\)/],
    ['a PQ type with nbits 9', 'flat.idx', (v) => (u32(FIELD.type, 6)(v), u32(FIELD.reserved, 2 | (9 << 16))(v)), /codec word is 589826; expected M/],
    ['an SQ type with PQ bits', 'flat.idx', (v) => (u32(FIELD.type, 3)(v), u32(FIELD.reserved, 2)(v)), /bad header: codec word is 2; expected refine bits \(30-31\) only for SQ8/],
    ['an LSH type with a stray bit', 'flat.idx', (v) => (u32(FIELD.type, 11)(v), u32(FIELD.reserved, 4)(v)), /bad header: codec word is 4; expected bit 0 \(rotation\), bit 1 \(thresholds\) and refine \(bits 30-31\) only for LSH/],
    ['an SQfp16-refine bit without the refine bit', 'flat.idx', (v) => (u32(FIELD.type, 3)(v), u32(FIELD.reserved, 0x40000000)(v)), /bad header: codec word is 1073741824; expected bit 30 \(SQfp16 refine rows\) only with bit 31 \(refine\)/],
    ['IVF nlist 0', 'ivf.idx', u32(FIELD.nlist, 0), /bad header: nlist is 0; expected an integer >= 1 for an IVF type/],
    ['IVF nprobe 0', 'ivf.idx', u32(FIELD.nprobe, 0), /bad header: nprobe is 0; expected an integer in \[1, 3\] \(nlist\)/],
    ['IVF nprobe > nlist', 'ivf.idx', u32(FIELD.nprobe, 4), /bad header: nprobe is 4; expected an integer in \[1, 3\]/],
    ['offsets[0]', 'ivf.idx', u32(OFFSETS, 1), /offsets\[0\] is 1; expected 0/],
    ['decreasing offsets', 'ivf.idx', (v) => v.setUint32(OFFSETS + 4, v.getUint32(OFFSETS + 8, true) + 1, true), /offsets\[2\] = \d+ is less than offsets\[1\] = \d+; offsets must be non-decreasing/],
    ['offsets[nlist]', 'ivf.idx', u32(OFFSETS + nlist * 4, n - 1), /offsets\[3\] \(nlist\) is 49; expected ntotal = 50/],
    ['an id out of range', 'ivf.idx', u32(IDS + 8, n), /ids\[2\] is 50; expected an id in \[0, 49\]/],
    ['a repeated id', 'ivf.idx', (v) => v.setUint32(IDS + 4, v.getUint32(IDS, true), true), /ids\[\d+\]: id \d+ appears twice; each id must appear exactly once/],
    ['a NaN vector', 'ivf.idx', f32(XB + 12, NaN), /xb row 0 column 3 is NaN; expected a finite value/],
    ['an infinite centroid', 'ivf.idx', f32(CENTROIDS + 4 * (d + 1), Infinity), /centroids row 1 column 1 is Infinity; expected a finite value/],
    ['a cosine row that is not unit norm', 'flat.idx', f32(HEADER + 4 * d * 7, 3), /xb row 7 has norm [\d.]+; a cosine index stores unit-norm \(or zero\) rows/],
    // The graph (type 13): its degree in nlist, its edges rows of the index.
    ['CAGRA degree 0', 'cagra.idx', u32(FIELD.nlist, 0), /bad header: nlist is 0; expected the degree, an integer in \[1, 256\], for a CAGRA type/],
    ['CAGRA with an nprobe', 'cagra.idx', u32(FIELD.nprobe, 1), /bad header: nprobe is 1; expected 0 for a CAGRA type/],
    ['a CAGRA edge past the rows', 'cagra.idx', u32(CAGRA_GRAPH + 4 * 4, n), /graph: graph\[4\] \(row 1\) is 50; expected a row in \[0, 49\] or 0xffffffff \(none\)/],
    // Transformed Flat (type 11): the transform word, its tables, its p-dim rows.
    ['a transform word with p 0', 'pcar.idx', u32(FIELD.reserved, PCAR_WORD & ~2), /bad header: transform word is 2197815296; expected p \(bits 0-16\) in \[1, 4\] \(dim\), kind \(bits 24-25\) 1 Prefix, 2 PCA or 3 PCAR, refine \(bits 30-31\), every other bit 0/],
    ['a transform word with p > dim', 'pcar.idx', u32(FIELD.reserved, (PCAR_WORD & ~2) | 5), /bad header: transform word is \d+; expected p \(bits 0-16\) in \[1, 4\]/],
    ['a transform word with kind 0', 'pcar.idx', u32(FIELD.reserved, 2), /bad header: transform word is 2; expected p/],
    ['a transform word with a spare bit', 'pcar.idx', u32(FIELD.reserved, PCAR_WORD | (1 << 20)), /bad header: transform word is \d+; expected p/],
    ['a transform word whose kind needs tables the size does not hold', 'pcar.idx', u32(FIELD.reserved, (PCAR_WORD & ~(3 << 24)) | (1 << 24)), /has trailing bytes: the header describes \d+ bytes/],
    ['a NaN in the transform tables', 'pcar.idx', f32(HEADER + 4 * 3, NaN), /transform tables row 0 column 3 is NaN; expected a finite value/],
    ['a transformed cosine row that is not unit norm', 'pcar.idx', f32(PCAR_ROWS + 4 * 2 * 5, 3), /xb row 5 has norm [\d.]+; a cosine index stores unit-norm \(or zero\) rows/],
    ['a codec word on a transformed type from another type', 'flat.idx', u32(FIELD.type, 12), /bad header: transform word is 0; expected p/],
  ];
  for (const [name, file, mutate, pattern] of cases) {
    it(`rejects ${name}`, async () => {
      const path = corrupt(file, mutate);
      await expect(loadIndex(cpu, path)).rejects.toThrow(InvalidArgumentError);
      await expect(loadIndex(cpu, path)).rejects.toThrow(pattern);
    });
  }

  it('accepts a zero row in a cosine index (a zero vector stays zero)', async () => {
    const path = corrupt('flat.idx', (v) => {
      for (let j = 0; j < d; j++) v.setFloat32(HEADER + 4 * (d * 5 + j), 0, true);
    });
    expect((await loadIndex(cpu, path)).ntotal).toBe(n);
  });
});

describe('IVF with a huge nlist', () => {
  it('costs nothing until vectors are added', () => {
    const t0 = performance.now();
    const index = new IvfFlatIndex(cpu, { dim: d, nlist: 99_999_999 });
    expect(performance.now() - t0).toBeLessThan(200);
    expect(index.ntotal).toBe(0);
  });

  it('train refuses fewer vectors than nlist, at once', async () => {
    const index = new IvfFlatIndex(cpu, { dim: d, nlist: 99_999_999 });
    const t0 = performance.now();
    await expect(index.train(x)).rejects.toThrow(new InvalidArgumentError('IvfFlatIndex.train: nlist = 99999999 needs at least k = 99999999 training points; got 50'));
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(index.isTrained).toBe(false);
  });
});

describe('zero vectors under cosine: cosine 0 with everything', () => {
  // Rows: 0 zero, 1 (1,0,0,0), 2 (-1,0,0,0), 3 zero.
  const xb = Float32Array.of(0, 0, 0, 0, 1, 0, 0, 0, -1, 0, 0, 0, 0, 0, 0, 0);
  const query = Float32Array.of(2, 0, 0, 0);
  const zero = new Float32Array(4);

  for (const kind of ['Flat', 'IVF'] as const) {
    it(`${kind}: a zero vector in the index scores 0; a zero query scores 0 against everything`, async () => {
      let index: FlatIndex | IvfFlatIndex;
      if (kind === 'Flat') {
        index = new FlatIndex(cpu, { dim: 4, metric: 'cosine' });
      } else {
        index = new IvfFlatIndex(cpu, { dim: 4, metric: 'cosine', nlist: 2, nprobe: 2 });
        await index.train(xb);
      }
      await index.add(xb);
      expect(index.ntotal).toBe(4);
      const r = await index.search(query, 4);
      expect(Array.from(r.labels)).toEqual([1, 0, 3, 2]); // 1, then the zero rows (ties: smaller id), then -1
      expect(Array.from(r.distances)).toEqual([1, 0, 0, -1]);
      const z = await index.search(zero, 4);
      expect(Array.from(z.distances)).toEqual([0, 0, 0, 0]);
      expect(Array.from(z.labels)).toEqual([0, 1, 2, 3]);
    });
  }
});
