/**
 * How a store keeps each vector on the device: a row of `rowWords` 32-bit words. Float32 rows
 * (`floatRows`, Flat and IVF-Flat) are `dpad` floats, zero-padded; coded rows (scalar quantisers,
 * src/codecs) are packed codes. The store, its host copy (src/stores/rows.ts) and the plans see
 * only words; a format says how rows become words and back, and how queries are scored against them.
 */
import { type SqCodeKind, padRows, paddedDim, unpadRows } from '../device.js';

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
    row: (words, offset) => words.subarray(offset, offset + d),
    rows: (words, n) => unpadRows(words, n, d, dpad),
  };
}
