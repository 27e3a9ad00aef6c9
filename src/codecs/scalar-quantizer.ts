/**
 * Scalar quantisers, bit-compatible with Faiss 1.7.3's `ScalarQuantizer` (faiss/impl/
 * ScalarQuantizer.cpp) with its default range statistic RS_minmax (rangestat_arg 0):
 *
 * | kind     | Faiss qtype | bytes per vector | one dimension                                       |
 * |----------|-------------|------------------|-----------------------------------------------------|
 * | `SQ8`    | QT_8bit     | d                | code c in 0..255: vmin + (c + 0.5) / 255 * vdiff     |
 * | `SQ4`    | QT_4bit     | ceil(d / 2)      | code c in 0..15:  vmin + (c + 0.5) / 15 * vdiff      |
 * | `SQfp16` | QT_fp16     | 2 d              | an IEEE half, no training                           |
 *
 * vmin and vdiff are per dimension (QT_8bit / QT_4bit are Faiss's "non-uniform" kinds). Every
 * float32 step is reproduced with `Math.fround` in Faiss's order, so tables, codes and
 * reconstructions equal Faiss's bit for bit (test/codecs/scalar-quantizer.test.ts against
 * test/data/sq/, made by Faiss with test/data/derive-sq.py). The reference is Faiss's scalar
 * code path as the installed build runs it: no FMA in the reconstruction, and fp16 encoded in
 * software, ties away from zero (src/common/fp16.ts); a Faiss build with F16C rounds fp16 ties to
 * even instead.
 *
 * Byte layouts (`encode` / `decode`) are Faiss's: SQ8 dimension j in byte j; SQ4 dimension j in
 * byte j >> 1, the low nibble for even j; fp16 dimension j in bytes 2j (low) and 2j + 1 (high).
 * `packed` gives the device layout (rows of u32 words) and `queryTransform` the per-query terms that
 * let a scan kernel score codes without decoding them to floats.
 *
 * This module is pure TypeScript (no device, no files): the host side of the SQ codecs.
 */
import { HALF_MAX, HALF_OVERFLOW, floatToHalf, halfToFloat } from '../common/fp16.js';
import { checkDim, checkVectors } from '../types.js';
import { InvalidArgumentError } from '../errors.js';

export type SqKind = 'SQ8' | 'SQ4' | 'SQfp16';

export const SQ_KINDS: readonly SqKind[] = ['SQ8', 'SQ4', 'SQfp16'];

/** The largest code of each trained kind (2^bits - 1): Faiss's `Codec8bit` / `Codec4bit` scale. */
const LEVELS: Record<SqKind, number> = { SQ8: 255, SQ4: 15, SQfp16: 0 };

/** Per-query terms of `q . decode(c)` as a dot product with the code values (see `queryTransform`). */
export interface SqQueryTerms {
  /** `nq * d`, row-major: what each code value is multiplied by. */
  xq: Float32Array;
  /** `nq`: the constant each query's sum starts from. */
  qbias: Float32Array;
}

export function checkSqKind(kind: unknown): SqKind {
  if (typeof kind !== 'string' || !(SQ_KINDS as readonly string[]).includes(kind)) {
    throw new InvalidArgumentError(`kind must be one of ${SQ_KINDS.join(', ')}; got ${String(kind)}`);
  }
  return kind as SqKind;
}

function typeName(x: unknown): string {
  return x === null ? 'null' : typeof x === 'object' ? ((x as object).constructor?.name ?? 'object') : typeof x;
}

/**
 * A scalar quantiser of `d`-dimensional float32 vectors. Train it (SQ8, SQ4) or restore it from
 * `tables()` with `fromTables`, then `encode` vectors to `codeSize` bytes each and `decode` them back.
 */
export class ScalarQuantizer {
  readonly d: number;
  readonly kind: SqKind;
  /** Bytes per encoded vector, as Faiss's `code_size`: d (SQ8), ceil(d / 2) (SQ4), 2d (SQfp16). */
  readonly codeSize: number;
  /** The fewest u32 words a `packed` row takes: ceil(codeSize / 4). */
  readonly minWords: number;
  private readonly levels: number;
  // Faiss's `trained` for the non-uniform kinds: vmin[d] then vdiff[d] (vmax - vmin); null until trained.
  private vmin: Float32Array | null = null;
  private vdiff: Float32Array | null = null;

