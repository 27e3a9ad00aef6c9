/**
 * Transforms applied before the storage of an index (Faiss's VectorTransform, as the factory's
 * first component): the index stores and searches `p`-dimensional rows y = T(x), and with `,RFlat`
 * re-ranks against the full `d`-dimensional rows.
 *   - `Prefix<p>`: the first p dimensions (Matryoshka adaptive retrieval: embeddings trained so that
 *     their prefixes are embeddings too). Our own key: Faiss has none (`PCA<p>` is its nearest).
 *   - `PCA<p>`: the projection on the top-p principal components of the training rows (Faiss's
 *     PCAMatrix): y = P x, P (p x d) the eigenvectors of the covariance with the p largest
 *     eigenvalues, as rows, in decreasing order of eigenvalue.
 *   - `PCAR<p>`: the same followed by a seeded random orthogonal p x p rotation R (PCAMatrix with
 *     random_rotation): y = R P x. The rotation spreads the variance evenly over the p outputs,
 *     which matters to a quantiser after it, not to Flat.
 * Centring: the covariance is that of the centred rows, but y = P x is not centred (Faiss's
 * PCAMatrix applies P (x - mean)). For l2 the two are the same (the mean cancels between a query and
 * a row); for ip and cosine, subtracting the mean from the queries changes the ranking, while
 * without it (P q) . (P x) ranks each query's rows exactly as q . P^T P x, the inner product with
 * the row's reconstruction: with p = d, PCA ranks as the untransformed index does, for every metric.
 * Cosine: the outputs are re-normalised (rows of unit norm, or zero), so that the inner product of
 * two outputs is the cosine of the prefixes or projections, as Matryoshka models are used.
 */
import { sampleRows } from './kmeans.js';
import { randomOrthogonal, rng } from '../common/random.js';
import type { Metric } from '../types.js';
import { normalizeRows } from '../types.js';
import type { VectorSource } from '../common/vector-source.js';
import { InvalidArgumentError } from '../errors.js';

export type TransformKind = 'Prefix' | 'PCA' | 'PCAR';
export const TRANSFORM_KINDS: readonly TransformKind[] = ['Prefix', 'PCA', 'PCAR'];

export interface TransformSpec {
  kind: TransformKind;
  /** Output dimensions, in [1, d]. */
  p: number;
}

export const TRANSFORM_FORMS = '"Prefix<p>", "PCA<p>" or "PCAR<p>" (p output dimensions, 1 <= p <= d)';

/**
 * Most training rows PCA's covariance is computed on (a seeded sample where there are more). Faiss
 * takes up to 1000 d; here the covariance costs n d^2 / 2 float64 multiply-adds on the host (about
 * 24 s for 60,000 x 784 on this project's 2-core machine), so the sample is bounded instead: about
 * 6 s at d = 784. The top components of a covariance are estimated well from far fewer rows.
 */
export const PCA_MAX_TRAIN_ROWS = 16384;

/** The transform a factory-string component names (`Prefix64`, `PCA64`, `PCAR64`), or null where it names none. */
export function parseTransform(text: string): TransformSpec | null {
  const m = /^(Prefix|PCAR|PCA)(\d+)$/.exec(text);
  if (!m) return null;
  const p = Number(m[2]);
  if (!(p >= 1 && p <= 65536)) throw new InvalidArgumentError(`${text}: p (output dimensions) must be an integer in [1, 65536]; got ${m[2]}`);
  return { kind: m[1] as TransformKind, p };
}

/** The factory spelling: Prefix64, PCA64, PCAR64. */
export function transformName(t: TransformSpec): string {
  return `${t.kind}${t.p}`;
}

/** Floats of a transform's trained tables: PCA and PCAR p eigenvalues then the p x d matrix; Prefix none. */
export function transformTableFloats(t: TransformSpec, d: number): number {
  return t.kind === 'Prefix' ? 0 : t.p + t.p * d;
}

/** Checks an index's `transform` option for `d`-dimensional rows: undefined, or a spec with p in [1, d]. */
export function checkTransform(transform: unknown, d: number): TransformSpec | null {
  if (transform === undefined || transform === null) return null;
  const t = transform as TransformSpec;
  if (typeof t !== 'object' || !(TRANSFORM_KINDS as readonly unknown[]).includes(t.kind)) {
    throw new InvalidArgumentError(`transform must be { kind: ${TRANSFORM_KINDS.join(' | ')}, p }; got ${JSON.stringify(transform)}`);
  }
  if (!Number.isInteger(t.p) || t.p < 1 || t.p > d) {
    throw new InvalidArgumentError(`${t.kind}${String(t.p)}: p (output dimensions) must be an integer in [1, d = ${d}]; got ${String(t.p)}`);
  }
  return { kind: t.kind, p: t.p };
}

