import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HALF_MAX, floatToHalf, halfToFloat } from '../../src/common/fp16.js';
import { SQ_KINDS, ScalarQuantizer, type SqKind } from '../../src/codecs/scalar-quantizer.js';
import { randomFloats } from '../../src/common/random.js';

import { SQ_FIXTURE, TEST_DATA } from '../helpers/data.js';
import { InvalidArgumentError } from '../../src/errors.js';

// The scalar quantiser against Faiss 1.7.3 (test/data/sq/, written by test/data/derive-sq.py):
// trained tables, codes and reconstructions equal bit for bit; then the device layout, the query
// transform and the errors.

interface Stored {
  dtype: '<f4' | '|u1';
  shape: number[];
  base64: string;
}

function load(a: Stored): Float32Array | Uint8Array {
  const bytes = new Uint8Array(Buffer.from(a.base64, 'base64')); // a fresh, aligned copy
  const out = a.dtype === '<f4' ? new Float32Array(bytes.buffer) : bytes;
  expect(out.length).toBe(a.shape.reduce((p, s) => p * s, 1));
  return out;
}
const f4 = (a: Stored) => load(a) as Float32Array;
const u1 = (a: Stored) => load(a) as Uint8Array;

const fixture = JSON.parse(readFileSync(join(TEST_DATA, SQ_FIXTURE), 'utf8'));
const d: number = fixture.d;
const xt = f4(fixture.inputs.xt);
const xs = f4(fixture.inputs.xs);
const xh = f4(fixture.inputs.xh);
const nt = xt.length / d;
const xtxs = new Float32Array([...xt, ...xs]);

/** The first element where two float32 arrays differ in their bits (+0 and -0 differ), or -1. */
function firstBitDifference(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < a.length; i++) if (ua[i] !== ub[i]) return i;
  return -1;
}

function expectBitEqual(got: Float32Array, want: Float32Array, what: string): void {
  const i = firstBitDifference(got, want);
  if (i >= 0) throw new Error(`${what}: element ${i} (row ${Math.floor(i / d)}, column ${i % d}) is ${got[i]}; Faiss has ${want[i]}`);
}

function expectBytesEqual(got: Uint8Array, want: Uint8Array, what: string, codeSize: number): void {
  expect(got.length, `${what}: length`).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    if (got[i] !== want[i]) throw new Error(`${what}: byte ${i} (row ${Math.floor(i / codeSize)}, byte ${i % codeSize}) is ${got[i]}; Faiss has ${want[i]}`);
  }
}

function trained(kind: SqKind): ScalarQuantizer {
  const sq = new ScalarQuantizer(d, kind);
  sq.train(xt, nt);
  return sq;
}

