/**
 * Index files crafted to pass every structural check and the checksum (recomputed after each
 * change), whose values lead the scores astray: codes that decode to NaN or Infinity, tables and
 * rows whose scores overflow float32, matrices that are not the rotations or projections they
 * stand for, bits set in a code's padding. Loading refuses each, naming the file, the section and
 * the field. The bound is the one `add` puts on vectors (a squared norm of at most a quarter of
 * float32's range, src/types.ts): every vector a query is compared with (rows, centroids, and the
 * reconstructions codes can decode to) must keep it, so that every distance stays finite. The
 * same checks stand behind restoreTables / restoreCodec, the library's way in for trained tables.
 * And save() on an index not yet trained says so before it writes anything.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { indexFactory } from '../../src/indexes/factory.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { loadIndex } from '../../src/indexes/load-index.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { clusteredFloats } from '../../src/common/random.js';
import type { Metric } from '../../src/types.js';

import type { VectorIndex } from '../../src/indexes/vector-index.js';
import { suiteBackends, suiteDir } from '../helpers/suite.js';
import { InvalidArgumentError } from '../../src/errors.js';

const { cpu, backends } = await suiteBackends();
const dir = suiteDir('wgknn-crafted-');

const d = 6; // dpad 8: SQfp16 rows have two padding halves, SQ8 rows two padding bytes, LSH 26 padding bits
const n = 300;
const nlist = 3;
const HEADER = 40;
const xb = clusteredFloats(n, d, 6, 77);

/** Builds `description` on the CPU (trained, all of xb added) and saves it; the file's name. */
async function saved(description: string, metric: Metric = 'l2'): Promise<string> {
  const index = indexFactory(cpu, d, description, metric);
  await index.train(xb);
  await index.add(xb);
  const path = join(dir, `${description.replace(/[^\w]/g, '_')}-${metric}.idx`);
  await index.save(path);
  await index.dispose();
  return path;
}

/** A copy of `file` changed by `mutate`, with a freshly computed (valid) SHA-256 at its end. */
function crafted(file: string, mutate: (v: DataView) => void): string {
  const buf = new Uint8Array(readFileSync(file));
  mutate(new DataView(buf.buffer));
  buf.set(createHash('sha256').update(buf.subarray(0, buf.length - 32)).digest(), buf.length - 32);
  const out = join(dir, `crafted-${Math.random().toString(16).slice(2)}.idx`);
  writeFileSync(out, buf);
  return out;
}

const f32 = (at: number, value: number) => (v: DataView) => v.setFloat32(at, value, true);
const u16 = (at: number, value: number) => (v: DataView) => v.setUint16(at, value, true);
const u8 = (at: number, value: number) => (v: DataView) => v.setUint8(at, value);
/** Multiplies `count` floats from byte `at` by `by`. */
const scaled = (at: number, count: number, by: number) => (v: DataView) => {
  for (let i = 0; i < count; i++) v.setFloat32(at + 4 * i, v.getFloat32(at + 4 * i, true) * by, true);
};

// Layouts (src/io/index-file.ts). Flat codes: header, tables, codes (rowWords words a row), [refine
// rows], ids. IVF codes: header, centroids, tables, offsets, list ids, codes, [refine rows], ids.
const SQ_TABLES = 2 * d; // vmin[d], vdiff[d]
const FP16_WORDS = 4; // 2 d bytes padded to dpad / 2 words: halves 6 and 7 are padding
const PQ_TABLES = 16 * d; // PQ2x4: 2 sub-quantizers of 16 centroids of 3 floats
const IVF_CODES = HEADER + 4 * nlist * d; // where an IVF file's tables start

const files = {
  flat: await saved('Flat'),
  ivf: await saved(`IVF${nlist},Flat`),
  sq8: await saved('SQ8'),
  sq4: await saved('SQ4'),
  fp16: await saved('SQfp16'),
  pq: await saved('PQ2x4'),
  ivfSq8: await saved(`IVF${nlist},SQ8`),
  ivfPq: await saved(`IVF${nlist},PQ2x4`),
  lsht: await saved('LSHt'),
  lshr: await saved('LSHr'),
  pca: await saved('PCA4,Flat'),
  pcaRefine: await saved('PCA4,Flat,RFlat'),
  rflat: await saved('SQ8,RFlat'),
  refine16: await saved('SQ8,Refine(SQfp16)'),
};

