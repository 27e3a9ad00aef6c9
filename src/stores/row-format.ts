/**
 * How a store keeps each vector on the device: a row of `rowWords` 32-bit words. Float32 rows
 * (`floatRows`, Flat and IVF-Flat) are `dpad` floats, zero-padded; coded rows (scalar quantisers,
 * src/codecs) are packed codes. The store, its host copy (src/stores/rows.ts) and the plans see
 * only words; a format says how rows become words and back, and how queries are scored against them.
 */
import type { ScalarQuantizer } from '../codecs/scalar-quantizer.js';
import { type SqCodeKind, padRows, paddedDim, sqCodeWords, unpadRows } from '../device.js';

/** How a plan scores queries against rows of a format. */
export type RowScoring =
  | { kernel: 'gemm-scores' }
  | {
      kernel: 'sq-scores';
      kind: SqCodeKind;
      /**
       * The queries (`nq * d`, as the index holds them) as sq-scores takes them: `xq` (`nq * d`)
       * and one bias per query, so that bias + xq . code = q . decode(code).
       */
      transform(xq: Float32Array, nq: number): { xq: Float32Array; qbias: Float32Array };
    };

export interface RowFormat {
  readonly d: number;
  /** Query rows and float rows are `dpad` floats (d rounded up to a multiple of 4). */
  readonly dpad: number;
  /** 32-bit words a stored row takes. */
  readonly rowWords: number;
  readonly scoring: RowScoring;
  /**
   * `n` rows (`n * d`, as the index holds them) as stored words (`n * rowWords`, a Float32Array
   * over the words' bits), and the squared norms of the rows as they will be scored, or null where
   * the `norms` kernel computes them from the stored rows (float rows).
   */
  encode(x: Float32Array, n: number): { words: Float32Array; norms: Float32Array | null };
  /** As `encode`, for rows already stored in this format (`n * rowWords` words: a compaction, a load). */
  stored(words: Float32Array, n: number): { words: Float32Array; norms: Float32Array | null };
  /** The row stored at `words[offset .. offset + rowWords)` as `d` floats (a view for float rows). */
  row(words: Float32Array, offset: number): Float32Array;
  /** `n` stored rows as `n * d` floats (a view where the rows need no change). */
  rows(words: Float32Array, n: number): Float32Array;
}

/** Float32 rows: `dpad` floats a row, zero-padded; norms by the `norms` kernel. */
export function floatRows(d: number): RowFormat {
  const dpad = paddedDim(d);
  return {
    d,
    dpad,
    rowWords: dpad,
    scoring: { kernel: 'gemm-scores' },
    encode: (x, n) => ({ words: padRows(x, n, d, dpad), norms: null }),
    stored: (words) => ({ words, norms: null }),
    row: (words, offset) => words.subarray(offset, offset + d),
    rows: (words, n) => unpadRows(words, n, d, dpad),
  };
}

/** The code layout sq-scores reads for each scalar quantiser. */
const SQ_KIND: Record<ScalarQuantizer['kind'], SqCodeKind> = { SQ8: 'sq8', SQ4: 'sq4', SQfp16: 'fp16' };

/**
 * Rows as a trained scalar quantiser's codes (Faiss's byte layout, each row padded to whole words:
 * the device layout sq-scores reads is those bytes, little-endian), scored by sq-scores with
 * transformed queries; norms are those of the decoded rows, so a search ranks by the distance to
 * the reconstruction, as Faiss's IndexScalarQuantizer does.
 */
export function sqRows(sq: ScalarQuantizer): RowFormat {
  const { d, codeSize } = sq;
  const dpad = paddedDim(d);
  const kind = SQ_KIND[sq.kind];
  const rowWords = sqRowWords(sq.kind, d);
  /** The codes of `n` rows stored in `words` (rows of rowWords words), as Faiss lays them out. */
  const codesOf = (words: Float32Array, n: number): Uint8Array => {
    const bytes = new Uint8Array(words.buffer, words.byteOffset, n * rowWords * 4);
    if (rowWords * 4 === codeSize) return bytes;
    const out = new Uint8Array(n * codeSize);
    for (let i = 0; i < n; i++) out.set(bytes.subarray(i * rowWords * 4, i * rowWords * 4 + codeSize), i * codeSize);
    return out;
  };
  return {
    d,
    dpad,
    rowWords,
    scoring: { kernel: 'sq-scores', kind, transform: (xq, nq) => sq.queryTransform(xq, nq) },
    encode(x, n) {
      const codes = sq.encode(x, n);
      const words = new Float32Array(n * rowWords);
      const bytes = new Uint8Array(words.buffer);
      for (let i = 0; i < n; i++) bytes.set(codes.subarray(i * codeSize, (i + 1) * codeSize), i * rowWords * 4);
      return { words, norms: normsOf(sq.decode(codes, n), n) };
    },
    stored: (words, n) => ({ words, norms: normsOf(sq.decode(codesOf(words, n), n), n) }),
    row: (words, offset) => sq.decode(codesOf(words.subarray(offset, offset + rowWords), 1), 1),
    rows: (words, n) => sq.decode(codesOf(words, n), n),
  };
}

/** The squared norms of `n` rows of `d` floats, summed in dimension order. */
function normsOf(x: Float32Array, n: number): Float32Array {
  const d = x.length / Math.max(1, n);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let j = i * d; j < (i + 1) * d; j++) s += x[j] * x[j];
    out[i] = s;
  }
  return out;
}

/**
 * Words a stored row of a scalar quantiser's codes takes: whole words, and as many as sq-scores
 * reads for `dpad` dimensions (the padding codes are 0).
 */
export function sqRowWords(kind: ScalarQuantizer['kind'], d: number): number {
  const codeBytes = kind === 'SQ8' ? d : kind === 'SQ4' ? Math.ceil(d / 2) : 2 * d;
  return Math.max(Math.ceil(codeBytes / 4), sqCodeWords(SQ_KIND[kind], paddedDim(d)));
}

/** Floats of a scalar quantiser's trained tables: vmin and vdiff per dimension (none for SQfp16). */
export function sqTableFloats(kind: ScalarQuantizer['kind'], d: number): number {
  return kind === 'SQfp16' ? 0 : 2 * d;
}
