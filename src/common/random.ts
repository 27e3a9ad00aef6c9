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

/**
 * `n` points in `clusters` blobs: centres uniform in [-1, 1)^d, each point a centre plus noise of
 * about `spread` per coordinate (a sum of three uniforms: a cheap bell shape).
 */
export function clusteredFloats(n: number, d: number, clusters: number, seed: number, spread = 0.05): Float32Array {
  const r = rng(seed);
  const centers = Float32Array.from({ length: clusters * d }, () => 2 * r() - 1);
  const out = new Float32Array(n * d);
  for (let i = 0; i < n; i++) {
    const c = Math.floor(r() * clusters);
    for (let j = 0; j < d; j++) out[i * d + j] = centers[c * d + j] + (r() + r() + r() - 1.5) * spread;
  }
  return out;
}

/**
 * A random orthogonal n x n matrix (row-major, float64), from `seed`: Gaussian entries (Box-Muller
 * on `rng`) orthonormalised row by row by modified Gram-Schmidt, as Faiss's RandomRotationMatrix
 * orthonormalises a Gaussian matrix. LSHr's rotation and PCAR's both come from here.
 */
export function randomOrthogonal(n: number, seed: number): Float64Array {
  const r = rng(seed);
  const gauss = (): number => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
  const m = Float64Array.from({ length: n * n }, gauss);
  for (let i = 0; i < n; i++) {
    const a = i * n;
    for (let pass = 0; pass < 2; pass++) {
      // Twice ("twice is enough"): one pass leaves rounding errors that a second removes.
      for (let k = 0; k < i; k++) {
        const b = k * n;
        let dot = 0;
        for (let j = 0; j < n; j++) dot += m[a + j] * m[b + j];
        for (let j = 0; j < n; j++) m[a + j] -= dot * m[b + j];
      }
    }
    let norm = 0;
    for (let j = 0; j < n; j++) norm += m[a + j] * m[a + j];
    norm = Math.sqrt(norm);
    for (let j = 0; j < n; j++) m[a + j] /= norm;
  }
  return m;
}
