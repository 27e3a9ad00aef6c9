/**
 * Codecs as the indexes use them (Faiss's `code_size` + scanner idea): a codec is trained on a
 * sample, encodes rows into a store's words and gives the store its RowFormat (how the plans score
 * the codes: src/stores/row-format.ts). Two families, spelt as Faiss's factory spells them:
 *   - scalar quantisers `SQ8`, `SQ4`, `SQfp16` (src/codecs/scalar-quantizer.ts);
 *   - product quantisers `PQ<M>` and `PQ<M>x<nbits>`, nbits 4 .. 8, default 8
 *     (src/codecs/product-quantizer.ts);
 *   - binary codes `LSH`, `LSHr`, `LSHt`, `LSHrt`: d sign bits, after a random rotation (r) and
 *     against trained thresholds (t) (src/codecs/lsh.ts).
 * Float32 rows are no codec (a Flat or IVF-Flat index).
 */
import type { Compute } from '../contracts.js';
import { PQ_MAX_NBITS, PQ_MIN_NBITS } from '../device.js';
import { sampleRows } from './kmeans.js';
import { rng } from '../common/random.js';
import { bitRows, codeWords, pqRowWords, pqRows, sqRowWords, sqRows, sqTableFloats } from './code-rows.js';
import { MAX_SQUARED_NORM, MAX_SQUARED_NORM_TEXT } from '../types.js';
import { checkRefine } from './refine.js';
import { type VectorSource, dimensionRange } from '../common/vector-source.js';
import { halfToFloat } from '../common/fp16.js';
import { ProductQuantizer } from './product-quantizer.js';
import { SQ_KINDS, ScalarQuantizer, type SqKind } from './scalar-quantizer.js';
import { LSH_TRAIN_ROWS, Lsh, lshTableFloats } from './lsh.js';
import type { EncodedRows, RowFormat } from '../contracts.js';
import { InvalidArgumentError } from '../errors.js';

export type CodecSpec =
  | { type: 'SQ'; kind: SqKind }
  | { type: 'PQ'; M: number; nbits: number }
  /** Binary codes: `rotate` (LSHr), `thresholds` (LSHt). */
  | { type: 'LSH'; rotate: boolean; thresholds: boolean };

export const CODEC_FORMS = '"SQ8", "SQ4", "SQfp16", "PQ<M>", "PQ<M>x<nbits>" (nbits 4 .. 8), "LSH", "LSHr", "LSHt" or "LSHrt"';

/** The codec a factory-string component names, or null where it names none (e.g. "Flat"). Throws for a PQ with bad numbers. */
export function parseCodec(text: string): CodecSpec | null {
  if ((SQ_KINDS as readonly string[]).includes(text)) return { type: 'SQ', kind: text as SqKind };
  const lsh = /^LSH(r?)(t?)$/.exec(text);
  if (lsh) return { type: 'LSH', rotate: lsh[1] === 'r', thresholds: lsh[2] === 't' };
  const pq = /^PQ(\d+)(?:x(\d+))?$/.exec(text);
  if (!pq) return null;
  const M = Number(pq[1]);
  const nbits = pq[2] === undefined ? 8 : Number(pq[2]);
  if (!(M >= 1 && M <= 65535)) throw new InvalidArgumentError(`${text}: M (sub-quantizers) must be in [1, 65535]; got ${pq[1]}`);
  if (!(nbits >= PQ_MIN_NBITS && nbits <= PQ_MAX_NBITS)) throw new InvalidArgumentError(`${text}: nbits must be in [${PQ_MIN_NBITS}, ${PQ_MAX_NBITS}]; got ${pq[2]}`);
  return { type: 'PQ', M, nbits };
}

/** The codec's factory spelling: SQ8, PQ16, PQ32x4. */
export function codecName(c: CodecSpec): string {
  if (c.type === 'LSH') return `LSH${c.rotate ? 'r' : ''}${c.thresholds ? 't' : ''}`;
  return c.type === 'SQ' ? c.kind : c.nbits === 8 ? `PQ${c.M}` : `PQ${c.M}x${c.nbits}`;
}

/** Floats of a codec's trained tables (SQ: vmin and vdiff per dimension, none for SQfp16; PQ: the codebook; LSH: thresholds and rotation). */
export function codecTableFloats(c: CodecSpec, d: number): number {
  if (c.type === 'LSH') return lshTableFloats(c.rotate, d);
  return c.type === 'SQ' ? sqTableFloats(c.kind, d) : (1 << c.nbits) * d;
}

/** Words a stored row of the codec's codes takes. */
export function codecRowWords(c: CodecSpec, d: number): number {
  if (c.type === 'LSH') return Math.ceil(d / 32);
  return c.type === 'SQ' ? sqRowWords(c.kind, d) : pqRowWords(c.M, c.nbits);
}

