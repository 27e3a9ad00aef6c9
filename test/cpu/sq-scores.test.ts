import { describe, expect, it } from 'vitest';
import { sqScores } from '../../src/cpu/sq-scores.js';
import { halfToFloat } from '../../src/common/fp16.js';
import { type SqCodeKind, sqCodeWords } from '../../src/device.js';
import type { KernelMetric } from '../../src/kernel-facts.js';
import { SQ_KINDS, SQ_SHAPES, sqCase, sqMismatch, sqReference } from '../helpers/sq.js';

/** Runs the twin on a case's tile: rows x ldc, NaN outside the tile. */
function twin(c: ReturnType<typeof sqCase>, metric: KernelMetric, q0: number, rows: number, col0: number, cols: number, ldc: number): Float32Array {
  const s = new Float32Array(rows * ldc).fill(NaN);
  sqScores(metric, c.kind, c.xq, c.qbias, q0, rows, c.codes, c.xnorm, col0, cols, c.dpad, c.codeWords, s, ldc);
  return s;
}

describe('cpu sq-scores', () => {
  // Two base rows, d = 5 (dpad 8): (1, 2, 3, 4, 5) and (0, 0, 0, 0, 1), in each kind's layout.
  const hand: Record<SqCodeKind, number[]> = {
    sq8: [0x04030201, 0x00000005, 0x00000000, 0x00000001],
    sq4: [0x00054321, 0x00010000],
    // Halves: 1 = 0x3c00, 2 = 0x4000, 3 = 0x4200, 4 = 0x4400, 5 = 0x4500.
    fp16: [0x40003c00, 0x44004200, 0x00004500, 0x00000000, 0, 0, 0x00003c00, 0],
  };
  it.each(SQ_KINDS)('scores a tile by hand (%s, l2 and ip)', (kind) => {
    const codeWords = hand[kind].length / 2;
    const codes = Uint32Array.from(hand[kind]);
    const xq = new Float32Array([1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]); // rows 0 and 1 (zero)
    const qbias = new Float32Array([0.5, -1]);
    const xnorm = new Float32Array([55, 1]);
    const s = new Float32Array(2 * 3).fill(NaN);
    sqScores('l2', kind, xq, qbias, 0, 2, codes, xnorm, 0, 2, 8, codeWords, s, 3);
    // dot(0, 0) = 0.5 + 1 * 1 + 2 * 5 = 11.5, dot(0, 1) = 0.5 + 2 = 2.5; row 1: the bias, -1.
    expect(Array.from(s)).toEqual([55 - 23, 1 - 5, NaN, 55 + 2, 1 + 2, NaN]);
    sqScores('ip', kind, xq, qbias, 0, 2, codes, xnorm, 0, 2, 8, codeWords, s, 3);
    expect(Array.from(s)).toEqual([-11.5, -2.5, NaN, 1, 1, NaN]);
  });

  it('decodes halves: normal, largest, subnormal, signed zero, infinity, NaN', () => {
    expect([0x3c00, 0xc000, 0x3555, 0x7bff, 0x0001, 0x03ff, 0x8000, 0x7c00, 0xfc00].map(halfToFloat)).toEqual([
      1, -2, 0.333251953125, 65504, 2 ** -24, 1023 * 2 ** -24, -0, Infinity, -Infinity,
    ]);
    expect(halfToFloat(0x7e00)).toBeNaN();
  });

  it('refuses rows shorter than the words it reads, and dpad not a multiple of 4', () => {
    const z = new Float32Array(64);
    const run = (kind: SqCodeKind, dpad: number, codeWords: number) => () =>
      sqScores('l2', kind, z, z, 0, 1, new Uint32Array(64), z, 0, 1, dpad, codeWords, z, 1);
    expect(sqCodeWords('sq8', 12)).toBe(3);
    expect(sqCodeWords('sq4', 12)).toBe(2);
    expect(sqCodeWords('fp16', 12)).toBe(6);
    expect(run('sq8', 12, 2)).toThrow(/codeWords at least 3 for dpad 12; got dpad 12, codeWords 2/);
    expect(run('sq4', 12, 1)).toThrow(/at least 2/);
    expect(run('fp16', 12, 5)).toThrow(/at least 6/);
    expect(run('sq8', 10, 3)).toThrow(/multiple of 4/);
    expect(run('sq4', 12, 2)).not.toThrow();
  });

  for (const kind of SQ_KINDS) {
    for (const [nq, nb, d, q0, rows, col0, cols, ldc] of SQ_SHAPES) {
      for (const data of ['int', 'float'] as const) {
        it(`equals a float64 reference: ${kind} nq=${nq} nb=${nb} d=${d} tile ${rows}x${cols} ${data}`, () => {
          const c = sqCase(kind, nq, nb, d, data, 17 + nq + d, d % 3);
          for (const metric of ['l2', 'ip'] as KernelMetric[]) {
            const got = twin(c, metric, q0, rows, col0, cols, ldc);
            const { want, scale } = sqReference(c, metric, q0, rows, col0, cols, ldc);
            // Summed in float64 and rounded once: within a float32 rounding of the terms' size.
            expect(sqMismatch(got, want, scale, ldc, data === 'int' ? 0 : 1e-7), metric).toBeNull();
          }
        });
      }
    }
  }
});