describe('ScalarQuantizer equals Faiss 1.7.3 bit for bit', () => {
  it('the fixture is what derive-sq.py says it is', () => {
    expect(fixture.faiss).toBe('1.7.3');
    expect(d).toBe(13);
    expect(nt).toBe(200);
    expect(Object.keys(fixture.kinds).sort()).toEqual([...SQ_KINDS].sort());
  });

  for (const kind of SQ_KINDS) {
    const ref = fixture.kinds[kind];
    const x = ref.encoded === 'xt+xs' ? xtxs : xh;
    const n = x.length / d;

    it(`${kind} (${ref.qtype}): code size ${ref.code_size} bytes for d = ${d}`, () => {
      const sq = new ScalarQuantizer(d, kind);
      expect(sq.codeSize).toBe(ref.code_size);
      expect(sq.minWords).toBe(Math.ceil(ref.code_size / 4));
      expect(sq.isTrained).toBe(kind === 'SQfp16');
    });

    it(`${kind}: trained tables equal Faiss's sq.trained (vmin, then vdiff)`, () => {
      expectBitEqual(trained(kind).tables(), f4(ref.trained), `${kind} tables`);
    });

    it(`${kind}: codes of ${n} rows equal sq.compute_codes (${ref.encoded})`, () => {
      expectBytesEqual(trained(kind).encode(x, n), u1(ref.codes), `${kind} codes`, ref.code_size);
    });

    it(`${kind}: decoding Faiss's codes equals sq.decode`, () => {
      expectBitEqual(trained(kind).decode(u1(ref.codes), n), f4(ref.decoded), `${kind} decode`);
    });

    it(`${kind}: fromTables(Faiss's trained) encodes and decodes as the trained one`, () => {
      const sq = ScalarQuantizer.fromTables(d, kind, f4(ref.trained));
      expect(sq.isTrained).toBe(true);
      expectBytesEqual(sq.encode(x, n), u1(ref.codes), `${kind} codes from tables`, ref.code_size);
      expectBitEqual(sq.decode(u1(ref.codes), n), f4(ref.decoded), `${kind} decode from tables`);
      expectBitEqual(sq.tables(), f4(ref.trained), `${kind} tables round trip`);
    });

    if (ref.all_codes) {
      it(`${kind}: every code value in every dimension decodes as Faiss's`, () => {
        const codes = u1(ref.all_codes);
        expectBitEqual(trained(kind).decode(codes, codes.length / ref.code_size), f4(ref.all_decoded), `${kind} all codes`);
      });
    }
  }

  it('constant dimensions: vdiff 0, every value encodes to 0 and decodes to vmin (-0 to +0)', () => {
    // Columns 5 (3.25) and 6 (-0) of the fixture are constant; xs gives them other values.
    const ref = fixture.kinds.SQ8;
    const t = f4(ref.trained);
    expect([t[5], t[d + 5], t[d + 6]]).toEqual([3.25, 0, 0]);
    expect(Object.is(t[6], -0)).toBe(true);
    const sq = trained('SQ8');
    const n = xtxs.length / d;
    const codes = sq.encode(xtxs, n);
    const dec = sq.decode(codes, n);
    const others = Array.from({ length: n }, (_, i) => xtxs[i * d + 5]).filter((v) => v !== 3.25);
    expect(others.length).toBeGreaterThan(0);
    for (let i = 0; i < n; i++) {
      expect([codes[i * d + 5], codes[i * d + 6]]).toEqual([0, 0]);
      expect(dec[i * d + 5]).toBe(3.25);
      expect(Object.is(dec[i * d + 6], 0)).toBe(true);
    }
  });

  it('values outside the trained range clamp to the end codes', () => {
    for (const kind of ['SQ8', 'SQ4'] as const) {
      const sq = new ScalarQuantizer(2, kind);
      sq.train(new Float32Array([0, -1, 1, 1]), 2);
      const codes = sq.encode(new Float32Array([-5, 3.4e38, 7, -3.4e38, 1, -1]), 3);
      const top = kind === 'SQ8' ? 255 : 15;
      expect([0, 1, 2].flatMap((r) => [0, 1].map((j) => sq.codeValue(codes, r, j)))).toEqual([0, top, top, 0, top, 0]);
    }
  });
});

describe('fp16 (Faiss software encode_fp16)', () => {
  it('every finite half survives halfToFloat then floatToHalf', () => {
    for (let h = 0; h < 0x10000; h++) {
      if (((h >> 10) & 0x1f) === 0x1f) continue;
      const back = floatToHalf(halfToFloat(h));
      if (back !== h) throw new Error(`half 0x${h.toString(16)} (${halfToFloat(h)}) comes back as 0x${back.toString(16)}`);
    }
  });

  it('ties round away from zero; 65520 and above overflow to Infinity', () => {
    expect(floatToHalf(1 + 2 ** -11)).toBe(0x3c01); // IEEE round-to-even would give 0x3c00
    expect(floatToHalf(-(1 + 2 ** -11))).toBe(0xbc01);
    expect(floatToHalf(2 ** -25)).toBe(0x0001); // half of the smallest subnormal
    expect(floatToHalf(2 ** -26)).toBe(0x0000);
    expect(halfToFloat(floatToHalf(HALF_MAX))).toBe(HALF_MAX);
    expect(floatToHalf(Math.fround(65519.99))).toBe(0x7bff);
    expect(floatToHalf(65520)).toBe(0x7c00);
    expect(floatToHalf(-1e30)).toBe(0xfc00);
    expect(floatToHalf(-0)).toBe(0x8000);
    expect(floatToHalf(-1e-40)).toBe(0x8000);
  });
});

