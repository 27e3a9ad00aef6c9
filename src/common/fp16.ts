/**
 * IEEE half-precision (binary16) conversions on the host: the exact half -> number decode, and the
 * float32 -> half encode as Faiss 1.7.3 does it where it is built without F16C (faiss/utils/
 * fp16-inl.h, Fabian Giesen's float_to_half_fast3: the mantissa truncated to 11 bits, then half an
 * ulp added, so ties round away from zero, not to even as F16C's `vcvtps2ph` and WGSL's
 * `pack2x16float` do). The SQfp16 codec encodes with it so that its codes equal those of the
 * reference Faiss build byte for byte (test/data/derive-sq.py).
 */

// One float32 reinterpreted as its bits and back (the C code's `intbits` / `floatbits`).
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** The bits of float32 `f` (f rounded to float32 first). */
export function intBits(f: number): number {
  f32[0] = f;
  return u32[0];
}

function floatBits(bits: number): number {
  u32[0] = bits;
  return f32[0];
}

/** The largest finite half, 65504; values of magnitude 65520 and more encode as +-Infinity. */
export const HALF_MAX = 65504;

/** The smallest magnitude that `floatToHalf` turns into an infinity (the midpoint above HALF_MAX). */
export const HALF_OVERFLOW = 65520;

/** 2^-112: scales float32's exponent bias (127) down to half's (15). */
const MAGIC = floatBits(15 << 23);
/** Bits of the largest scaled value kept finite: once 0x1000 is added it becomes 0x7c00 << 13 (infinity). */
const CLAMP = floatBits((31 << 23) - 0x1000);

/**
 * The half (as a 16-bit integer) nearest to float32 `x`, ties away from zero (Faiss's software
 * `encode_fp16`): +-Infinity at and above HALF_OVERFLOW in magnitude, NaN -> 0x7e00 (quiet),
 * float32 values too small for a half subnormal -> +-0. Half subnormals come out of a float32
 * multiply by 2^-112 (rounded to nearest even) followed by the same ties-away step, as in the C code.
 */
export function floatToHalf(x: number): number {
  const bits = intBits(x);
  const sign = bits & 0x80000000;
  const abs = (bits ^ sign) >>> 0;
  const infinity = 0x7f800000;
  if (abs >= infinity) return (abs > infinity ? 0x7e00 : 0x7c00) | (sign >>> 16);
  // Drop the 12 mantissa bits below the rounding bit, rebias the exponent with a float32 multiply,
  // clamp what would overflow, then add half an ulp of the half (bit 12) and shift the result down.
  let scaled = Math.fround(floatBits(abs & 0xfffff000) * MAGIC);
  if (CLAMP < scaled) scaled = CLAMP;
  return (((intBits(scaled) + 0x1000) >>> 13) | (sign >>> 16)) & 0xffff;
}

/** The value of half `h` (a 16-bit integer), exactly: subnormals, +-0, +-Infinity and NaN included. */
export function halfToFloat(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * 2 ** -14 * (f / 1024);
  if (e === 31) return f ? NaN : s * Infinity;
  return s * 2 ** (e - 15) * (1 + f / 1024);
}
