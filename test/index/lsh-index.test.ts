/**
 * Binary-code Flat indexes (LSH, LSHr, LSHt, LSHrt: Faiss's IndexLSH) on both backends. A search
 * takes the k x kFactor candidates with the smallest Hamming distance (ties on the smaller id: exactly
 * those, as Hamming distances are exact on every device), then re-ranks
 * them by the float64 distance between the rotated query and each code's +-1 reconstruction (plus
 * thresholds). The oracle here computes exactly that from the saved file (thresholds, rotation and
 * code bits read by the file format, with plain loops: not by the library's decoder). GPU equals CPU
 * on the same codes; `,RFlat` with enough candidates is exact; files are tables + codes + ids.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import { Lsh } from '../../src/codecs/lsh.js';
import { randomOrthogonal } from '../../src/common/random.js';
import { indexFactory, parseIndexType, describeIndexType } from '../../src/indexes/factory.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { loadIndex } from '../../src/indexes/load-index.js';
import { clusteredFloats, randomFloats } from '../../src/common/random.js';
import { type Metric, type SearchResult, normalizeRows } from '../../src/types.js';
import { suiteBackends, suiteDir } from '../helpers/suite.js';

const { cpu, gpu, backends } = await suiteBackends();
const dir = suiteDir('wgknn-lsh-');

const d = 40; // two words a code, the second one partly used
const n = 700;
const nq = 6;
const k = 5;
const xb = clusteredFloats(n, d, 10, 61, 0.3);
const xq = randomFloats(nq * d, 62);
const HEADER = 40;
const W = Math.ceil(d / 32);

/** What a saved LSH index holds, read by the file format: thresholds, rotation (or null), and each row's bits. */
function readFile(path: string, rotate: boolean): { t: Float32Array; R: Float32Array | null; bits: Uint8Array[]; bytes: number } {
  const buf = readFileSync(path);
  const f32 = (at: number, len: number): Float32Array => new Float32Array(buf.buffer.slice(buf.byteOffset + at, buf.byteOffset + at + 4 * len));
  const t = f32(HEADER, d);
  const R = rotate ? f32(HEADER + 4 * d, d * d) : null;
  const at = HEADER + 4 * (d + (rotate ? d * d : 0));
  const words = new Uint32Array(buf.buffer.slice(buf.byteOffset + at, buf.byteOffset + at + 4 * n * W));
  const bits = Array.from({ length: n }, (_, i) => Uint8Array.from({ length: d }, (_, j) => (words[i * W + (j >> 5)] >>> (j & 31)) & 1));
  return { t, R, bits, bytes: statSync(path).size };
}

/** The oracle: Hamming shortlist of kc = k x kFactor (ties on the smaller id), then the float64 asymmetric re-rank, k kept. */
function oracle(metric: Metric, file: ReturnType<typeof readFile>, kc: number, allowed: (id: number) => boolean = () => true): { labels: number[]; distances: number[] }[] {
  const q = metric === 'cosine' ? normalizeRows(xq, d) : xq;
  const out = [];
  for (let r = 0; r < nq; r++) {
    // The query in the codes' space, as the library rounds it (float64 sum, one float32 rounding).
    const y = new Float32Array(d);
    for (let j = 0; j < d; j++) {
      let s = 0;
      if (file.R) for (let t = 0; t < d; t++) s += file.R[j * d + t] * q[r * d + t];
      else s = q[r * d + j];
      y[j] = s;
    }
    const qbits = Array.from(y, (v, j) => (v > file.t[j] ? 1 : 0));
    const ids = [...Array(n).keys()].filter(allowed);
    const ham = (i: number): number => file.bits[i].reduce((s, b, j) => s + (b !== qbits[j] ? 1 : 0), 0);
    const short = ids.map((i) => ({ i, h: ham(i) })).sort((a, b) => a.h - b.h || a.i - b.i).slice(0, kc);
    const scored = short.map(({ i }) => {
      let s = 0;
      for (let j = 0; j < d; j++) {
        const rec = file.t[j] + (file.bits[i][j] ? 1 : -1);
        s += metric === 'l2' ? (y[j] - rec) ** 2 : y[j] * rec;
      }
      return { i, s };
    });
    scored.sort((a, b) => (metric === 'l2' ? a.s - b.s : b.s - a.s) || a.i - b.i);
    const top = scored.slice(0, k);
    out.push({ labels: top.map((e) => e.i), distances: top.map((e) => Math.fround(e.s)) });
  }
  return out;
}