describe('ScalarQuantizer device layout (packed)', () => {
  it('puts SQ8 bytes, SQ4 nibbles and fp16 halves where the kernels read them (hand cases)', () => {
    const sq8 = ScalarQuantizer.fromTables(5, 'SQ8', new Float32Array([0, 0, 0, 0, 0, 255, 255, 255, 255, 255]));
    expect(Array.from(sq8.packed(new Uint8Array([1, 2, 3, 4, 0xf5]), 1))).toEqual([0x04030201, 0xf5]);
    const sq4 = ScalarQuantizer.fromTables(9, 'SQ4', new Float32Array(18).fill(1));
    // Faiss's bytes for dimensions 0..8 = codes 1..9 (dimension 2i in the low nibble of byte i).
    const codes4 = sq4.encode(new Float32Array([1, 2, 3, 4, 5, 6, 7, 8, 9].map((c) => 1 + c / 15 + 1e-3)), 1);
    expect(Array.from(codes4)).toEqual([0x21, 0x43, 0x65, 0x87, 0x09]);
    expect(Array.from(sq4.packed(codes4, 1, 3))).toEqual([0x87654321, 0x9, 0]);
    const sqh = new ScalarQuantizer(3, 'SQfp16');
    const codesh = sqh.encode(new Float32Array([1, -2, 0.5]), 1);
    expect(Array.from(sqh.packed(codesh, 1))).toEqual([0xc0003c00, 0x3800]);
  });

  for (const kind of SQ_KINDS) {
    it(`${kind}: packedValue reads every code as codeValue does, padding words zero`, () => {
      const ref = fixture.kinds[kind];
      const codes = u1(ref.codes);
      const n = codes.length / ref.code_size;
      const sq = trained(kind);
      for (const words of [sq.minWords, sq.minWords + 3]) {
        const p = sq.packed(codes, n, words);
        expect(p.length).toBe(n * words);
        // The packed bytes, row by row, are Faiss's bytes followed by zeros.
        const bytes = new Uint8Array(p.buffer);
        for (let i = 0; i < n; i++) {
          for (let b = 0; b < 4 * words; b++) {
            const want = b < ref.code_size ? codes[i * ref.code_size + b] : 0;
            if (bytes[i * 4 * words + b] !== want) throw new Error(`${kind} words ${words}: row ${i} byte ${b} is ${bytes[i * 4 * words + b]}; want ${want}`);
          }
          for (let j = 0; j < d; j++) {
            const a = sq.packedValue(p, words, i, j);
            const b = sq.codeValue(codes, i, j);
            if (!Object.is(a, b)) throw new Error(`${kind} words ${words}: row ${i} dim ${j}: packed ${a}, code ${b}`);
          }
        }
      }
    });
  }
});

describe('ScalarQuantizer.queryTransform', () => {
  for (const kind of SQ_KINDS) {
    it(`${kind}: qbias + xq . codeValue(c) equals q . decode(c) for every query and code`, () => {
      const ref = fixture.kinds[kind];
      const codes = u1(ref.codes);
      const n = codes.length / ref.code_size;
      const sq = trained(kind);
      const dec = sq.decode(codes, n);
      const nq = 7;
      const q = randomFloats(nq * d, 1507);
      const { xq, qbias } = sq.queryTransform(q, nq);
      const p = sq.packed(codes, n);
      const t = kind === 'SQfp16' ? null : sq.tables();
      let worst = 0;
      for (let r = 0; r < nq; r++) {
        for (let i = 0; i < n; i++) {
          let got = qbias[r];
          let want = 0;
          // Each term's size: the float32 roundings in decode and in xq / qbias are relative to it.
          let scale = 0;
          for (let j = 0; j < d; j++) {
            got += xq[r * d + j] * sq.packedValue(p, sq.minWords, i, j);
            want += q[r * d + j] * dec[i * d + j];
            scale += Math.abs(q[r * d + j]) * (t ? Math.abs(t[j]) + 2 * t[d + j] : Math.abs(dec[i * d + j]));
          }
          const err = Math.abs(got - want) / (scale || 1);
          worst = Math.max(worst, err);
          if (err > 1e-6) throw new Error(`${kind}: query ${r} code ${i}: ${got} vs q . decode = ${want} (relative ${err.toExponential(2)})`);
        }
      }
      if (kind === 'SQfp16') expect(worst).toBe(0);
    });
  }
});

