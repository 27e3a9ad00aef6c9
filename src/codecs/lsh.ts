/**
 * Binary codes (Faiss's `IndexLSH`): a `d`-dimensional vector becomes d bits, bit j set where
 * y_j > t_j, with y = R x (R a random orthogonal d x d rotation, `r`) or y = x, and t_j a trained
 * per-dimension threshold (the median of y_j over the training rows, `t`) or 0. Spelt as Faiss's
 * factory spells them: `LSH` (sign bits), `LSHr` (rotation first), `LSHt` (thresholds), `LSHrt`.
 * The bits are packed little-endian, bit j at bit j & 7 of byte j >> 3 (Faiss's fvecs2bitvecs
 * layout), so codeSize = ceil(d / 8) bytes and, read as u32 words, bit j is bit j & 31 of word j >> 5.
 *
 * Searching ranks by the Hamming distance between the query's bits and each code (kernel
 * hamming-scores: countOneBits of XORed words). A code's reconstruction is y = t + s, s_j = +1 where
 * the bit is set and -1 where not, in the rotated space: the index's float64 re-score compares the
 * rotated query with it (`toCodeSpace`), which for an orthogonal R equals comparing the query with
 * R^T y, and costs d^2 a query instead of d^2 a candidate. So an index of these codes re-ranks its
 * Hamming shortlist by the asymmetric distance (float query against +-1 codes); `,RFlat` re-ranks
 * exactly instead.
 *
 * `LSH` and `LSHr` need no training (the rotation comes from a fixed seed, as Faiss's); `LSHt` and
 * `LSHrt` train their thresholds on a seeded sample of at most LSH_TRAIN_ROWS rows.
 */
import { randomOrthogonal } from '../common/random.js';
import { checkOrthonormalRows, projectRows } from './transforms.js';
import { checkDim } from '../types.js';
import { InvalidArgumentError } from '../errors.js';

/** Most training rows the thresholds' medians are taken over (a seeded sample: a median of 16,384 values is within about 0.01 standard deviations of the whole set's). */
export const LSH_TRAIN_ROWS = 16384;

/** The rotation's seed (fixed, so that an untrained `LSHr` is the same everywhere). */
const ROTATION_SEED = 5;

export class Lsh {
  readonly d: number;
  /** Bytes per code: ceil(d / 8), as Faiss's `code_size`. */
  readonly codeSize: number;
  /** u32 words a code takes: ceil(d / 32). */
  readonly codeWords: number;
  /** R, row-major d x d (y = R x), or null. */
  readonly rotation: Float32Array | null;
  /** t (d floats), or null: 0 (LSH, LSHr) or not yet trained (LSHt, LSHrt). */
  private thresholds: Float32Array | null;

  constructor(
    d: number,
    readonly rotate: boolean,
    readonly trainThresholds: boolean,
    rotation: Float32Array | null = null,
    thresholds: Float32Array | null = null,
  ) {
    this.d = checkDim(d);
    this.codeSize = Math.ceil(d / 8);
    this.codeWords = Math.ceil(d / 32);
    this.rotation = rotate ? (rotation ?? Float32Array.from(randomOrthogonal(d, ROTATION_SEED))) : null;
    this.thresholds = thresholds;
  }

  /** Whether codes can be made: always without thresholds, after `train` with them. */
  get isTrained(): boolean {
    return !this.trainThresholds || this.thresholds !== null;
  }

  /** Trains the thresholds on `n` rows of `x`: each the median of its rotated dimension (the mean of the middle two for even n). */
  train(x: Float32Array, n: number): void {
    if (!this.trainThresholds) return;
    if (n < 1) throw new InvalidArgumentError(`${this.name} needs at least one training vector; got none`);
    const y = this.toCodeSpace(x, n);
    const d = this.d;
    const t = new Float32Array(d);
    const col = new Float32Array(n);
    for (let j = 0; j < d; j++) {
      for (let i = 0; i < n; i++) col[i] = y[i * d + j];
      col.sort();
      t[j] = n % 2 === 1 ? col[n >> 1] : (col[n / 2 - 1] + col[n / 2]) / 2;
    }
    this.thresholds = t;
  }