/** Bits of a stored row that hold the code (the rest of its codecRowWords words are padding, 0): SQ 8 d, 4 d, 16 d; PQ M nbits; LSH d. */
function codeBits(c: CodecSpec, d: number): number {
  if (c.type === 'LSH') return d;
  if (c.type === 'PQ') return c.M * c.nbits;
  return (c.kind === 'SQ8' ? 8 : c.kind === 'SQ4' ? 4 : 16) * d;
}

/**
 * What is wrong with the first bad row of `n` stored rows of `c` codes (`words`, codecRowWords a
 * row, as a saved index holds them), or null: a bit set in a row's padding (the kernels read whole
 * words: padding bits change Hamming distances, and an SQfp16 padding half meets a zero query
 * column, 0 x NaN = NaN), or an SQfp16 half that is NaN or +-Infinity. Every other code decodes
 * to a value of the tables, which Codec.checkBound bounds.
 */
export function badCodeRow(c: CodecSpec, d: number, words: Uint32Array, n: number): { row: number; problem: string } | null {
  const w = codecRowWords(c, d);
  const bits = codeBits(c, d);
  const fp16 = c.type === 'SQ' && c.kind === 'SQfp16';
  for (let r = 0; r < n; r++) {
    const o = r * w;
    for (let i = bits >>> 5; i < w; i++) {
      const pad = i === bits >>> 5 ? (words[o + i] >>> (bits & 31)) << (bits & 31) : words[o + i];
      if (pad !== 0) {
        const bit = 32 * i + 31 - Math.clz32(pad & -pad);
        return { row: r, problem: `has bit ${bit} set, past its ${bits} bits of code; the padding must be 0` };
      }
    }
    if (!fp16) continue;
    for (let j = 0; j < d; j++) {
      const h = (words[o + (j >>> 1)] >>> ((j & 1) << 4)) & 0xffff;
      if ((h & 0x7c00) === 0x7c00) {
        return { row: r, problem: `has ${halfToFloat(h)} (half 0x${h.toString(16).padStart(4, '0')}) at column ${j}; expected finite values` };
      }
    }
  }
  return null;
}

/** A trained codec. */
export class Codec {
  private constructor(
    readonly spec: CodecSpec,
    private readonly q: ScalarQuantizer | ProductQuantizer | Lsh,
  ) {}

  get name(): string {
    return codecName(this.spec);
  }

  /** Bytes of one code (Faiss's code_size). */
  get codeSize(): number {
    return this.q.codeSize;
  }

  /** The store format of these codes; residual to `centroids` (nlist * d) where given (IVF). */
  format(centroids: Float32Array | null = null): RowFormat {
    if (this.q instanceof Lsh) {
      if (centroids) throw new InvalidArgumentError(`${this.name}: binary codes are not stored by residual (IVF)`);
      return bitRows(this.q);
    }
    return this.q instanceof ScalarQuantizer ? sqRows(this.q, centroids) : pqRows(this.q, centroids);
  }

  /** The trained tables (what `restore` takes back; empty for SQfp16). */
  tables(): Float32Array {
    return this.q.tables();
  }

  /**
   * Throws unless every vector the codes can stand for keeps the bound queries and added vectors
   * are held to (MAX_SQUARED_NORM: every distance to a query then stays finite): stored alone
   * (Flat), the codes' largest reconstruction; as residuals to `centroids` (IVF, `nlist * d`), for
   * each list (||c_l|| + the largest reconstruction's norm)^2, which bounds ||c_l + r|| by the
   * triangle inequality. `train` adds that the vectors trained on are to blame.
   */
  checkBound(centroids: Float32Array | null = null, trained = false): void {
    const { norm2, most } = this.q.largestReconstruction();
    const at = `; ${MAX_SQUARED_NORM_TEXT}${trained ? '; scale the vectors down' : ''}`;
    if (!(norm2 <= MAX_SQUARED_NORM)) {
      throw new InvalidArgumentError(`${this.q.tableName}: a reconstruction can have a squared norm of ${norm2.toExponential(3)} (${most})${at}`);
    }
    if (!centroids) return;
    const d = this.q.d;
    const r = Math.sqrt(norm2);
    for (let l = 0; l < centroids.length / d; l++) {
      let c2 = 0;
      for (let j = l * d; j < (l + 1) * d; j++) c2 += centroids[j] * centroids[j];
      const reach = (Math.sqrt(c2) + r) ** 2;
      if (!(reach <= MAX_SQUARED_NORM)) {
        throw new InvalidArgumentError(
          `list ${l}: its centroid (norm ${Math.sqrt(c2).toExponential(3)}) plus the largest reconstruction of the ${this.q.tableName} (norm ${r.toExponential(3)}) can reach a squared norm of ${reach.toExponential(3)}${at}`,
        );
      }
    }
  }