  constructor(d: number, kind: SqKind) {
    this.d = checkDim(d);
    this.kind = checkSqKind(kind);
    this.levels = LEVELS[kind];
    this.codeSize = kind === 'SQ8' ? d : kind === 'SQ4' ? Math.ceil(d / 2) : 2 * d;
    this.minWords = Math.ceil(this.codeSize / 4);
  }

  /** SQfp16 needs no training (as in Faiss); SQ8 and SQ4 after `train` or `fromTables`. */
  get isTrained(): boolean {
    return this.kind === 'SQfp16' || this.vmin !== null;
  }

  /**
   * Learns each dimension's range from `x` (`n * d`, n >= 1, finite): vmin = the minimum, vdiff =
   * maximum - minimum in float32, as Faiss's `train_NonUniform` with RS_minmax. Its expansion
   * `(vmax - vmin) * rangestat_arg` is +0 here, so vmin is kept as found (-0 included) and vdiff
   * is exactly `fround(vmax - vmin)`. A constant dimension gets vdiff = 0: Faiss then encodes every
   * value of it as code 0 and decodes code 0 to vmin (-0 comes back as +0: vmin + 0). A dimension
   * whose width overflows float32 is refused (Faiss would store NaN: inf * 0). Retraining replaces
   * the ranges. SQfp16: the input is checked and nothing is learnt.
   */
  train(x: Float32Array, n: number): void {
    this.checkRows(x, n, 'x', 'train', 1);
    if (this.kind === 'SQfp16') return;
    const d = this.d;
    // The first row, then strict < and > as Faiss compares: among equal values (+0 and -0) the
    // first one seen is kept.
    const vmin = x.slice(0, d);
    const vmax = x.slice(0, d);
    for (let i = 1; i < n; i++) {
      for (let j = 0; j < d; j++) {
        const v = x[i * d + j];
        if (v < vmin[j]) vmin[j] = v;
        if (v > vmax[j]) vmax[j] = v;
      }
    }
    const vdiff = new Float32Array(d);
    for (let j = 0; j < d; j++) {
      vdiff[j] = vmax[j] - vmin[j];
      if (!Number.isFinite(vdiff[j])) {
        throw new InvalidArgumentError(
          `${this.kind} train: column ${j} spans [${vmin[j]}, ${vmax[j]}], a width that overflows float32; scale the vectors down`,
        );
      }
    }
    this.vmin = vmin;
    this.vdiff = vdiff;
  }

  /**
   * Encodes `x` (`n * d`, finite) to `n * codeSize` bytes in Faiss's layout. SQ8 / SQ4: xi =
   * (x - vmin) / vdiff in float32, clamped to [0, 1] (values outside the trained range take the end
   * codes), then truncated: SQ8 `(int)(255 * xi)` with a float32 product, SQ4 `(int)(xi * 15.0)`
   * with a float64 one (both equal floor of the exact product for every float32 xi in [0, 1]).
   * A dimension with vdiff 0 gets code 0 whatever its value. SQfp16: magnitudes of 65520 and more
   * are refused (Faiss would store +-Infinity, which no distance survives).
   */
  encode(x: Float32Array, n: number): Uint8Array {
    this.checkTrained('encode');
    this.checkRows(x, n, 'x', 'encode', 0);
    const { d, codeSize } = this;
    const codes = new Uint8Array(n * codeSize);
    if (this.kind === 'SQfp16') {
      for (let i = 0; i < n * d; i++) {
        if (Math.abs(x[i]) >= HALF_OVERFLOW) {
          throw new InvalidArgumentError(
            `SQfp16 encode: x row ${Math.floor(i / d)} has ${x[i]} at column ${i % d}; half floats hold magnitudes below ${HALF_OVERFLOW} (larger ones would be stored as Infinity)`,
          );
        }
      }
      for (let i = 0; i < n * d; i++) {
        const h = floatToHalf(x[i]);
        codes[2 * i] = h & 0xff;
        codes[2 * i + 1] = h >>> 8;
      }
      return codes;
    }
    const vmin = this.vmin!;
    const vdiff = this.vdiff!;
    for (let i = 0; i < n; i++) {
      const o = i * codeSize;
      for (let j = 0; j < d; j++) {
        let xi = 0;
        if (vdiff[j] !== 0) {
          xi = Math.fround(Math.fround(x[i * d + j] - vmin[j]) / vdiff[j]);
          if (xi < 0) xi = 0;
          if (xi > 1) xi = 1;
        }
        if (this.kind === 'SQ8') codes[o + j] = Math.trunc(Math.fround(255 * xi));
        else codes[o + (j >> 1)] |= Math.trunc(xi * 15) << ((j & 1) << 2);
      }
    }
    return codes;
  }