function expectOracle(got: SearchResult, want: ReturnType<typeof oracle>, what: string): void {
  want.forEach((w, r) => {
    expect(Array.from(got.labels.subarray(r * k, (r + 1) * k), Number), `${what}: row ${r} labels`).toEqual(w.labels);
    w.distances.forEach((v, j) => expect(Math.abs(got.distances[r * k + j] - v) <= 1e-5 * Math.max(1, Math.abs(v)), `${what}: row ${r} distance ${j}`).toBe(true));
  });
}

async function built(backend: Backend, type: string, metric: Metric): Promise<ReturnType<typeof indexFactory>> {
  const index = indexFactory(backend, d, type, metric);
  await index.train(xb);
  await index.add(xb);
  return index;
}

describe('LSH codes', () => {
  it('encode: bit j of a row is y_j > t_j, packed little-endian in u32 words; decode gives t_j +- 1', () => {
    const lsh = Lsh.fromTables(3, false, true, Float32Array.from([0.5, -1, 0]));
    const codes = lsh.encode(Float32Array.from([1, -2, 0, 0.5, 0, 3]), 2);
    // Row 0: 1 > 0.5, -2 > -1 no, 0 > 0 no -> 0b001; row 1: 0.5 > 0.5 no, 0 > -1, 3 > 0 -> 0b110.
    expect(Array.from(codes)).toEqual([0b001, 0b110]);
    expect(Array.from(lsh.decode(codes, 2))).toEqual([1.5, -2, -1, -0.5, 0, 1]);
  });

  it('trains each threshold as the median of its (rotated) dimension', () => {
    const x = randomFloats(101 * 8, 5);
    for (const rotate of [false, true]) {
      const lsh = new Lsh(8, rotate, true);
      lsh.train(x, 101);
      const y = lsh.toCodeSpace(x, 101);
      const t = lsh.tables().subarray(0, 8);
      for (let j = 0; j < 8; j++) {
        let above = 0;
        let at = 0;
        for (let i = 0; i < 101; i++) {
          if (y[i * 8 + j] > t[j]) above++;
          if (y[i * 8 + j] === t[j]) at++;
        }
        expect([above, at], `dimension ${j}`).toEqual([50, 1]);
      }
    }
  });

  it('rotates by an orthogonal matrix (R R^T = I) that depends only on its seed', () => {
    const R = randomOrthogonal(17, 3);
    for (let i = 0; i < 17; i++) {
      for (let j = 0; j < 17; j++) {
        let s = 0;
        for (let t = 0; t < 17; t++) s += R[i * 17 + t] * R[j * 17 + t];
        expect(Math.abs(s - (i === j ? 1 : 0))).toBeLessThan(1e-6);
      }
    }
    expect(randomOrthogonal(17, 3)).toEqual(R);
    expect(randomOrthogonal(17, 4)).not.toEqual(R);
  });
});

