// kmeans-partial.wgsl: first half of the k-means centroid update (WGSL has no float atomics, so
// sums are built per block of points, in point order, then reduced by kmeans-reduce.wgsl).
// Blocks are global: block b is points [b * block, (b + 1) * block). The points may be split into
// chunks (one dispatch per chunk, in point order); this dispatch holds points [p0, p0 + n) and
// ADDS them to the blocks they fall in, so that a block split between chunks sums its points in
// the same order as unsplit, bit for bit. For such a block b and dimension j:
//   sums[(b * nc + c) * dpad + j] += x[(i - p0) * dpad + j] for the chunk's points i of b labelled c
//   counts[b * nc + c]            += number of those points                (by j == 0)
//   obj[b]                        += max(0, score_i + xnorm_i), in order   (by j == 0)
// where label_i / score_i are point i's nearest centroid and its minimised l2 score (from the
// flat search with k = 1; indexed i - p0, like x and xnorm) and xnorm_i = ||x_i||^2, so obj sums
// to the assignment's objective. sums, counts and obj are zeroed before an iteration's first chunk.
// CPU twin: kmeansPartial in src/cpu/kmeans-update.ts (same order of additions, so the same sums).
// Dispatch: one invocation per (block b0 + bi, dimension), bi < nb, 1-D, folded into (x, y):
//   invocation = gid.x + gid.y * num_workgroups.x * WG; bi = invocation / dpad, j = invocation % dpad.
// Lanes of a workgroup share a block and differ in j, so loads and stores are contiguous.

override WG: u32 = 64u;

struct Params {
  n: u32,       // points in this chunk
  p0: u32,      // global index of the chunk's first point
  dpad: u32,    // row length (floats)
  nc: u32,      // centroids
  block: u32,   // points per block
  b0: u32,      // first block the chunk touches
  nb: u32,      // blocks the chunk touches
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> xnorm: array<f32>;
@group(0) @binding(3) var<storage, read> score: array<f32>;
@group(0) @binding(4) var<storage, read> label: array<u32>;
@group(0) @binding(5) var<storage, read_write> sums: array<f32>;
@group(0) @binding(6) var<storage, read_write> counts: array<u32>;
@group(0) @binding(7) var<storage, read_write> obj: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let inv = gid.x + gid.y * nwg.x * WG;
  if (inv >= p.nb * p.dpad) {
    return;
  }
  let b = p.b0 + inv / p.dpad;
  let j = inv % p.dpad;
  let start = max(p.p0, b * p.block);
  let end = min(p.p0 + p.n, (b + 1u) * p.block);
  var o = 0.0;
  if (j == 0u) {
    o = obj[b];
  }
  for (var i = start; i < end; i++) {
    let li = i - p.p0;
    let c = label[li];
    let s = (b * p.nc + c) * p.dpad + j;
    sums[s] = sums[s] + x[li * p.dpad + j];
    if (j == 0u) {
      counts[b * p.nc + c] = counts[b * p.nc + c] + 1u;
      o = o + max(0.0, score[li] + xnorm[li]);
    }
  }
  if (j == 0u) {
    obj[b] = o;
  }
}