describe('ScalarQuantizer errors', () => {
  const bad = (f: () => unknown, re: RegExp) => {
    expect(f).toThrow(InvalidArgumentError);
    expect(f).toThrow(re);
  };

  it('refuses a bad dimension or kind', () => {
    bad(() => new ScalarQuantizer(0, 'SQ8'), /dim must be an integer in \[1, 65536\]; got 0/);
    bad(() => new ScalarQuantizer(2.5, 'SQ8'), /got 2\.5/);
    bad(() => new ScalarQuantizer(4, 'SQ6' as SqKind), /kind must be one of SQ8, SQ4, SQfp16; got SQ6/);
  });

  it('refuses to encode, decode, transform or save before training', () => {
    const sq = new ScalarQuantizer(3, 'SQ4');
    bad(() => sq.encode(new Float32Array(3), 1), /SQ4 encode: the quantizer is not trained/);
    bad(() => sq.decode(new Uint8Array(2), 1), /SQ4 decode: the quantizer is not trained/);
    bad(() => sq.queryTransform(new Float32Array(3), 1), /SQ4 queryTransform: the quantizer is not trained/);
    bad(() => sq.tables(), /SQ4 tables: the quantizer is not trained/);
  });

  it('names wrong lengths, counts and types', () => {
    const sq = new ScalarQuantizer(3, 'SQ8');
    bad(() => sq.train(new Float32Array(5), 2), /SQ8 train: x has length 5; expected n \* d = 2 \* 3 = 6 values/);
    bad(() => sq.train(new Float32Array(0), 0), /SQ8 train: n must be an integer >= 1; got 0/);
    bad(() => sq.train([1, 2, 3] as unknown as Float32Array, 1), /x must be a Float32Array; got Array/);
    sq.train(new Float32Array([0, 1, 2, 3, 4, 5]), 2);
    bad(() => sq.encode(new Float32Array(6), 1.5), /SQ8 encode: n must be an integer >= 0; got 1\.5/);
    bad(() => sq.decode(new Uint8Array(5), 2), /SQ8 decode: codes has length 5; expected n \* codeSize = 2 \* 3 = 6 bytes/);
    bad(() => sq.decode(new Float32Array(6) as unknown as Uint8Array, 2), /codes must be a Uint8Array; got Float32Array/);
    bad(() => sq.packed(new Uint8Array(6), 2, 0), /SQ8 packed: words must be an integer in \[1, \d+\].*got 0/);
    bad(() => sq.queryTransform(new Float32Array(4), 1), /SQ8 queryTransform: q has length 4; expected n \* d = 1 \* 3 = 3 values/);
    expect(sq.encode(new Float32Array(0), 0).length).toBe(0);
  });

  it('refuses non-finite values, naming the row and column', () => {
    const sq = new ScalarQuantizer(3, 'SQ8');
    bad(() => sq.train(new Float32Array([0, 1, 2, 3, NaN, 5]), 2), /SQ8 train: x row 1 has a non-finite value \(NaN\) at column 1/);
    sq.train(new Float32Array([0, 1, 2, 3, 4, 5]), 2);
    bad(() => sq.encode(new Float32Array([0, 0, Infinity]), 1), /SQ8 encode: x row 0 has a non-finite value \(Infinity\) at column 2/);
    bad(() => sq.queryTransform(new Float32Array([-Infinity, 0, 0]), 1), /SQ8 queryTransform: q row 0 has a non-finite value \(-Infinity\) at column 0/);
  });

  it('refuses what would overflow: a column wider than float32, fp16 past 65520, a query term', () => {
    bad(() => new ScalarQuantizer(2, 'SQ4').train(new Float32Array([0, -3e38, 0, 3e38]), 2), /SQ4 train: column 1 spans \[-3\.\d+e\+38, 3\.\d+e\+38\], a width that overflows float32/);
    const h = new ScalarQuantizer(2, 'SQfp16');
    bad(() => h.encode(new Float32Array([1, 2, -65520, 0]), 2), /SQfp16 encode: x row 1 has -65520 at column 0; half floats hold magnitudes below 65520/);
    expect(Array.from(h.decode(h.encode(new Float32Array([65519, -65504]), 1), 1))).toEqual([65504, -65504]);
    const sq = new ScalarQuantizer(1, 'SQ8');
    sq.train(new Float32Array([-1e38, 1e38]), 2);
    bad(() => sq.queryTransform(new Float32Array([1e30]), 1), /SQ8 queryTransform: for q row 0 and these tables, q_j vdiff_j \/ 255 at column 0 \(q_j = 1\.000e\+30, vdiff_j = 2\.000e\+38\) overflows float32/);
  });

  it('refuses bad tables, naming the entry', () => {
    bad(() => ScalarQuantizer.fromTables(2, 'SQ8', new Float32Array(3)), /SQ8 tables must be a Float32Array of 4 values \(vmin\[d\] then vdiff\[d\]\); got length 3/);
    bad(() => ScalarQuantizer.fromTables(2, 'SQ8', new Float32Array([0, NaN, 1, 1])), /SQ8 tables: vmin\[1\] is NaN; expected a finite value/);
    bad(() => ScalarQuantizer.fromTables(2, 'SQ4', new Float32Array([0, 0, 1, -1])), /SQ4 tables: vdiff\[1\] is -1; expected a finite value >= 0/);
    bad(() => ScalarQuantizer.fromTables(2, 'SQfp16', new Float32Array(4)), /SQfp16 tables must be a Float32Array of 0 values/);
    expect(ScalarQuantizer.fromTables(2, 'SQfp16', new Float32Array(0)).tables().length).toBe(0);
  });
});
