// kmeans-partial.wgsl: first half of the k-means centroid update (WGSL has no float atomics, so
// sums are built per block of points, in point order, then reduced by kmeans-reduce.wgsl).
// For block b (points [b * block, min(n, (b + 1) * block))) and dimension j:
//   sums[(b * nc + c) * dpad + j] = sum of x[i * dpad + j] over the block's points i with label c
//   counts[b * nc + c]            = number of those points             (written by j == 0)
//   obj[b]                        = sum of max(0, score_i + xnorm_i)    (written by j == 0)
// where label_i / score_i are point i's nearest centroid and its minimised l2 score (from the
// flat search with k = 1) and xnorm_i = ||x_i||^2, so obj is the assignment's objective.
// CPU twin: kmeansPartial in src/cpu/kmeans-update.ts (same order of additions, so the same sums).
// sums and counts must be zero on entry. Points are added in index order: deterministic.
// Dispatch: one invocation per (block, dimension), 1-D, folded into (x, y):
//   invocation = gid.x + gid.y * num_workgroups.x * WG; b = invocation / dpad, j = invocation % dpad.
// Lanes of a workgroup share a block and differ in j, so loads and stores are contiguous.

override WG: u32 = 64u;

struct Params {
  n: u32,       // points
  dpad: u32,    // row length (floats)
  nc: u32,      // centroids
  block: u32,   // points per block
  nblocks: u32,
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
  if (inv >= p.nblocks * p.dpad) {
    return;
  }
  let b = inv / p.dpad;
  let j = inv % p.dpad;
  let start = b * p.block;
  let end = min(p.n, start + p.block);
  var o = 0.0;
  for (var i = start; i < end; i++) {
    let c = label[i];
    let s = (b * p.nc + c) * p.dpad + j;
    sums[s] = sums[s] + x[i * p.dpad + j];
    if (j == 0u) {
      counts[b * p.nc + c] = counts[b * p.nc + c] + 1u;
      o = o + max(0.0, score[i] + xnorm[i]);
    }
  }
  if (j == 0u) {
    obj[b] = o;
  }
}
