import { describe, expect, it } from 'vitest';
import { maskAllows, maskScores } from '../../src/cpu/mask-scores.js';
import { rng } from '../../src/common/random.js';
import { MASK_DENSITIES, MASK_SHAPES, maskCase, maskedReference } from '../helpers/mask.js';

describe('cpu mask-scores', () => {
  it('masks by hand: bits from bit0, row stride, columns past cols untouched', () => {
    // Columns 0..3 are bits 5..8, of which 6 and 8 are set: columns 1 and 3 stay. Rows of 5
    // (column 4 is past cols), 2 rows masked, the third row past the tile.
    const mask = new Uint32Array([0b1_0100_0000, 0]);
    const scores = new Float32Array([1, 2, 3, 4, 9, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
    maskScores(scores, 5, 2, 4, mask, 5);
    expect(Array.from(scores)).toEqual([Infinity, 2, Infinity, 4, 9, Infinity, 6, Infinity, 8, 9, 10, 11, 12, 13, 14]);
  });

  it('reads bits across words', () => {
    const mask = new Uint32Array([0x80000000, 1]);
    expect([30, 31, 32, 33].map((b) => maskAllows(mask, b))).toEqual([false, true, true, false]);
  });

  let seed = 1;
  for (const [rows, cols, ldc, bit0] of MASK_SHAPES) {
    for (const density of MASK_DENSITIES) {
      const caseSeed = seed++;
      it(`rows=${rows} cols=${cols} ldc=${ldc} bit0=${bit0}, ${density * 100}% allowed (seed ${caseSeed})`, () => {
        const c = maskCase(rows, cols, ldc, bit0, density, rng(caseSeed));
        const got = c.scores.slice();
        maskScores(got, ldc, rows, cols, c.mask, bit0);
        expect(Array.from(got)).toEqual(Array.from(maskedReference(c)));
      });
    }
  }
});
