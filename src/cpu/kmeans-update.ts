/**
 * CPU twins of shaders/kmeans-partial.wgsl and shaders/kmeans-reduce.wgsl: the k-means centroid
 * update as per-block partial sums (in point order) reduced in block order. Sums are kept in
 * Float32Arrays, so every addition rounds to float32 exactly as on the GPU and, given the same
 * labels, the sums are the same bit for bit.
 */

/** Points per block and number of blocks for n points: the same on every backend (so are the sums). */
export function kmeansBlocks(n: number, nc: number, d: number): { block: number; nblocks: number } {
  // At most 64 blocks, at most 64 MiB of partial sums, and blocks of at least 1024 points.
  const byMemory = Math.max(1, Math.floor((64 << 20) / (nc * d * 4)));
  const nblocks = Math.max(1, Math.min(64, byMemory, Math.ceil(n / 1024)));
  return { block: Math.ceil(n / nblocks), nblocks };
}

/**
 * `x`: `n * d`; `xnorm[i] = ||x_i||^2`; `score[i]`, `label[i]`: point i's minimised l2 score
 * against its nearest centroid and that centroid. Writes `sums` (`nblocks * nc * d`, zeroed here),
 * `counts` (`nblocks * nc`) and `obj` (`nblocks`: the objective of each block's points).
 */
export function kmeansPartial(
  x: Float32Array,
  xnorm: Float32Array,
  score: Float32Array,
  label: Uint32Array,
  n: number,
  d: number,
  nc: number,
  block: number,
  nblocks: number,
  sums: Float32Array,
  counts: Uint32Array,
  obj: Float32Array,
): void {
  sums.fill(0);
  counts.fill(0);
  const o = new Float32Array(1);
  for (let b = 0; b < nblocks; b++) {
    o[0] = 0;
    const end = Math.min(n, (b + 1) * block);
    for (let i = b * block; i < end; i++) {
      const c = label[i];
      const s = (b * nc + c) * d;
      for (let j = 0; j < d; j++) sums[s + j] += x[i * d + j];
      counts[b * nc + c]++;
      o[0] += Math.max(0, Math.fround(score[i] + xnorm[i]));
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
