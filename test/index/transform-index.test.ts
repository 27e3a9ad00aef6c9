/**
 * Transforms before Flat storage (`Prefix<p>`, `PCA<p>`, `PCAR<p>`, src/codecs/transforms.ts), on both
 * backends. Without refine rows an index is a Flat index over the transformed rows, so its answer
 * must equal a float64 brute force over those rows against the transformed queries, both computed
 * here from the saved file (matrix and rows, by the file format and plain loops, not by the
 * library's transform); with `,RFlat` and kFactor covering the index it is the exact Flat answer;
 * with p = d it ranks as Flat for every metric (PCA's projection is not centred). The PCA itself
 * recovers planted principal axes. GPU equals CPU on the same file.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import { describeIndexType, indexFactory, parseIndexType } from '../../src/indexes/factory.js';
import { loadIndex } from '../../src/indexes/load-index.js';
import { clusteredFloats, randomFloats, rng } from '../../src/common/random.js';
import { randomOrthogonal } from '../../src/common/random.js';
import { Transform, symmetricEigen } from '../../src/codecs/transforms.js';
import { type Metric, type SearchResult, normalizeRows } from '../../src/types.js';
import type { VectorIndex } from '../../src/indexes/vector-index.js';
import { bruteForce, expectEqual } from '../helpers/reconstructed.js';
import { suiteBackends, suiteDir } from '../helpers/suite.js';

const { cpu, gpu, backends } = await suiteBackends();
const dir = suiteDir('wgknn-xform-');

const d = 16;
const n = 600;
const nq = 7;
const p = 6;
const xb = clusteredFloats(n, d, 10, 61, 0.3);
const xq = randomFloats(nq * d, 62);
const HEADER = 40;
const METRICS: Metric[] = ['l2', 'ip', 'cosine'];

async function built(backend: Backend, description: string, metric: Metric, x = xb): Promise<VectorIndex> {
  const index = indexFactory(backend, d, description, metric);
  await index.train(x);
  await index.add(x);
  return index;
}

/** A saved transformed index read by its format: the p x d matrix (null for Prefix) and the stored p-dim rows by id (no removals). */
function readTransformFile(path: string, pca: boolean): { matrix: Float32Array | null; rows: Float32Array } {
  const buf = readFileSync(path);
  const f32 = (at: number, len: number): Float32Array => new Float32Array(buf.buffer.slice(buf.byteOffset + at, buf.byteOffset + at + 4 * len));
  let at = HEADER;
  let matrix: Float32Array | null = null;
  if (pca) {
    matrix = f32(at + 4 * p, p * d); // after the p eigenvalues
    at += 4 * (p + p * d);
  }
  return { matrix, rows: f32(at, n * p) };
}

/** The queries as the index searches them: prepared (normalised for cosine), then Prefix or P q, re-normalised for cosine; plain loops. */
function transformQueries(metric: Metric, matrix: Float32Array | null): Float32Array {
  const q = metric === 'cosine' ? normalizeRows(xq, d) : xq;
  const out = new Float32Array(nq * p);
  for (let r = 0; r < nq; r++) {
    for (let i = 0; i < p; i++) {
      let s = 0;
      if (matrix) for (let j = 0; j < d; j++) s += matrix[i * d + j] * q[r * d + j];
      else s = q[r * d + i];
      out[r * p + i] = s;
    }
  }
  return metric === 'cosine' ? normalizeRows(out, p) : out;
}

/** Brute force in the transformed space (cosine rows and queries are unit: their inner product). */
function bruteTransformed(metric: Metric, yq: Float32Array, rows: Float32Array, allowed: (id: number) => boolean, k: number): ReturnType<typeof bruteForce> {
  return bruteForce(metric === 'cosine' ? 'ip' : metric, yq, nq, p, rows, allowed, k);
}

function expectSame(a: SearchResult, b: SearchResult, what: string, atol = 0): void {
  expect(Array.from(a.labels), what).toEqual(Array.from(b.labels));
  if (atol === 0) expect(Array.from(a.distances), what).toEqual(Array.from(b.distances));
  else a.distances.forEach((v, i) => expect(Math.abs(v - b.distances[i]) <= atol * Math.max(1, Math.abs(v)), `${what}: distance ${i}: ${v} vs ${b.distances[i]}`).toBe(true));
}

