/** Seeded data generation, shared by tests, the benchmark and the demo (deterministic across runs). */

/** mulberry32: a small, fast 32-bit PRNG; returns floats in [0, 1). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `len` uniform floats in [-1, 1). */
export function randomFloats(len: number, seed: number): Float32Array {
  const r = rng(seed);
  const out = new Float32Array(len);
  for (let i = 0; i < len; i++) out[i] = 2 * r() - 1;
  return out;
}

/** `len` integers in [0, max], as floats: every sum of products stays exact in float32. */
export function randomSmallInts(len: number, seed: number, max = 7): Float32Array {
  const r = rng(seed);
  const out = new Float32Array(len);
  for (let i = 0; i < len; i++) out[i] = Math.floor(r() * (max + 1));
  return out;
}