/** A ready transform (Prefix, or a trained or restored PCA). */
export class Transform {
  private constructor(
    readonly spec: TransformSpec,
    readonly d: number,
    /** PCA / PCAR: p x d, row-major (the rotation folded in); null for Prefix. */
    readonly matrix: Float32Array | null,
    /** PCA / PCAR: the covariance's p largest eigenvalues, decreasing; null for Prefix. */
    readonly eigenvalues: Float32Array | null,
  ) {}

  get p(): number {
    return this.spec.p;
  }

  /** Prefix (nothing to train), else null. */
  static untrained(spec: TransformSpec, d: number): Transform | null {
    return spec.kind === 'Prefix' ? new Transform(spec, d, null, null) : null;
  }

  /**
   * Trains PCA / PCAR on `x` (prepared rows: an array, or a source read block by block, of which
   * only a seeded sample of at most PCA_MAX_TRAIN_ROWS rows is held): the mean and the covariance
   * in float64, its eigen-decomposition, and for PCAR a rotation seeded by `seed`.
   */
  static async train(spec: TransformSpec, d: number, x: Float32Array | VectorSource, seed = 1234): Promise<Transform> {
    if (spec.kind === 'Prefix') return Transform.untrained(spec, d)!;
    const sample = await sampleRows(x, d, PCA_MAX_TRAIN_ROWS, rng(seed));
    const n = sample.length / d;
    if (n < 1) throw new InvalidArgumentError(`${transformName(spec)} needs at least one training vector; got none`);
    const { values, vectors } = await symmetricEigen(covariance(sample, n, d), d);
    let axes = vectors.subarray(0, spec.p * d);
    if (spec.kind === 'PCAR') axes = matMul(randomOrthogonal(spec.p, seed), axes, spec.p, spec.p, d);
    return new Transform(spec, d, Float32Array.from(axes), Float32Array.from(values.subarray(0, spec.p)));
  }

  /** The trained tables (what `restore` takes back): eigenvalues then matrix; empty for Prefix. */
  tables(): Float32Array {
    if (!this.matrix) return new Float32Array(0);
    const out = new Float32Array(transformTableFloats(this.spec, this.d));
    out.set(this.eigenvalues!, 0);
    out.set(this.matrix, this.p);
    return out;
  }

  /**
   * A transform from saved tables (see `tables`): finite eigenvalues, and a matrix of orthonormal
   * rows (checkOrthonormalRows), as PCA's principal axes (rotated or not) are.
   */
  static restore(spec: TransformSpec, d: number, tables: Float32Array): Transform {
    const want = transformTableFloats(spec, d);
    const name = transformName(spec);
    if (tables.length !== want) throw new InvalidArgumentError(`${name} tables: ${tables.length} floats; expected ${want}`);
    if (spec.kind === 'Prefix') return Transform.untrained(spec, d)!;
    const eigenvalues = tables.slice(0, spec.p);
    const bad = eigenvalues.findIndex((v) => !Number.isFinite(v));
    if (bad >= 0) throw new InvalidArgumentError(`${name} eigenvalues: [${bad}] is ${eigenvalues[bad]}; expected a finite value`);
    const matrix = tables.slice(spec.p);
    checkOrthonormalRows(matrix, spec.p, d, `${name} matrix`, 'P P^T - I', "PCA's principal axes");
    return new Transform(spec, d, matrix, eigenvalues);
  }

  /**
   * `n` rows of `x` (`n * d`, prepared: normalised for cosine) transformed: `n * p`, each output
   * accumulated in float64 and rounded once; for `metric` cosine re-normalised. May return `x`
   * itself (Prefix<d>): callers do not modify the result.
   */
  apply(x: Float32Array, n: number, metric: Metric): Float32Array {
    const { d, p } = this;
    const a = this.matrix;
    // Prefix<d> is the identity (re-normalising a normalised row could move its last bits).
    if (!a && p === d) return x;
    let out: Float32Array;
    if (a) out = projectRows(a, x, n, d, p);
    else {
      out = new Float32Array(n * p);
      for (let r = 0; r < n; r++) out.set(x.subarray(r * d, r * d + p), r * p);
    }
    return metric === 'cosine' ? normalizeRows(out, p) : out;
  }

