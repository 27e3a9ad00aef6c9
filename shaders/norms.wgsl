// norms.wgsl: squared L2 norm of each row of a matrix.
//   out[out0 + i] = sum_j x[(row0 + i) * dpad + j]^2   for i in [0, n)
// CPU twin: src/cpu/norms.ts. Rows are zero-padded to dpad (a multiple of 4), so vec4 loads cover
// them and the padding adds nothing. Accumulates in four f32 lanes, summed pairwise at the end.
// Dispatch: one invocation per row, 1-D, folded into (x, y) when rows exceed
// maxComputeWorkgroupsPerDimension * WG; invocation index = gid.x + gid.y * num_workgroups.x * WG.

override WG: u32 = 64u;

struct Params {
  n: u32,      // rows to compute
  dpad4: u32,  // row length in vec4s
  row0: u32,   // first row of x to read
  out0: u32,   // first element of out to write
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.n) {
    return;
  }
  let base = (p.row0 + i) * p.dpad4;
  var acc = vec4<f32>(0.0);
  for (var j = 0u; j < p.dpad4; j++) {
    let v = x[base + j];
    acc += v * v;
  }
  out[p.out0 + i] = (acc.x + acc.y) + (acc.z + acc.w);
}
