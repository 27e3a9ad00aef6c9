/** Generated clustered data: well-separated Gaussian-ish blobs, seeded. */
import { rng } from '../../src/random.js';

export function clusteredData(n: number, d: number, clusters: number, seed: number, spread = 0.05): Float32Array {
  const r = rng(seed);
  const centers = Float32Array.from({ length: clusters * d }, () => 2 * r() - 1);
  const out = new Float32Array(n * d);
  for (let i = 0; i < n; i++) {
    const c = Math.floor(r() * clusters);
    for (let j = 0; j < d; j++) {
      // Sum of three uniforms: a cheap bell shape.
      const noise = (r() + r() + r() - 1.5) * spread;
      out[i * d + j] = centers[c * d + j] + noise;
    }
  }
  return out;
}