  /** `n` transformed rows `y` (`n * p`) mapped back to `n * d`: Prefix zero-padded, PCA P^T y (the rotation undone). */
  reconstruct(y: Float32Array, n: number): Float32Array {
    const { d, p } = this;
    const out = new Float32Array(n * d);
    const a = this.matrix;
    const row = new Float64Array(d);
    for (let r = 0; r < n; r++) {
      if (!a) {
        out.set(y.subarray(r * p, (r + 1) * p), r * d);
        continue;
      }
      row.fill(0);
      for (let i = 0; i < p; i++) {
        const v = y[r * p + i];
        for (let j = 0; j < d; j++) row[j] += v * a[i * d + j];
      }
      out.set(row, r * d);
    }
    return out;
  }
}

/**
 * The covariance (d x d, float64, row-major, both triangles) of the `n` rows of `x` about their
 * mean, divided by n. Rows are centred in float64 first (no cancellation from a large mean), and
 * taken 4 at a time so that each pass over the matrix adds 4 outer products.
 */
export function covariance(x: Float32Array, n: number, d: number): Float64Array {
  const mean = new Float64Array(d);
  for (let r = 0; r < n; r++) for (let j = 0; j < d; j++) mean[j] += x[r * d + j];
  for (let j = 0; j < d; j++) mean[j] /= n;
  const c = new Float64Array(d * d);
  const a0 = new Float64Array(d);
  const a1 = new Float64Array(d);
  const a2 = new Float64Array(d);
  const a3 = new Float64Array(d);
  const rows = [a0, a1, a2, a3];
  for (let r0 = 0; r0 < n; r0 += 4) {
    for (let t = 0; t < 4; t++) {
      const r = r0 + t;
      if (r < n) for (let j = 0; j < d; j++) rows[t][j] = x[r * d + j] - mean[j];
      else rows[t].fill(0);
    }
    for (let i = 0; i < d; i++) {
      const v0 = a0[i];
      const v1 = a1[i];
      const v2 = a2[i];
      const v3 = a3[i];
      const ci = i * d;
      for (let j = i; j < d; j++) c[ci + j] += v0 * a0[j] + v1 * a1[j] + v2 * a2[j] + v3 * a3[j];
    }
  }
  for (let i = 0; i < d; i++) {
    for (let j = i; j < d; j++) {
      const v = c[i * d + j] / n;
      c[i * d + j] = v;
      c[j * d + i] = v;
    }
  }
  return c;
}

/**
 * Eigen-decomposition of the symmetric d x d matrix `a` (row-major; left as it is), by ml-matrix's
 * EigenvalueDecomposition: Householder reduction to tridiagonal form, then the QL algorithm with
 * implicit shifts (EISPACK's tred2 and tql2, as JAMA ports them). Returns the eigenvalues in
 * decreasing order (ties: the solver's order) and the eigenvectors as the rows of `vectors` in the
 * same order, each of unit norm with its largest-magnitude entry (the first of equal ones)
 * positive, so the result does not depend on the solver's signs. Agreement with the project's
 * former port of the same algorithm, and with the covariance itself: test/codecs/pca-eigen.test.ts.
 * ml-matrix is imported here, on first use, so that a page that trains no PCA never loads it (in
 * the browser build it is a chunk of its own).
 */
export async function symmetricEigen(a: Float64Array, d: number): Promise<{ values: Float64Array; vectors: Float64Array }> {
  if (!(Number.isInteger(d) && d >= 1 && a.length === d * d)) {
    throw new InvalidArgumentError(`symmetricEigen: a must hold d x d values; got ${a.length} for d = ${d}`);
  }
  const { EigenvalueDecomposition, Matrix } = await import('ml-matrix');
  const evd = new EigenvalueDecomposition(Matrix.from1DArray(d, d, a), { assumeSymmetric: true });
  const dd = evd.realEigenvalues;
  // Column i of the eigenvector matrix is the eigenvector of dd[i].
  const V = evd.eigenvectorMatrix;
  const order = Array.from({ length: d }, (_, i) => i).sort((x, y) => dd[y] - dd[x] || x - y);
  const values = Float64Array.from(order, (i) => dd[i]);
  const vectors = new Float64Array(d * d);
  const col = new Float64Array(d);
  order.forEach((src, i) => {
    for (let j = 0; j < d; j++) col[j] = V.get(j, src);
    let big = 0;
    for (let j = 1; j < d; j++) if (Math.abs(col[j]) > Math.abs(col[big])) big = j;
    const sign = col[big] < 0 ? -1 : 1;
    for (let j = 0; j < d; j++) vectors[i * d + j] = sign * col[j];
  });
  return { values, vectors };
}