describe('transforms before Flat: Prefix<p>, PCA<p>, PCAR<p>', () => {
  for (const [name, backend] of backends) {
    for (const metric of METRICS) {
      it.skipIf(!backend)(`${name} ${metric}: Prefix<d> is Flat; with ,RFlat and kFactor covering the index Prefix, PCA and PCAR are Flat; PCA<d> ranks as Flat`, async () => {
        const k = 10;
        const flat = await built(backend!, 'Flat', metric);
        const want = await flat.search(xq, k);
        const whole = await built(backend!, `Prefix${d},Flat`, metric);
        expectSame(await whole.search(xq, k), want, `Prefix${d},Flat`);
        for (const t of [`Prefix${p}`, `PCA${p}`, `PCAR${p}`, `PCA${d}`]) {
          const index = await built(backend!, `${t},Flat,RFlat`, metric);
          expectSame(await index.search(xq, k, { kFactor: n / k }), want, `${t},Flat,RFlat`);
          await index.dispose();
        }
        for (const t of [`PCA${d}`, `PCAR${d}`]) {
          // A rotation of every dimension: the same order, distances within float32 rounding.
          const index = await built(backend!, `${t},Flat`, metric);
          expectSame(await index.search(xq, k), want, `${t},Flat`, 1e-4);
          await index.dispose();
        }
        await Promise.all([flat.dispose(), whole.dispose()]);
      });
    }

    for (const t of ['Prefix', 'PCAR']) {
      for (const metric of METRICS) {
        it.skipIf(!backend)(`${name} ${t}${p},Flat ${metric}: search, filters, removal, compaction and range search equal brute force over the transformed rows of the saved file`, async () => {
          const index = await built(backend!, `${t}${p},Flat`, metric);
          const path = join(dir, `${name}-${t}-${metric}.idx`);
          await index.save(path);
          const tables = t === 'Prefix' ? 0 : p + p * d;
          expect(statSync(path).size, 'header + tables + p floats a row + ids + checksum').toBe(HEADER + 4 * tables + 4 * n * p + 8 * (n + 1) + 32);
          const { matrix, rows } = readTransformFile(path, t !== 'Prefix');
          if (metric === 'cosine') {
            // Re-normalised: the stored rows have unit norm.
            for (let i = 0; i < n; i++) expect(Math.abs(Math.hypot(...rows.subarray(i * p, (i + 1) * p)) - 1) < 1e-5, `row ${i} norm`).toBe(true);
          }
          if (t === 'Prefix') {
            const pre = metric === 'cosine' ? normalizeRows(xb, d) : xb;
            const want = Float32Array.from({ length: n * p }, (_, i) => pre[Math.floor(i / p) * d + (i % p)]);
            expect(Array.from(rows), 'Prefix rows: the first p of each row').toEqual(Array.from(metric === 'cosine' ? normalizeRows(want, p) : want));
          }
          const yq = transformQueries(metric, matrix);
          const k = 8;
          expectEqual(await index.search(xq, k), bruteTransformed(metric, yq, rows, () => true, k), k, 'search');
          const odd = (id: number): boolean => id % 3 === 1;
          expectEqual(await index.search(xq, k, { filter: odd }), bruteTransformed(metric, yq, rows, odd, k), k, 'filtered');
          const gone = BigInt64Array.from({ length: n / 10 }, (_, i) => BigInt(i * 10));
          expect(await index.removeIds(gone)).toBe(n / 10);
          const live = (id: number): boolean => id % 10 !== 0;
          expectEqual(await index.search(xq, k), bruteTransformed(metric, yq, rows, live, k), k, 'tombstones');
          await (index as unknown as { compact(): Promise<void> }).compact();
          expectEqual(await index.search(xq, k), bruteTransformed(metric, yq, rows, live, k), k, 'compacted');
          expectEqual(await index.search(xq, k, { filter: odd }), bruteTransformed(metric, yq, rows, (id) => live(id) && odd(id), k), k, 'compacted, filtered');
          const all = bruteTransformed(metric, yq, rows, live, n);
          const near = all[0].distances;
          const radius = (near[29] + near[30]) / 2;
          const got = await index.rangeSearch(xq, radius);
          for (let r = 0; r < nq; r++) {
            const inside = all[r].labels.filter((_, j) => (metric === 'l2' ? all[r].distances[j] <= radius : all[r].distances[j] >= radius)).sort((a, b) => a - b);
            expect(Array.from(got.labels.subarray(got.lims[r], got.lims[r + 1])).sort((a, b) => a - b), `range row ${r}`).toEqual(inside);
          }
          const loaded = await loadIndex(backend!, path);
          expectEqual(await loaded.search(xq, k), bruteTransformed(metric, yq, rows, () => true, k), k, 'loaded');
          await Promise.all([loaded.dispose(), index.dispose()]);
        });
      }
    }

    it.skipIf(!backend)(`${name}: ,RFlat after a transform keeps the full rows: saved size by formula, loaded answers equal, removal re-ranks live rows only`, async () => {
      for (const metric of ['l2', 'cosine'] as Metric[]) {
        const index = await built(backend!, `PCAR${p},Flat,RFlat`, metric);
        const k = 5;
        const before = await index.search(xq, k, { kFactor: 4 });
        const path = join(dir, `${name}-pcar-rflat-${metric}.idx`);
        await index.save(path);
        expect(statSync(path).size, 'header + eigenvalues + matrix + p-dim rows + d-dim refine rows + ids + checksum').toBe(HEADER + 4 * (p + p * d) + 4 * n * p + 4 * n * d + 8 * (n + 1) + 32);
        const loaded = await loadIndex(backend!, path);
        expectSame(await loaded.search(xq, k, { kFactor: 4 }), before, `${metric} loaded`);
        const x = metric === 'cosine' ? normalizeRows(xb, d) : xb;
        const live = (id: number): boolean => id % 4 !== 0;
        await loaded.removeIds(BigInt64Array.from({ length: n / 4 }, (_, i) => BigInt(4 * i)));
        await (loaded as unknown as { compact(): Promise<void> }).compact();
        const exact = bruteForce(metric === 'cosine' ? 'ip' : metric, metric === 'cosine' ? normalizeRows(xq, d) : xq, nq, d, x, live, k);
        expect(Array.from((await loaded.search(xq, k, { kFactor: n / k })).labels), `${metric} compacted, exact`).toEqual(exact.flatMap((e) => e.labels));
        await Promise.all([loaded.dispose(), index.dispose()]);
      }
    });
  }

  it.skipIf(!gpu)('webgpu equals cpu on the same file (trained on the CPU, loaded on both), label for label', async () => {
    for (const description of [`Prefix${p},Flat`, `PCAR${p},Flat`, `PCA${p},Flat,RFlat`]) {
      for (const metric of ['l2', 'cosine'] as Metric[]) {
        const index = await built(cpu, description, metric);
        const path = join(dir, `same-${description}-${metric}.idx`);
        await index.save(path);
        const a = await loadIndex(cpu, path);
        const b = await loadIndex(gpu!, path);
        expectSame(await b.search(xq, 20, { kFactor: 2 }), await a.search(xq, 20, { kFactor: 2 }), `${description} ${metric}`);
        await Promise.all([index.dispose(), a.dispose(), b.dispose()]);
      }
    }
  });

  it('PCA recovers planted principal axes and their variances, in decreasing order; PCAR is an orthogonal rotation of the same subspace', async () => {
    const dd = 8;
    const m = 20000;
    const sd = [5, 4, 3, 2, 1, 0.5, 0.25, 0.1];
    const q = randomOrthogonal(dd, 7); // the planted axes: q's rows
    const r = rng(8);
    const x = new Float32Array(m * dd);
    for (let i = 0; i < m; i++) {
      for (let a = 0; a < dd; a++) {
        const g = Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r()); // one standard normal
        for (let j = 0; j < dd; j++) x[i * dd + j] += g * sd[a] * q[a * dd + j];
      }
      for (let j = 0; j < dd; j++) x[i * dd + j] += 3; // a mean far from 0
    }
    const pca = await Transform.train({ kind: 'PCA', p: 4 }, dd, x);
    const ev = Array.from(pca.eigenvalues!);
    for (let a = 0; a < 4; a++) {
      let cos = 0;
      for (let j = 0; j < dd; j++) cos += pca.matrix![a * dd + j] * q[a * dd + j];
      expect(Math.abs(cos), `axis ${a}`).toBeGreaterThan(0.999);
      expect(Math.abs(ev[a] / sd[a] ** 2 - 1), `eigenvalue ${a}: ${ev[a]}`).toBeLessThan(0.05);
    }
    expect(ev).toEqual([...ev].sort((a, b) => b - a));
    const pcar = await Transform.train({ kind: 'PCAR', p: 4 }, dd, x);
    const rot = pcar.matrix!;
    const proj = (mat: Float32Array, i: number, j: number): number => {
      let s = 0;
      for (let a = 0; a < 4; a++) s += mat[a * dd + i] * mat[a * dd + j];
      return s;
    };
    for (let i = 0; i < 4; i++) {
      for (let j = 0; j < 4; j++) {
        let s = 0;
        for (let t = 0; t < dd; t++) s += rot[i * dd + t] * rot[j * dd + t];
        expect(Math.abs(s - (i === j ? 1 : 0)), `PCAR rows ${i}, ${j} orthonormal`).toBeLessThan(1e-5);
      }
    }
    for (let i = 0; i < dd; i++) for (let j = 0; j < dd; j++) expect(Math.abs(proj(rot, i, j) - proj(pca.matrix!, i, j)), `projector ${i}, ${j}`).toBeLessThan(1e-5);
    // Not the identity rotation: PCAR's outputs mix the components.
    expect(Math.abs(rot.subarray(0, dd).reduce((s, v, j) => s + v * pca.matrix![j], 0))).toBeLessThan(0.99);
    // Restored from its tables, the same transform.
    const back = Transform.restore(pcar.spec, dd, pcar.tables());
    expect(Array.from(back.apply(x.subarray(0, 10 * dd), 10, 'l2'))).toEqual(Array.from(pcar.apply(x.subarray(0, 10 * dd), 10, 'l2')));
    // With p = d, P^T P x = x: reconstruct undoes apply.
    const full = await Transform.train({ kind: 'PCAR', p: dd }, dd, x);
    const y = full.reconstruct(full.apply(x.subarray(0, 5 * dd), 5, 'l2'), 5);
    y.forEach((v, i) => expect(Math.abs(v - x[i]), `reconstruct ${i}`).toBeLessThan(1e-4));
  });

  it('symmetricEigen: a hand case with its sign convention, and A v = lambda v on a 64 x 64 matrix', async () => {
    const { values, vectors } = await symmetricEigen(Float64Array.from([2, 1, 1, 2]), 2);
    expect(Array.from(values).map((v) => +v.toFixed(12))).toEqual([3, 1]);
    const h = Math.SQRT1_2;
    expect(Array.from(vectors).map((v) => +v.toFixed(12))).toEqual([h, h, h, -h].map((v) => +v.toFixed(12)));
    const s = 64;
    const a = randomFloats(s * s, 5);
    const sym = new Float64Array(s * s);
    for (let i = 0; i < s; i++) for (let j = 0; j < s; j++) sym[i * s + j] = a[i * s + j] + a[j * s + i];
    const e = await symmetricEigen(sym.slice(), s);
    for (let t = 0; t < s; t++) {
      if (t > 0) expect(e.values[t]).toBeLessThanOrEqual(e.values[t - 1]);
      for (let i = 0; i < s; i++) {
        let av = 0;
        for (let j = 0; j < s; j++) av += sym[i * s + j] * e.vectors[t * s + j];
        expect(Math.abs(av - e.values[t] * e.vectors[t * s + i])).toBeLessThan(1e-10);
      }
    }
  });

  it('parses the transform strings and spells them back; refuses the unsupported, naming them', async () => {
    for (const text of ['Prefix64,Flat', 'Prefix64,Flat,RFlat', 'PCA32,Flat', 'PCAR64,Flat,RFlat', 'PCAR8,Flat,Refine(SQfp16)']) {
      expect(describeIndexType(parseIndexType(text)), text).toBe(text);
    }
    expect(parseIndexType('PCAR64,Flat,RFlat')).toEqual({ type: 'Flat', nlist: 0, codec: null, refine: 'Flat', transform: { kind: 'PCAR', p: 64 } });
    expect(parseIndexType('Flat')).not.toHaveProperty('transform');
    expect(() => parseIndexType('Prefix64,PQ16')).toThrow(/"Prefix64,PQ16": a transform \(Prefix64\) is followed by Flat only for now/);
    expect(() => parseIndexType('PCA8,IVF16,Flat')).toThrow(/followed by Flat only for now/);
    expect(() => parseIndexType('IVF16,Prefix8,Flat')).toThrow(/unknown index description "IVF16,Prefix8,Flat" \(a transform, Prefix<p>, PCA<p> or PCAR<p>, is the first component\)/);
    expect(() => parseIndexType('Flat,RFlat')).toThrow(/re-ranks codes or transformed rows: it follows a codec or a transform, not plain Flat/);
    expect(() => parseIndexType('Prefix0,Flat')).toThrow(/Prefix0: p \(output dimensions\) must be an integer in \[1, 65536\]; got 0/);
    expect(() => parseIndexType('Prefix8,Prefix4,Flat')).toThrow(/is the first component/);
    expect(() => indexFactory(cpu, d, `Prefix${d + 1},Flat`)).toThrow(new RegExp(`Prefix${d + 1}: p \\(output dimensions\\) must be an integer in \\[1, d = ${d}\\]; got ${d + 1}`));
    expect(() => indexFactory(cpu, d, `PCAR${d + 1},Flat,RFlat`)).toThrow(/must be an integer in \[1, d = 16\]/);
    const pca = indexFactory(cpu, d, `PCA${p},Flat`);
    expect(pca.isTrained).toBe(false);
    await expect(pca.add(xb)).rejects.toThrow(/the PCA6 index is not trained; call train\(xt\) first/);
    await expect(pca.train(new Float32Array(0))).rejects.toThrow(/PCA6 needs at least one training vector/);
    expect(indexFactory(cpu, d, `Prefix${p},Flat`).isTrained).toBe(true);
    await pca.dispose();
  });
});