  get name(): string {
    return `LSH${this.rotate ? 'r' : ''}${this.trainThresholds ? 't' : ''}`;
  }

  /** `n` rows in the codes' space: R x (float64 sums, rounded once), or `x` itself without a rotation. */
  toCodeSpace(x: Float32Array, n: number): Float32Array {
    const R = this.rotation;
    if (!R) return x;
    return projectRows(R, x, n, this.d, this.d);
  }

  /** The codes of `n` rows (`n * d`) as u32 words, `codeWords` a row: bit j set where y_j > t_j. */
  encode(x: Float32Array, n: number): Uint32Array {
    this.requireTrained();
    const d = this.d;
    const w = this.codeWords;
    const y = this.toCodeSpace(x, n);
    const t = this.thresholds;
    const out = new Uint32Array(n * w);
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < d; j++) {
        if (y[i * d + j] > (t ? t[j] : 0)) out[i * w + (j >>> 5)] |= 1 << (j & 31);
      }
    }
    return out;
  }

  /** Reconstructions in the codes' space of `n` codes (`codeWords` words a row, from `at`): t_j +- 1. */
  decode(codes: Uint32Array, n: number, stride = this.codeWords, at = 0): Float32Array {
    const d = this.d;
    const t = this.thresholds;
    const out = new Float32Array(n * d);
    for (let i = 0; i < n; i++) {
      const c = at + i * stride;
      for (let j = 0; j < d; j++) {
        const bit = (codes[c + (j >>> 5)] >>> (j & 31)) & 1;
        out[i * d + j] = (t ? t[j] : 0) + (bit ? 1 : -1);
      }
    }
    return out;
  }

  /** The trained tables, as a saved index holds them: t (d floats; zeros where there are none), then R (d * d) with a rotation. */
  tables(): Float32Array {
    const d = this.d;
    const out = new Float32Array(lshTableFloats(this.rotate, d));
    if (this.thresholds) out.set(this.thresholds);
    if (this.rotation) out.set(this.rotation, d);
    return out;
  }

  /**
   * An LSH from saved tables (see `tables`): finite thresholds, and a rotation of orthonormal rows
   * (checkOrthonormalRows: R q then keeps the query's norm, and its scores stay finite).
   */
  static fromTables(d: number, rotate: boolean, trainThresholds: boolean, tables: Float32Array): Lsh {
    const want = lshTableFloats(rotate, d);
    if (tables.length !== want) throw new InvalidArgumentError(`LSH tables: expected ${want} floats for d = ${d}; got ${tables.length}`);
    const t = tables.slice(0, d);
    const lsh = new Lsh(d, rotate, trainThresholds, rotate ? tables.slice(d) : null, trainThresholds ? t : null);
    const bad = t.findIndex((v) => !Number.isFinite(v));
    if (bad >= 0) throw new InvalidArgumentError(`${lsh.name} thresholds: t[${bad}] is ${t[bad]}; expected a finite value`);
    if (lsh.rotation) checkOrthonormalRows(lsh.rotation, d, d, `${lsh.name} rotation`, 'R R^T - I', 'an orthogonal rotation');
    return lsh;
  }

  /** What messages call the trained tables. */
  get tableName(): string {
    return `${this.name} thresholds`;
  }

  /**
   * The largest squared norm a code's reconstruction can have: the sum of (|t_j| + 1)^2 (float64),
   * and the threshold that contributes most (see Codec.checkBound).
   */
  largestReconstruction(): { norm2: number; most: string } {
    const t = this.thresholds;
    let norm2 = 0;
    let most = 0;
    for (let j = 0; j < this.d; j++) {
      const v = t ? Math.abs(t[j]) : 0;
      norm2 += (v + 1) * (v + 1);
      if (t && v > Math.abs(t[most])) most = j;
    }
    return { norm2, most: `t[${most}] the most` };
  }

  private requireTrained(): void {
    if (!this.isTrained) throw new InvalidArgumentError(`${this.name}: train the thresholds first`);
  }
}

/** Floats of an LSH's saved tables: d thresholds, and d * d for a rotation. */
export function lshTableFloats(rotate: boolean, d: number): number {
  return d + (rotate ? d * d : 0);
}