/** a (r x k) times b (k x c), row-major, float64. */
function matMul(a: Float64Array, b: Float64Array, r: number, k: number, c: number): Float64Array {
  const out = new Float64Array(r * c);
  for (let i = 0; i < r; i++) {
    for (let t = 0; t < k; t++) {
      const v = a[i * k + t];
      if (v === 0) continue;
      for (let j = 0; j < c; j++) out[i * c + j] += v * b[t * c + j];
    }
  }
  return out;
}

/**
 * How far from orthonormal the rows of a loaded rotation or projection may be (see
 * checkOrthonormalRows): float32 rounding of a true one leaves about 1e-5 at d = 4096.
 */
export const ORTHONORMAL_TOLERANCE = 2 ** -10;

/**
 * Throws unless `m` (`rows x d`, row-major; `what` names it) is finite with orthonormal rows: for
 * every row i, the sum over j of |G_ij - delta_ij| is at most ORTHONORMAL_TOLERANCE, G = m m^T in
 * float64 (`gram` spells G - I in the message, `why` says why the rows must be; the worst row is
 * named). G's largest
 * eigenvalue is then at most 1 + ORTHONORMAL_TOLERANCE (Gershgorin), so ||m y||^2 <= (1 + 2^-10)
 * ||y||^2: a rotated or projected query keeps the norm bound queries are held to, up to float32
 * rounding, and its scores stay finite. Costs rows^2 d / 2 multiply-adds: a quarter of what
 * randomOrthogonal spends making a d x d rotation, less than PCA's training.
 */
export function checkOrthonormalRows(m: Float32Array, rows: number, d: number, what: string, gram: string, why: string): void {
  const bad = m.findIndex((v) => !Number.isFinite(v));
  if (bad >= 0) throw new InvalidArgumentError(`${what}: row ${Math.floor(bad / d)} column ${bad % d} is ${m[bad]}; expected a finite value`);
  const off = new Float64Array(rows);
  for (let i = 0; i < rows; i++) {
    const a = i * d;
    for (let k = i; k < rows; k++) {
      const b = k * d;
      let dot = 0;
      for (let j = 0; j < d; j++) dot += m[a + j] * m[b + j];
      const e = Math.abs(dot - (i === k ? 1 : 0));
      off[i] += e;
      if (k !== i) off[k] += e;
    }
  }
  // The worst row is named: one bad row spoils its products with every other row too.
  let worst = 0;
  for (let i = 1; i < rows; i++) if (off[i] > off[worst]) worst = i;
  if (off[worst] > ORTHONORMAL_TOLERANCE) {
    throw new InvalidArgumentError(`${what}: row ${worst}: the sum of |${gram}| over its row is ${off[worst].toPrecision(4)}; at most ${ORTHONORMAL_TOLERANCE} (the rows must be orthonormal: ${why})`);
  }
}

/**
 * y = M x for `n` rows of `x` (`n * d`), M row-major p x d: each output a float64 sum in dimension
 * order, rounded once to float32. Four rows a pass share each load of M's row (about 1.6x one row a
 * pass here). PCA's projection and LSHr's rotation (p = d) both run here.
 */
export function projectRows(M: Float32Array, x: Float32Array, n: number, d: number, p: number): Float32Array {
  const y = new Float32Array(n * p);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const a0 = i * d;
    const a1 = a0 + d;
    const a2 = a1 + d;
    const a3 = a2 + d;
    for (let j = 0; j < p; j++) {
      const b = j * d;
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      for (let t = 0; t < d; t++) {
        const m = M[b + t];
        s0 += m * x[a0 + t];
        s1 += m * x[a1 + t];
        s2 += m * x[a2 + t];
        s3 += m * x[a3 + t];
      }
      y[i * p + j] = s0;
      y[(i + 1) * p + j] = s1;
      y[(i + 2) * p + j] = s2;
      y[(i + 3) * p + j] = s3;
    }
  }
  for (; i < n; i++) {
    const a = i * d;
    for (let j = 0; j < p; j++) {
      const b = j * d;
      let s = 0;
      for (let t = 0; t < d; t++) s += M[b + t] * x[a + t];
      y[i * p + j] = s;
    }
  }
  return y;
}