  /**
   * `n` rows of `x` (`n * d`; residuals for a residual format) encoded for a store of `format`
   * (this codec's): SQ on the host, PQ by a flat search of each sub-space on the backend.
   */
  async encode(compute: Compute, format: RowFormat, x: Float32Array, n: number): Promise<EncodedRows> {
    if (!(this.q instanceof ProductQuantizer)) return format.encode!(x, n);
    return format.stored(codeWords(await this.q.encode(compute, x, n), n, this.q.codeSize, format.rowWords), n);
  }

  /**
   * Where the re-score compares queries with this codec's reconstructions: rows moved there (an
   * LSH's rotation: R x), or `x` itself where reconstructions are in the vectors' own space.
   */
  toCodeSpace(x: Float32Array, n: number): Float32Array {
    return this.q instanceof Lsh ? this.q.toCodeSpace(x, n) : x;
  }

  /** The codec untrained where it needs no training (SQfp16, LSH, LSHr), else null. */
  static untrained(spec: CodecSpec, d: number): Codec | null {
    if (spec.type === 'LSH') return spec.thresholds ? null : new Codec(spec, new Lsh(d, spec.rotate, false));
    return spec.type === 'SQ' && spec.kind === 'SQfp16' ? new Codec(spec, new ScalarQuantizer(d, 'SQfp16')) : null;
  }

  /**
   * An index's `codec` and `refine` options checked for `d`-dimensional rows (PQ: M divides d),
   * before anything is trained: the codec's spec, or null for float32 rows. Refine rows re-rank
   * what a codec or a transform (`transformed`) approximates.
   */
  static checkOptions(codec: unknown, refine: unknown, d: number, transformed = false): CodecSpec | null {
    const spec = codec === undefined ? null : typeof codec === 'string' ? parseCodec(codec) : null;
    if (codec !== undefined && spec === null) throw new InvalidArgumentError(`codec must be one of ${CODEC_FORMS}; got ${String(codec)}`);
    if (spec?.type === 'PQ') new ProductQuantizer(d, spec.M, spec.nbits);
    if (checkRefine(refine) && !spec && !transformed) throw new InvalidArgumentError('refine (,RFlat, ,Refine(SQfp16)) re-ranks codes or transformed rows: it needs a codec or a transform');
    return spec;
  }

  /**
   * Trains on `x` (prepared rows: an array, or a source read block by block): SQ8 / SQ4 on each
   * dimension's minimum and maximum (every row, one pass: Faiss's RS_minmax); PQ on a seeded sample
   * of at most 256 * 2^nbits rows (as Faiss's k-means samples), each sub-space by k-means on the
   * backend.
   */
  static async train(compute: Compute, spec: CodecSpec, d: number, x: Float32Array | VectorSource, seed = 1234): Promise<Codec> {
    const what = codecName(spec);
    if (spec.type === 'SQ') {
      if (spec.kind === 'SQfp16') return Codec.untrained(spec, d)!;
      const range = await dimensionRange(x, d, (b) => b, false);
      if (range === null) throw new InvalidArgumentError(`${what} needs at least one training vector; got none`);
      const sq = new ScalarQuantizer(d, spec.kind);
      // RS_minmax depends only on each dimension's minimum and maximum: training on those two rows
      // gives the tables training on every row would.
      sq.train(range, 2);
      return new Codec(spec, sq);
    }
    if (spec.type === 'LSH') {
      const lsh = new Lsh(d, spec.rotate, spec.thresholds);
      const sample = await sampleRows(x, d, LSH_TRAIN_ROWS, rng(seed));
      lsh.train(sample, sample.length / d);
      return new Codec(spec, lsh);
    }
    const pq = new ProductQuantizer(d, spec.M, spec.nbits);
    const sample = await sampleRows(x, d, 256 * pq.ksub, rng(seed));
    await pq.train(compute, sample, sample.length / d, { seed });
    return new Codec(spec, pq);
  }

  /**
   * A codec from saved tables (see `tables`), each value checked (finite, each quantiser's own
   * rules, a rotation orthonormal); the index then checks the bound (checkBound), which for IVF
   * depends on its centroids.
   */
  static restore(spec: CodecSpec, d: number, tables: Float32Array): Codec {
    if (spec.type === 'PQ') return new Codec(spec, ProductQuantizer.fromTables(d, spec.M, spec.nbits, tables));
    if (spec.type === 'LSH') return new Codec(spec, Lsh.fromTables(d, spec.rotate, spec.thresholds, tables));
    return new Codec(spec, ScalarQuantizer.fromTables(d, spec.kind, tables));
  }
}
