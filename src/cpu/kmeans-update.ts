/**
 * CPU twins of shaders/kmeans-partial.wgsl and shaders/kmeans-reduce.wgsl: the k-means centroid
 * update as per-block partial sums (in point order) reduced in block order. Sums are kept in
 * Float32Arrays, so every addition rounds to float32 exactly as on the GPU and, given the same
 * labels, the sums are the same bit for bit.
 */

/**
 * Points per block and number of blocks for n points: a function of the problem only (never of
 * how the points are split into chunks), so every device and every split sums the same blocks.
 */
export function kmeansBlocks(n: number, nc: number, dpad: number, maxBytes = 64 << 20): { block: number; nblocks: number } {
  // At most 64 blocks, partial sums within `maxBytes`, and blocks of at least 1024 points.
  const byMemory = Math.max(1, Math.floor(maxBytes / (nc * dpad * 4)));
  const nblocks = Math.max(1, Math.min(64, byMemory, Math.ceil(n / 1024)));
  const block = Math.ceil(n / nblocks);
  return { block, nblocks: Math.max(1, Math.ceil(n / block)) };
}

/** The blocks a chunk of points [p0, p0 + n) touches: b0 .. b0 + nb - 1. */
export function kmeansChunkBlocks(p0: number, n: number, block: number): { b0: number; nb: number } {
  const b0 = Math.floor(p0 / block);
  return { b0, nb: Math.floor((p0 + n - 1) / block) - b0 + 1 };
}

/**
 * One chunk of points: `x` (`n * d`, global points p0 .. p0 + n - 1), `xnorm[i]`, `score[i]` and
 * `label[i]` (point p0 + i's minimised l2 score against its nearest centroid, and that centroid).
 * Adds to `sums` (`nblocks * nc * d`), `counts` (`nblocks * nc`) and `obj` (`nblocks`) of the
 * global blocks the chunk touches (blocks of `block` points), in point order; zero them before an
 * iteration's first chunk.
 */
export function kmeansPartial(
  x: Float32Array,
  xnorm: Float32Array,
  score: Float32Array,
  label: Uint32Array,
  n: number,
  p0: number,
  d: number,
  nc: number,
  block: number,
  sums: Float32Array,
  counts: Uint32Array,
  obj: Float32Array,
): void {
  if (n === 0) return;
  const { b0, nb } = kmeansChunkBlocks(p0, n, block);
  const o = new Float32Array(1);
  for (let b = b0; b < b0 + nb; b++) {
    o[0] = obj[b];
    const end = Math.min(p0 + n, (b + 1) * block);
    for (let i = Math.max(p0, b * block); i < end; i++) {
      const li = i - p0;
      const c = label[li];
      const s = (b * nc + c) * d;
      for (let j = 0; j < d; j++) sums[s + j] += x[li * d + j];
      counts[b * nc + c]++;
      o[0] += Math.max(0, Math.fround(score[li] + xnorm[li]));
    }
    obj[b] = o[0];
  }
}

/**
 * Writes `centroids[c * d + j]` = the mean of centroid c's points (sums reduced in block order),
 * leaving empty centroids as they are, and `outCounts[c]` = its number of points.
 */
export function kmeansReduce(
  sums: Float32Array,
  counts: Uint32Array,
  nc: number,
  d: number,
  nblocks: number,
  centroids: Float32Array,
  outCounts: Uint32Array,
): void {
  const total = new Float32Array(d);
  for (let c = 0; c < nc; c++) {
    total.fill(0);
    let count = 0;
    for (let b = 0; b < nblocks; b++) {
      for (let j = 0; j < d; j++) total[j] += sums[(b * nc + c) * d + j];
      count += counts[b * nc + c];
    }
    if (count > 0) for (let j = 0; j < d; j++) centroids[c * d + j] = total[j] / count;
    outCounts[c] = count;
  }
}
