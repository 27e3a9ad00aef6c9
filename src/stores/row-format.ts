/**
 * How a store keeps each vector on the device: a row of `rowWords` 32-bit words (a RowFormat,
 * src/contracts.ts). Float32 rows (`floatRows`, Flat and IVF-Flat) are `dpad` floats, zero-padded;
 * coded rows are a codec's codes (src/codecs/code-rows.ts). The store, its host copy
 * (src/stores/rows.ts) and the plans see only words; a format says how rows become words and back,
 * and how queries are scored against them.
 */
import { padRows, paddedDim, unpadRows } from '../device.js';
import type { RowFormat } from '../contracts.js';

/** Float32 rows: `dpad` floats a row, zero-padded; norms by the `norms` kernel. */
export function floatRows(d: number): RowFormat {
  const dpad = paddedDim(d);
  return {
    d,
    dpad,
    rowWords: dpad,
    scoring: { kernel: 'gemm-scores' },
    residual: false,
    encode: (x, n) => ({ words: padRows(x, n, d, dpad), norms: null }),
    stored: (words) => ({ words, norms: null }),
    row: (words, offset) => words.subarray(offset, offset + d),
    rows: (words, n) => unpadRows(words, n, d, dpad),
  };
}