describe.each(backends)('LSH indexes (%s)', (name, backend) => {
  const skip = backend === null;
  for (const metric of ['l2', 'ip', 'cosine'] as const) {
    for (const type of ['LSH', 'LSHr', 'LSHt', 'LSHrt']) {
      it.skipIf(skip)(`${type} (${metric}): the Hamming shortlist re-ranked by the +-1 reconstructions, as the oracle reads the file`, async () => {
        const index = await built(backend!, type, metric);
        const path = join(dir, `${name}-${type}-${metric}.idx`);
        await index.save(path);
        const file = readFile(path, type.includes('r'));
        expect(file.bytes).toBe(HEADER + 4 * (d + (type.includes('r') ? d * d : 0)) + 4 * n * W + 8 * (n + 1) + 32);
        expectOracle(await index.search(xq, k), oracle(metric, file, k), `${type} ${metric}`);
        expectOracle(await index.search(xq, k, { kFactor: 8 }), oracle(metric, file, 8 * k), `${type} ${metric} kFactor 8`);
        await index.dispose();
      });
    }
  }

  it.skipIf(skip)('LSHrt,RFlat with kFactor covering the index gives the exact answer (equal to Flat)', async () => {
    for (const metric of ['l2', 'cosine'] as const) {
      const index = await built(backend!, 'LSHrt,RFlat', metric);
      const flat = await built(backend!, 'Flat', metric);
      const got = await index.search(xq, k, { kFactor: n / k });
      const want = await flat.search(xq, k);
      expect(Array.from(got.labels)).toEqual(Array.from(want.labels));
      for (let i = 0; i < got.distances.length; i++) expect(Math.abs(got.distances[i] - want.distances[i])).toBeLessThan(1e-5);
      await index.dispose();
      await flat.dispose();
    }
  });

  it.skipIf(skip)('filters and removals: the oracle over the rows left', async () => {
    const index = await built(backend!, 'LSHr', 'l2');
    const gone = BigInt64Array.from([...Array(n).keys()].filter((i) => i % 3 === 0).map(BigInt));
    expect(await index.removeIds(gone)).toBe(gone.length);
    const path = join(dir, `${name}-removed.idx`);
    await index.save(path);
    // The saved file holds only the rows left (renumbered): read the full index's file for the oracle.
    const full = await built(backend!, 'LSHr', 'l2');
    const fullPath = join(dir, `${name}-full.idx`);
    await full.save(fullPath);
    const file = readFile(fullPath, true);
    const allowed = (i: number): boolean => i % 3 !== 0 && i % 2 === 0;
    const filter = BigInt64Array.from([...Array(n).keys()].filter((i) => i % 2 === 0).map(BigInt));
    expectOracle(await index.search(xq, k, { filter, filterMode: 'pre' }), oracle('l2', file, k, allowed), 'filtered');
    await (index as unknown as { compact(): Promise<void> }).compact();
    expectOracle(await index.search(xq, k, { filter, filterMode: 'pre' }), oracle('l2', file, k, allowed), 'after compaction');
    await index.dispose();
    await full.dispose();
  });

  it.skipIf(skip)('refuses what binary codes cannot do: range search, an untrained LSHt, IVF', async () => {
    const index = await built(backend!, 'LSH', 'l2');
    await expect(index.rangeSearch(xq, 1)).rejects.toThrow(/rangeSearch: a LSH index scores Hamming distances/);
    const untrained = indexFactory(backend!, d, 'LSHt');
    expect(untrained.isTrained).toBe(false);
    await expect(untrained.add(xb)).rejects.toThrow(/the LSHt index is not trained; call train\(xt\) first/);
    expect(() => new IvfFlatIndex(backend!, { dim: d, nlist: 4, codec: 'LSHr' })).toThrow(/binary codes are stored in Flat indexes only/);
    await index.dispose();
    await untrained.dispose();
  });
});

describe.skipIf(!gpu)('LSH: GPU equals CPU', () => {
  it('the same saved codes give the same labels and distances on both backends', async () => {
    for (const type of ['LSHrt', 'LSHt,RFlat']) {
      const index = await built(gpu!, type, 'cosine');
      const path = join(dir, `gpu-cpu-${type}.idx`);
      await index.save(path);
      const other = await loadIndex(cpu, path);
      for (const kFactor of [1, 4]) {
        const a = await index.search(xq, k, { kFactor });
        const b = await other.search(xq, k, { kFactor });
        expect(Array.from(a.labels), `${type} kFactor ${kFactor}`).toEqual(Array.from(b.labels));
        expect(Array.from(a.distances)).toEqual(Array.from(b.distances));
      }
      await index.dispose();
      await other.dispose();
    }
  });
});

describe('LSH factory strings', () => {
  it('parses and spells back LSH, LSHr, LSHt, LSHrt with and without ,RFlat, and refuses an IVF stage', () => {
    for (const s of ['LSH', 'LSHr', 'LSHt', 'LSHrt', 'LSHrt,RFlat', 'LSH,Refine(SQfp16)']) expect(describeIndexType(parseIndexType(s))).toBe(s);
    expect(parseIndexType('LSHrt').codec).toEqual({ type: 'LSH', rotate: true, thresholds: true });
    expect(() => parseIndexType('IVF16,LSH')).toThrow(/binary codes are stored in Flat indexes only/);
    expect(() => parseIndexType('LSHtr')).toThrow(/unknown index description "LSHtr"/);
  });
});
