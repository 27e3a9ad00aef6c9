/**
 * PCA's eigen-decomposition (ml-matrix's EigenvalueDecomposition, src/codecs/transforms.ts) on real
 * data, checked two ways, each within a stated tolerance:
 *   - against the covariance itself (SIFT10K, 10,000 x 128): every eigenpair's residual
 *     ||C v - lambda v|| at most RESIDUAL_TOLERANCE * lambda_max, the eigenvectors orthonormal to
 *     ORTHONORMAL_TOLERANCE (measured: 8.1e-16 and 2.2e-14; float64 rounding at d = 128);
 *   - against the project's former port of the same algorithm (JAMA's tred2 / tql2), by an index
 *     file that port saved (fixtures/pca16-siftsmall.index, written by commit 563b898 with
 *     fixtures/make-pca16-siftsmall.mjs): the tables trained now are those in the file to one
 *     float32 rounding (eigenvalues relatively within FLOAT32_TOLERANCE, matched axes with
 *     |dot| >= 1 - AXIS_TOLERANCE; measured: equal, bit for bit), and the file loads and searches
 *     as an index built now does (the saved format unchanged).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Transform, covariance, symmetricEigen } from '../../src/codecs/transforms.js';
import { indexFactory } from '../../src/indexes/factory.js';
import { loadIndex } from '../../src/indexes/load-index.js';
import { InvalidArgumentError } from '../../src/errors.js';
import { cpuBackend } from '../helpers/cpu.js';
import { loadRealSet } from '../helpers/data.js';

const RESIDUAL_TOLERANCE = 1e-12;
const ORTHONORMAL_TOLERANCE = 1e-12;
const FLOAT32_TOLERANCE = 2 ** -22;
const AXIS_TOLERANCE = 1e-6;

const FIXTURE = new URL('./fixtures/pca16-siftsmall.index', import.meta.url);
const HEADER = 40;
const p = 16;
const kept = 200;
const sift = loadRealSet('siftsmall', 'siftsmall');
const { d, n } = sift;

const c = covariance(sift.xb, n, d);
const { values, vectors } = await symmetricEigen(c, d);

describe('symmetricEigen (ml-matrix) on the covariance of SIFT10K', () => {

  it('gives eigenpairs of the covariance, decreasing, orthonormal, each with its largest entry positive', () => {
    const lmax = values[0];
    for (let t = 0; t < d; t++) {
      if (t > 0) expect(values[t], `eigenvalue ${t}`).toBeLessThanOrEqual(values[t - 1]);
      const v = vectors.subarray(t * d, (t + 1) * d);
      let r2 = 0;
      for (let i = 0; i < d; i++) {
        let cv = 0;
        for (let j = 0; j < d; j++) cv += c[i * d + j] * v[j];
        r2 += (cv - values[t] * v[i]) ** 2;
      }
      expect(Math.sqrt(r2) / lmax, `residual of eigenpair ${t}`).toBeLessThanOrEqual(RESIDUAL_TOLERANCE);
      let big = 0;
      for (let j = 1; j < d; j++) if (Math.abs(v[j]) > Math.abs(v[big])) big = j;
      expect(v[big], `eigenvector ${t}'s largest entry`).toBeGreaterThan(0);
      for (let u = t; u < d; u++) {
        let dot = 0;
        for (let j = 0; j < d; j++) dot += v[j] * vectors[u * d + j];
        expect(Math.abs(dot - (u === t ? 1 : 0)), `v${t} . v${u}`).toBeLessThanOrEqual(ORTHONORMAL_TOLERANCE);
      }
    }
  });

  it('leaves its input as it was, and refuses a matrix that is not d x d, naming both', async () => {
    expect(Array.from(c)).toEqual(Array.from(covariance(sift.xb, n, d)));
    await expect(symmetricEigen(new Float64Array(6), 2)).rejects.toThrow(InvalidArgumentError);
    await expect(symmetricEigen(new Float64Array(6), 2)).rejects.toThrow(/a must hold d x d values; got 6 for d = 2/);
  });
});

describe('PCA16 against an index file the former eigen-decomposition saved', () => {
  const buf = readFileSync(FIXTURE);
  const f32 = (at: number, len: number): Float32Array => new Float32Array(buf.buffer.slice(buf.byteOffset + at, buf.byteOffset + at + 4 * len));
  const savedValues = f32(HEADER, p);
  const savedMatrix = f32(HEADER + 4 * p, p * d);

  it('trains the tables the file holds, to one float32 rounding', async () => {
    const t = await Transform.train({ kind: 'PCA', p }, d, sift.xb);
    for (let i = 0; i < p; i++) {
      expect(Math.abs(t.eigenvalues![i] - savedValues[i]) / savedValues[i], `eigenvalue ${i}`).toBeLessThanOrEqual(FLOAT32_TOLERANCE);
      let dot = 0;
      for (let j = 0; j < d; j++) dot += t.matrix![i * d + j] * savedMatrix[i * d + j];
      expect(Math.abs(dot), `axis ${i}: |dot| with the saved axis`).toBeGreaterThanOrEqual(1 - AXIS_TOLERANCE);
    }
  });

  it('loads and searches as an index built now on the same rows', async () => {
    const backend = cpuBackend();
    const loaded = await loadIndex(backend, FIXTURE.pathname);
    expect(loaded.ntotal).toBe(kept);
    const built = indexFactory(backend, d, `PCA${p},Flat`, 'l2');
    await built.train(sift.xb);
    await built.add(sift.xb.subarray(0, kept * d));
    const a = await loaded.search(sift.xq, 10);
    const b = await built.search(sift.xq, 10);
    expect(Array.from(a.labels)).toEqual(Array.from(b.labels));
    a.distances.forEach((v, i) => expect(Math.abs(v - b.distances[i]), `distance ${i}`).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(v))));
    await loaded.dispose();
    await built.dispose();
    backend.dispose();
  });
});
