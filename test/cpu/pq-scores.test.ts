import { describe, expect, it } from 'vitest';
import { pqCodeRow, pqScores } from '../../src/cpu/pq-scores.js';
import { pqTables } from '../../src/cpu/pq-tables.js';
import { ProductQuantizer } from '../../src/codecs/product-quantizer.js';
import { randomFloats } from '../../src/common/random.js';
import { firstMismatch, packCodes, pqReference, randomCodes, tablesReference } from '../helpers/pq.js';

describe('cpu pq-scores and pq-tables', () => {
  it('scores a tile by hand: the bias plus one table entry per sub-quantizer', () => {
    // M = 2, nbits 4 (ksub 16): row 0 has codes (3, 15), row 1 (0, 1); one word a row.
    const codes = Uint32Array.from([0xf3, 0x10]);
    const luts = new Float32Array(2 * 2 * 16);
    // Query row 0's tables: entry j of sub-quantizer m is 100 m + j; query row 1's are all 1.
    for (let m = 0; m < 2; m++) for (let j = 0; j < 16; j++) luts[m * 16 + j] = 100 * m + j;
    luts.fill(1, 32);
    const qbias = new Float32Array([7, 0.5, -2]);
    const s = new Float32Array(2 * 3).fill(NaN);
    pqScores(luts, qbias, 1, 2, codes, 0, 2, 2, 4, 1, s, 3);
    // Row 0 (qbias[1] = 0.5): 0.5 + 3 + 115 and 0.5 + 0 + 101; row 1 (qbias[2] = -2): -2 + 1 + 1.
    expect(Array.from(s)).toEqual([118.5, 101.5, NaN, 0, 0, NaN]);
  });

  for (const nbits of [4, 5, 6, 7, 8]) {
    it(`reads codes of ${nbits} bits as Faiss packs them, across word boundaries (M = 11)`, () => {
      const M = 11;
      const rowWords = Math.ceil((M * nbits) / 32) + 1; // a spare word: rows wider than the code
      const want = randomCodes(5, M, nbits, nbits);
      const words = packCodes(want, nbits, rowWords);
      const got = new Uint16Array(M);
      for (let i = 0; i < 5; i++) {
        pqCodeRow(words, i * rowWords, M, nbits, got);
        expect(Array.from(got), `row ${i}`).toEqual(want[i]);
      }
      // The quantiser's own byte packing is the same bit string.
      const pq = new ProductQuantizer(M * 2, M, nbits);
      const bytes = new Uint8Array(words.buffer);
      const unpacked = new Uint16Array(M);
      pq.unpack(bytes, 2 * rowWords * 4, unpacked);
      expect(Array.from(unpacked)).toEqual(want[2]);
    });
  }

  it('scores tiles at offsets (q0, col0, ldc > cols) as a float64 sum would, to float32 rounding', () => {
    const M = 6;
    const nbits = 5;
    const ksub = 1 << nbits;
    const rowWords = 2;
    const codes = randomCodes(40, M, nbits, 3);
    const words = packCodes(codes, nbits, rowWords);
    const rows = 7;
    const luts = randomFloats(rows * M * ksub, 4).map((v) => 100 * v);
    const qbias = randomFloats(20, 5);
    const s = new Float32Array(rows * 33).fill(NaN);
    pqScores(luts, qbias, 9, rows, words, 5, 30, M, nbits, rowWords, s, 33);
    expect(firstMismatch(s, pqReference(luts, qbias, codes, M, nbits, 9, rows, 5, 30, 33), 1e-5)).toBeNull();
  });

  it('refuses rows too short for the codes, and nbits outside 4 .. 8', () => {
    const s = new Float32Array(4);
    expect(() => pqScores(new Float32Array(64), new Float32Array(1), 0, 1, new Uint32Array(4), 0, 1, 9, 4, 1, s, 1)).toThrow(/codeWords at least ceil\(M \* nbits \/ 32\); got M 9, nbits 4, codeWords 1/);
    expect(() => pqScores(new Float32Array(64), new Float32Array(1), 0, 1, new Uint32Array(4), 0, 1, 2, 9, 1, s, 1)).toThrow(/nbits must be in \[4, 8\]/);
  });

  for (const metric of ['l2', 'ip'] as const) {
    it(`makes the ${metric} tables of a query tile (row r of the tile at row r) as a float64 sum would`, () => {
      const M = 4;
      const dsub = 3;
      const ksub = 16;
      const dpad = 12;
      const xq = randomFloats(10 * dpad, 6);
      const codebook = randomFloats(M * ksub * dsub, 7);
      const luts = new Float32Array(3 * M * ksub);
      pqTables(metric, xq, codebook, luts, 4, 3, M, ksub, dsub, dpad);
      expect(firstMismatch(luts, tablesReference(metric, xq, codebook, 4, 3, M, ksub, dsub, dpad), 1e-6)).toBeNull();
      // One entry by hand: query row 4, sub-quantizer 1, centroid 2.
      const x = xq.subarray(4 * dpad + 3, 4 * dpad + 6);
      const c = codebook.subarray((16 + 2) * 3, (16 + 2) * 3 + 3);
      const hand = metric === 'l2' ? (x[0] - c[0]) ** 2 + (x[1] - c[1]) ** 2 + (x[2] - c[2]) ** 2 : -(x[0] * c[0] + x[1] * c[1] + x[2] * c[2]);
      expect(luts[(0 * M + 1) * ksub + 2]).toBeCloseTo(hand, 6);
    });
  }
});