  /**
   * Decodes `n` codes (`n * codeSize` bytes, Faiss's layout) to `n * d` floats, as Faiss's
   * `decode_vector`: SQ8 / SQ4 `vmin + ((c + 0.5f) / 255.0f) * vdiff` (15.0f for SQ4), each step
   * rounded to float32, a multiply and an add (no fused multiply-add); SQfp16 the half's value.
   * The cells' centres: code 255 decodes to vmin + 255.5 / 255 * vdiff, just past the trained maximum.
   */
  decode(codes: Uint8Array, n: number): Float32Array {
    this.checkTrained('decode');
    this.checkCodes(codes, n, 'decode');
    const d = this.d;
    const out = new Float32Array(n * d);
    if (this.kind === 'SQfp16') {
      for (let i = 0; i < n * d; i++) out[i] = halfToFloat(codes[2 * i] | (codes[2 * i + 1] << 8));
      return out;
    }
    const vmin = this.vmin!;
    const vdiff = this.vdiff!;
    const levels = this.levels;
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < d; j++) {
        const unit = Math.fround((this.codeValue(codes, i, j) + 0.5) / levels);
        out[i * d + j] = vmin[j] + Math.fround(unit * vdiff[j]);
      }
    }
    return out;
  }

  /**
   * The code value of dimension `j` of row `row` of `codes` (Faiss's layout): the integer code
   * (SQ8, SQ4) or the half's value (SQfp16). Unchecked: the caller keeps `row` and `j` in range.
   */
  codeValue(codes: Uint8Array, row: number, j: number): number {
    const o = row * this.codeSize;
    if (this.kind === 'SQ8') return codes[o + j];
    if (this.kind === 'SQ4') return (codes[o + (j >> 1)] >> ((j & 1) << 2)) & 0xf;
    return halfToFloat(codes[o + 2 * j] | (codes[o + 2 * j + 1] << 8));
  }

  /**
   * The device layout of `n` codes: `n` rows of `words` u32 (words >= minWords), the code bytes in
   * little-endian order and the rest zero. So SQ8 dimension j is byte j & 3 of word j >> 2; SQ4
   * dimension j is nibble j & 7 of word j >> 3, low nibble first; SQfp16 dimension j is half j & 1
   * of word j >> 1, low half first. (WGSL: `extractBits` / `unpack4xU8`, `unpack2x16float`.)
   */
  packed(codes: Uint8Array, n: number, words: number = this.minWords): Uint32Array {
    this.checkCodes(codes, n, 'packed');
    if (typeof words !== 'number' || !Number.isInteger(words) || words < this.minWords || words > 1 << 20) {
      throw new InvalidArgumentError(
        `${this.kind} packed: words must be an integer in [${this.minWords}, ${1 << 20}] (ceil(${this.codeSize} code bytes / 4) at the least); got ${String(words)}`,
      );
    }
    const cs = this.codeSize;
    const out = new Uint32Array(n * words);
    for (let i = 0; i < n; i++) {
      for (let b = 0; b < cs; b++) out[i * words + (b >> 2)] |= codes[i * cs + b] << ((b & 3) << 3);
    }
    return out;
  }

  /**
   * The code value of dimension `j` of row `row` of `packed` rows of `words` u32 (as `codeValue`,
   * from the device layout): what a CPU twin of the scan kernel reads. Unchecked.
   */
  packedValue(packed: Uint32Array, words: number, row: number, j: number): number {
    const o = row * words;
    if (this.kind === 'SQ8') return (packed[o + (j >> 2)] >>> ((j & 3) << 3)) & 0xff;
    if (this.kind === 'SQ4') return (packed[o + (j >> 3)] >>> ((j & 7) << 2)) & 0xf;
    return halfToFloat((packed[o + (j >> 1)] >>> ((j & 1) << 4)) & 0xffff);
  }

  /**
   * Per-query terms for scoring codes without decoding them: for query r and any code c,
   * `qbias[r] + sum_j xq[r * d + j] * codeValue(c, j)` equals `q_r . decode(c)` up to float
   * rounding. SQ8 / SQ4 (L = 255 / 15): decode(c)_j = vmin_j + (c_j + 0.5) * vdiff_j / L, so
   * xq_j = q_j * vdiff_j / L and qbias = sum_j q_j * (vmin_j + 0.5 * vdiff_j / L), each computed in
   * float64 and rounded once. SQfp16: xq = q, qbias = 0. `q` is `nq * d`, finite; a term that
   * overflows float32 is refused, naming both factors. (That cannot happen for queries within
   * MAX_SQUARED_NORM against tables Codec.checkBound accepts: |q . decode(0)| and each
   * |q_j vdiff_j / L| then stay below float32's range.) (L2 adds ||q||^2 and the decoded vectors'
   * squared norms.)
   */
  queryTransform(q: Float32Array, nq: number): SqQueryTerms {
    this.checkTrained('queryTransform');
    this.checkRows(q, nq, 'q', 'queryTransform', 0);
    const d = this.d;
    if (this.kind === 'SQfp16') return { xq: q.slice(), qbias: new Float32Array(nq) };
    const vmin = this.vmin!;
    const vdiff = this.vdiff!;
    const levels = this.levels;
    const xq = new Float32Array(nq * d);
    const qbias = new Float32Array(nq);
    for (let r = 0; r < nq; r++) {
      let bias = 0;
      for (let j = 0; j < d; j++) {
        const v = q[r * d + j];
        xq[r * d + j] = (v * vdiff[j]) / levels;
        bias += v * (vmin[j] + (0.5 * vdiff[j]) / levels);
        if (!Number.isFinite(xq[r * d + j])) this.overflow(r, `q_j vdiff_j / ${levels} at column ${j} (q_j = ${v.toExponential(3)}, vdiff_j = ${vdiff[j].toExponential(3)})`);
      }
      qbias[r] = bias;
      if (!Number.isFinite(qbias[r])) this.overflow(r, 'q . (vmin + vdiff / 2L), the constant term');
    }
    return { xq, qbias };
  }

  /**
   * The largest squared norm a code's reconstruction can have (float64, over every code: in each
   * dimension the larger square of the two end codes' values, as `decode` rounds them; for SQfp16
   * the largest finite half in every dimension), and what contributes most to it (see
   * Codec.checkBound).
   */
  largestReconstruction(): { norm2: number; most: string } {
    this.checkTrained('largestReconstruction');
    if (this.kind === 'SQfp16') return { norm2: this.d * HALF_MAX * HALF_MAX, most: `every half at ${HALF_MAX}` };
    const vmin = this.vmin!;
    const vdiff = this.vdiff!;
    const ends = new Float32Array(2);
    let norm2 = 0;
    let most = 0;
    let mostSquare = -1;
    for (let j = 0; j < this.d; j++) {
      for (const [e, code] of [0, this.levels].entries()) ends[e] = vmin[j] + Math.fround(Math.fround((code + 0.5) / this.levels) * vdiff[j]);
      const square = Math.max(ends[0] * ends[0], ends[1] * ends[1]);
      norm2 += square;
      if (square > mostSquare) [most, mostSquare] = [j, square];
    }
    return { norm2, most: `dimension ${most} the most: vmin[${most}] = ${vmin[most].toExponential(3)}, vdiff[${most}] = ${vdiff[most].toExponential(3)}` };
  }

  /** What messages call the trained tables. */
  get tableName(): string {
    return `${this.kind} tables`;
  }

  /**
   * The trained state for saving, as Faiss's `trained`: vmin[d] then vdiff[d] (a copy); empty for
   * SQfp16. Refused before training.
   */
  tables(): Float32Array {
    this.checkTrained('tables');
    if (this.kind === 'SQfp16') return new Float32Array(0);
    const t = new Float32Array(2 * this.d);
    t.set(this.vmin!, 0);
    t.set(this.vdiff!, this.d);
    return t;
  }

  /**
   * A trained quantiser from `tables()` (or Faiss's `trained` vector): 2d finite floats, vdiff >= 0,
   * for SQ8 / SQ4; none for SQfp16.
   */
  static fromTables(d: number, kind: SqKind, tables: Float32Array): ScalarQuantizer {
    const sq = new ScalarQuantizer(d, kind);
    const want = kind === 'SQfp16' ? 0 : 2 * d;
    if (!(tables instanceof Float32Array) || tables.length !== want) {
      const got = tables instanceof Float32Array ? `length ${tables.length}` : typeName(tables);
      throw new InvalidArgumentError(`${kind} tables must be a Float32Array of ${want} values (vmin[d] then vdiff[d]); got ${got}`);
    }
    if (kind === 'SQfp16') return sq;
    for (let i = 0; i < want; i++) {
      const v = tables[i];
      const what = i < d ? `vmin[${i}]` : `vdiff[${i - d}]`;
      if (!Number.isFinite(v) || (i >= d && v < 0)) {
        throw new InvalidArgumentError(`${kind} tables: ${what} is ${v}; expected a finite value${i >= d ? ' >= 0' : ''}`);
      }
    }
    sq.vmin = tables.slice(0, d);
    sq.vdiff = tables.slice(d);
    return sq;
  }

  private checkTrained(op: string): void {
    if (!this.isTrained) throw new InvalidArgumentError(`${this.kind} ${op}: the quantizer is not trained; call train first`);
  }

  /** `x` must hold `n` (an integer >= min) finite rows of d floats. */
  private checkRows(x: Float32Array, n: number, what: string, op: string, min: number): void {
    this.checkCount(n, op, min);
    if (!(x instanceof Float32Array)) throw new InvalidArgumentError(`${this.kind} ${op}: ${what} must be a Float32Array; got ${typeName(x)}`);
    if (x.length !== n * this.d) {
      throw new InvalidArgumentError(`${this.kind} ${op}: ${what} has length ${x.length}; expected n * d = ${n} * ${this.d} = ${n * this.d} values`);
    }
    checkVectors(x, this.d, `${this.kind} ${op}: ${what}`, true, false);
  }

  private checkCodes(codes: Uint8Array, n: number, op: string): void {
    this.checkCount(n, op, 0);
    if (!(codes instanceof Uint8Array)) throw new InvalidArgumentError(`${this.kind} ${op}: codes must be a Uint8Array; got ${typeName(codes)}`);
    if (codes.length !== n * this.codeSize) {
      throw new InvalidArgumentError(
        `${this.kind} ${op}: codes has length ${codes.length}; expected n * codeSize = ${n} * ${this.codeSize} = ${n * this.codeSize} bytes`,
      );
    }
  }

  private checkCount(n: number, op: string, min: number): void {
    if (typeof n !== 'number' || !Number.isInteger(n) || n < min) {
      throw new InvalidArgumentError(`${this.kind} ${op}: n must be an integer >= ${min}; got ${String(n)}`);
    }
  }

  private overflow(row: number, what: string): never {
    throw new InvalidArgumentError(`${this.kind} queryTransform: for q row ${row} and these tables, ${what} overflows float32`);
  }
}