const MAX = '8\\.507e\\+37';

describe('crafted index files are refused at load, naming the section and the field', () => {
  const cases: [string, string, (v: DataView) => void, RegExp][] = [
    // Float rows keep add's bound (a NaN was refused already; a huge finite value was not, or not with the file named).
    ['a Flat row too large', files.flat, f32(HEADER + 4 * (3 * d + 2), 1e20), new RegExp(`: xb row 3 has a squared norm of 1\\.000e\\+40; at most ${MAX}`)],
    ['an IVF-Flat row too large', files.ivf, f32(HEADER + 4 * (nlist * d + nlist + 1 + n) + 4, 1e20), new RegExp(`: xb row 0 has a squared norm of 1\\.000e\\+40; at most ${MAX}`)],
    ['an IVF centroid too large', files.ivf, f32(HEADER + 4 * (d + 1), 1e20), new RegExp(`: centroids row 1 has a squared norm of 1\\.000e\\+40; at most ${MAX}`)],
    // SQ tables: every code's reconstruction within the bound.
    ['an SQ8 vdiff of 1e38', files.sq8, f32(HEADER + 4 * (d + 2), 1e38), new RegExp(`: SQ8 tables: a reconstruction can have a squared norm of 1\\.00\\de\\+76 \\(dimension 2 the most: vmin\\[2\\] = [^,]+, vdiff\\[2\\] = 1\\.000e\\+38\\); at most ${MAX}`)],
    ['an SQ4 vmin of -1e20', files.sq4, f32(HEADER + 4 * 5, -1e20), new RegExp(`SQ4 tables: a reconstruction can have a squared norm of 1\\.0\\d*e\\+40 \\(dimension 5 the most: vmin\\[5\\] = -1\\.000e\\+20, vdiff\\[5\\] = `)],
    ['a negative SQ8 vdiff', files.sq8, f32(HEADER + 4 * (d + 1), -1), /SQ8 tables: vdiff\[1\] is -1; expected a finite value >= 0/],
    // SQfp16 codes: each half finite, the padding halves zero.
    ['an SQfp16 NaN half', files.fp16, u16(HEADER + 4 * FP16_WORDS * 4 + 2 * 1, 0x7e00), /: codes row 4 has NaN \(half 0x7e00\) at column 1; expected finite values/],
    ['an SQfp16 Infinity half', files.fp16, u16(HEADER + 2 * 5, 0xfc00), /codes row 0 has -Infinity \(half 0xfc00\) at column 5; expected finite values/],
    ['an SQfp16 padding half', files.fp16, u16(HEADER + 4 * FP16_WORDS * 2 + 2 * 7, 0x3c00), /codes row 2 has bit 122 set, past its 96 bits of code; the padding must be 0/],
    // PQ codebooks: every reconstruction within the bound; codes' padding zero.
    ['a PQ codebook entry of 3e38', files.pq, f32(HEADER + 4 * (16 * 3 + 5 * 3 + 1), 3e38), new RegExp(`PQ2x4 codebook: a reconstruction can have a squared norm of 9\\.0\\d*e\\+76 \\(sub-quantizer 1, centroid 5 the most\\); at most ${MAX}`)],
    ['a PQ code with padding bits', files.pq, u8(HEADER + 4 * PQ_TABLES + 4 * 9 + 2, 1), /codes row 9 has bit 16 set, past its 8 bits of code; the padding must be 0/],
    // IVF codes: each list's centroid plus the largest residual reconstruction within the bound.
    ['an IVF,PQ codebook entry of 3e38', files.ivfPq, f32(IVF_CODES + 4 * 7, 3e38), /PQ2x4 codebook: a reconstruction can have a squared norm of 9\.0\d*e\+76/],
    ['an IVF,SQ8 centroid that the residuals push past the bound', files.ivfSq8, (v) => {
      // Each alone is within the bound (3.6e37); a centroid plus a residual reaches 1.4e38.
      v.setFloat32(HEADER + 4 * (d + 0), 6e18, true);
      v.setFloat32(IVF_CODES, 6e18, true);
    }, new RegExp(`: list 1: its centroid \\(norm 6\\.000e\\+18\\) plus the largest reconstruction of the SQ8 tables \\(norm 6\\.000e\\+18\\) can reach a squared norm of 1\\.440e\\+38; at most ${MAX}`)],
    // LSH: thresholds within the bound, the rotation orthonormal, codes' padding zero.
    ['an LSHt threshold of 1e20', files.lsht, f32(HEADER + 4 * 4, 1e20), new RegExp(`LSHt thresholds: a reconstruction can have a squared norm of 1\\.000e\\+40 \\(t\\[4\\] the most\\); at most ${MAX}`)],
    ['an LSHt NaN threshold', files.lsht, f32(HEADER + 4 * 2, NaN), /tables row 0 column 2 is NaN; expected a finite value/],
    ['an LSHr rotation row scaled by 2', files.lshr, scaled(HEADER + 4 * (d + 3 * d), d, 2), /LSHr rotation: row 3: the sum of \|R R\^T - I\| over its row is 3\.000; at most 0\.0009765625 \(the rows must be orthonormal: an orthogonal rotation\)/],
    ['an LSH code with padding bits', files.lshr, u8(HEADER + 4 * (d + d * d) + 4 * 11, 0x80), /codes row 11 has bit 7 set, past its 6 bits of code; the padding must be 0/],
    // PCA: the matrix's rows orthonormal, the transformed rows within the bound.
    ['a PCA matrix row scaled by 1e20', files.pca, scaled(HEADER + 4 * (4 + 2 * d), d, 1e20), /PCA4 matrix: row 2: the sum of \|P P\^T - I\| over its row is 1\.000e\+40; at most 0\.0009765625 \(the rows must be orthonormal: PCA's principal axes\)/],
    ['a PCA matrix with two equal rows', files.pca, (v) => {
      for (let j = 0; j < d; j++) v.setFloat32(HEADER + 4 * (4 + d + j), v.getFloat32(HEADER + 4 * (4 + j), true), true);
    }, /PCA4 matrix: row [01]: the sum of \|P P\^T - I\| over its row is 1\.000; at most 0\.0009765625/],
    ['a PCA-transformed row too large', files.pca, f32(HEADER + 4 * (4 + 4 * d) + 4 * (4 * 7 + 1), 1e20), new RegExp(`: xb row 7 has a squared norm of 1\\.000e\\+40; at most ${MAX}`)],
    // Refine rows: float32 within the bound, SQfp16 codes finite.
    ['a PCA refine row too large', files.pcaRefine, f32(HEADER + 4 * (4 + 4 * d) + 4 * 4 * n + 4 * (d * 8 + 5), 1e20), new RegExp(`: refine row 8 has a squared norm of 1\\.000e\\+40; at most ${MAX}`)],
    ['an RFlat refine row too large', files.rflat, f32(HEADER + 4 * SQ_TABLES + 4 * 2 * n + 4 * (d * 12), -1e20), new RegExp(`: refine row 12 has a squared norm of 1\\.000e\\+40; at most ${MAX}`)],
    ['a Refine(SQfp16) NaN half', files.refine16, u16(HEADER + 4 * SQ_TABLES + 4 * 2 * n + 4 * FP16_WORDS * 20 + 2 * 3, 0x7c01), /refine \(SQfp16 codes\) row 20 has NaN \(half 0x7c01\) at column 3; expected finite values/],
  ];
  it('the untouched files load', async () => {
    for (const path of Object.values(files)) await (await loadIndex(cpu, path)).dispose();
  });
  for (const [name, file, mutate, pattern] of cases) {
    it(`refuses ${name}`, async () => {
      const path = crafted(file, mutate);
      const err = await loadIndex(cpu, path).then(() => null, (e: unknown) => e);
      expect(err, 'loads').toBeInstanceOf(InvalidArgumentError);
      const message = (err as Error).message;
      expect(message.startsWith(`${path}: `), message).toBe(true);
      expect(message.includes('\n'), 'one line').toBe(false);
      expect(message).toMatch(pattern);
    });
  }

  // The audit's two reproductions, on both backends: before, the files loaded, a query equal to
  // vector 0 got it last at NaN, and a k = ntotal search lost the 14 vectors of the 3e38 entry.
  for (const [name, backend] of backends) {
    it.skipIf(!backend)(`${name}: the audit's SQfp16 NaN halves and PQ entry of 3e38 are refused`, async () => {
      const nan = crafted(files.fp16, (v) => {
        for (let j = 0; j < d; j++) v.setUint16(HEADER + 2 * j, 0x7e00, true);
      });
      await expect(loadIndex(backend!, nan)).rejects.toThrow(/codes row 0 has NaN \(half 0x7e00\) at column 0/);
      await expect(loadIndex(backend!, crafted(files.pq, f32(HEADER, 3e38)))).rejects.toThrow(/PQ2x4 codebook: a reconstruction can have a squared norm of 9\.0\d*e\+76 \(sub-quantizer 0, centroid 0 the most\)/);
    });
  }
});

describe('trained tables given through the API are checked as a file\'s are', () => {
  it('FlatIndex.restoreTables and IvfFlatIndex.restoreCodec refuse tables whose reconstructions overflow, or that are not finite', async () => {
    const pq = new FlatIndex(cpu, { dim: d, codec: 'PQ2x4' });
    const codebook = new Float32Array(PQ_TABLES).fill(0.5);
    codebook[20] = 3e38;
    await expect(pq.restoreTables(codebook)).rejects.toThrow(/PQ2x4 codebook: a reconstruction can have a squared norm of 9\.0\d*e\+76 \(sub-quantizer 0, centroid 6 the most\)/);
    codebook[20] = NaN;
    await expect(pq.restoreTables(codebook)).rejects.toThrow(/PQ2x4 codebook: sub-quantizer 0, centroid 6, component 2 is NaN; expected a finite value/);
    const sq = new FlatIndex(cpu, { dim: d, codec: 'SQ8' });
    const tables = new Float32Array(SQ_TABLES).fill(1);
    tables[d] = 1e38;
    await expect(sq.restoreTables(tables)).rejects.toThrow(/SQ8 tables: a reconstruction can have a squared norm of/);
    const lsh = new FlatIndex(cpu, { dim: d, codec: 'LSHrt' });
    const rotation = new Float32Array(d + d * d);
    for (let j = 0; j < d; j++) rotation[d + j * d + j] = 1;
    await lsh.restoreTables(rotation); // the identity is a rotation
    rotation[d + 1] = 1;
    await expect(lsh.restoreTables(rotation)).rejects.toThrow(/LSHrt rotation: row 0: the sum of \|R R\^T - I\| over its row is 2\.000; at most/);
    const ivf = new IvfFlatIndex(cpu, { dim: d, nlist: 1, codec: 'PQ2x4' });
    await ivf.setCentroids(new Float32Array(d).fill(3e18));
    const near = new Float32Array(PQ_TABLES).fill(0);
    near[0] = 4e18;
    await expect(ivf.restoreCodec(near)).rejects.toThrow(/list 0: its centroid \(norm 7\.348e\+18\) plus the largest reconstruction of the PQ2x4 codebook \(norm 4\.000e\+18\) can reach a squared norm of 1\.288e\+38/);
    await Promise.all([pq.dispose(), sq.dispose(), lsh.dispose(), ivf.dispose()]);
  });

  it('training refuses tables whose reconstructions could overflow, though every row keeps the bound', async () => {
    // Each row's squared norm is 8.1e37 (within 8.507e37); a code can take both maxima at once.
    const sq = new FlatIndex(cpu, { dim: 2, codec: 'SQ8' });
    await expect(sq.train(new Float32Array([9e18, 0, 0, 9e18]))).rejects.toThrow(/SQ8 tables: a reconstruction can have a squared norm of 1\.6\d+e\+38 .*; scale the vectors down/);
    await sq.dispose();
  });
});

describe('save() on an index not yet trained says so, and writes nothing', () => {
  for (const description of ['SQ8', 'SQ4', 'PQ2', 'LSHt', 'PCA4,Flat', `IVF${nlist},Flat`, `IVF${nlist},SQ8`]) {
    it(description, async () => {
      const index: VectorIndex = indexFactory(cpu, d, description, 'l2');
      const path = join(dir, `untrained-${description.replace(/[^\w]/g, '_')}.idx`);
      const err = await index.save(path).then(() => null, (e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect((err as Error).message).toMatch(/\.save: the (\S+ )?index is not trained; call train\(xt\) first/);
      expect(existsSync(path)).toBe(false);
      await index.dispose();
    });
  }
});

