// pq-tables.wgsl: the product quantiser's lookup tables (ADC) of a block of queries.
//   For r < rows, m < M, j < ksub, with x_t = xq[(q0 + r) * dpad + m * dsub + t] and
//   c_t = codebook[(m * ksub + j) * dsub + t]:
//     luts[(r * M + m) * ksub + j] = l2 (METRIC 0): sum_{t < dsub} (x_t - c_t)^2
//                                    ip (METRIC 1): -sum_{t < dsub} x_t * c_t
//   The tile's row r is written at luts row r, whatever q0 is.
// CPU twin: src/cpu/pq-tables.ts (float32 steps, t ascending: equal unless the device fuses a
// multiply and an add).
// Order: each entry on its own, its sum over t ascending.
// Dispatch: one invocation per entry, 1-D in the entry's own index (r * M + m) * ksub + j, folded
// into (x, y): invocation = gid.x + gid.y * num_workgroups.x * WG.

override WG: u32 = 64u;
override METRIC: u32 = 0u;

struct Params {
  rows: u32,
  M: u32,
  ksub: u32,
  dsub: u32,
  dpad: u32,
  q0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xq: array<f32>;
@group(0) @binding(2) var<storage, read> codebook: array<f32>;
@group(0) @binding(3) var<storage, read_write> luts: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let inv = gid.x + gid.y * nwg.x * WG;
  if (inv >= p.rows * p.M * p.ksub) {
    return;
  }
  let j = inv % p.ksub;
  let rm = inv / p.ksub;
  let m = rm % p.M;
  let r = rm / p.M;
  let x0 = (p.q0 + r) * p.dpad + m * p.dsub;
  let c0 = (m * p.ksub + j) * p.dsub;
  var s = 0.0;
  if (METRIC == 0u) {
    for (var t = 0u; t < p.dsub; t++) {
      let d = xq[x0 + t] - codebook[c0 + t];
      s = s + d * d;
    }
  } else {
    for (var t = 0u; t < p.dsub; t++) {
      s = s + xq[x0 + t] * codebook[c0 + t];
    }
    s = -s;
  }
  luts[inv] = s;
}
