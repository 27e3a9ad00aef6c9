// kmeans-reduce.wgsl: second half of the k-means centroid update: sums the per-block partials of
// kmeans-partial.wgsl in block order and writes each centroid as the mean of its points.
//   count_c = sum over b of counts[b * nc + c];  out_counts[c] = count_c   (written by j == 0)
//   centroids[c * dpad + j] = (sum over b of sums[(b * nc + c) * dpad + j]) / count_c, if count_c > 0;
//   an empty centroid keeps its value (the host repairs it).
// CPU twin: kmeansReduce in src/cpu/kmeans-update.ts.
// Dispatch: one invocation per (centroid, dimension), 1-D, folded into (x, y).

override WG: u32 = 64u;

struct Params {
  nc: u32,
  dpad: u32,
  nblocks: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> sums: array<f32>;
@group(0) @binding(2) var<storage, read> counts: array<u32>;
@group(0) @binding(3) var<storage, read_write> centroids: array<f32>;
@group(0) @binding(4) var<storage, read_write> out_counts: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let inv = gid.x + gid.y * nwg.x * WG;
  if (inv >= p.nc * p.dpad) {
    return;
  }
  let c = inv / p.dpad;
  let j = inv % p.dpad;
  var total = 0.0;
  var count = 0u;
  for (var b = 0u; b < p.nblocks; b++) {
    total = total + sums[(b * p.nc + c) * p.dpad + j];
    count = count + counts[b * p.nc + c];
  }
  if (count > 0u) {
    centroids[c * p.dpad + j] = total / f32(count);
  }
  if (j == 0u) {
    out_counts[c] = count;
  }
}
