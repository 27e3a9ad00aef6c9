enable subgroups;

// gemm-scores.wgsl: the score tile of a block of queries against a block of base vectors.
//   scores[r * ldc + c] = score(q row q0 + r, x row col0 + c)   for r < rows, c < cols
//   METRIC 0 (l2): ||x||^2 - 2 q.x  (||q||^2 is added to the final k only, on the host)
//   METRIC 1 (ip): -q.x             (everything is minimised)
// CPU twin: src/cpu/gemm-scores.ts. Used where the device has subgroups of at least 8 lanes;
// elsewhere gemm-scores-portable.wgsl computes the same with plain loads.
// Strategy: register blocking without workgroup memory or barriers. Each invocation computes
// QB = 8 queries x 4 base vectors with vec4 loads. The 8 query rows are shared by the whole
// workgroup: lane i of each subgroup loads row i's vec4 and subgroupBroadcast hands it to every
// lane, instead of every lane loading all 8 (on lavapipe this alone took the kernel from about
// 8 to about 18 GFLOP/s). Barriers are expensive on lavapipe, so this beats a shared-memory tiled
// GEMM there; on discrete GPUs a tiled variant would be the one to add.
// Dispatch: (ceil(cols / (4 * WG)), ceil(rows / QB)). Every invocation runs the loop (out-of-range
// rows and columns read a clamped in-range row), so the broadcasts happen in uniform control flow;
// results outside the tile are not written.

override WG: u32 = 64u;
override METRIC: u32 = 0u;
const QB: u32 = 8u;

struct Params {
  rows: u32,   // queries in this tile
  cols: u32,   // base vectors in this tile
  dpad4: u32,  // row length in vec4s (queries and base alike)
  q0: u32,     // first query row
  col0: u32,   // first base row (within the bound base buffer)
  ldc: u32,    // row stride of scores
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xq: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> xb: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> xnorm: array<f32>;
@group(0) @binding(4) var<storage, read_write> scores: array<f32>;

@compute @workgroup_size(WG)
fn main(
  @builtin(global_invocation_id) gid: vec3<u32>,
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(subgroup_invocation_id) lane: u32,
) {
  let r = wid.y * QB;
  let c = gid.x * 4u;
  let rl = p.rows - 1u;
  let cl = p.cols - 1u;
  // Clamped so that every invocation may run the loop; results outside the tile are not written.
  let b0 = (p.col0 + min(c, cl)) * p.dpad4;
  let b1 = (p.col0 + min(c + 1u, cl)) * p.dpad4;
  let b2 = (p.col0 + min(c + 2u, cl)) * p.dpad4;
  let b3 = (p.col0 + min(c + 3u, cl)) * p.dpad4;
  // Lane i (mod 8) of each subgroup loads query row r + i.
  let my_q = (p.q0 + min(r + (lane % QB), rl)) * p.dpad4;
  var s0 = vec4<f32>(0.0);
  var s1 = vec4<f32>(0.0);
  var s2 = vec4<f32>(0.0);
  var s3 = vec4<f32>(0.0);
  var s4 = vec4<f32>(0.0);
  var s5 = vec4<f32>(0.0);
  var s6 = vec4<f32>(0.0);
  var s7 = vec4<f32>(0.0);
  for (var j = 0u; j < p.dpad4; j++) {
    let x0 = xb[b0 + j];
    let x1 = xb[b1 + j];
    let x2 = xb[b2 + j];
    let x3 = xb[b3 + j];
    let qv = xq[my_q + j];
    let q0 = subgroupBroadcast(qv, 0u);
    s0 += vec4<f32>(dot(q0, x0), dot(q0, x1), dot(q0, x2), dot(q0, x3));
    let q1 = subgroupBroadcast(qv, 1u);
    s1 += vec4<f32>(dot(q1, x0), dot(q1, x1), dot(q1, x2), dot(q1, x3));
    let q2 = subgroupBroadcast(qv, 2u);
    s2 += vec4<f32>(dot(q2, x0), dot(q2, x1), dot(q2, x2), dot(q2, x3));
    let q3 = subgroupBroadcast(qv, 3u);
    s3 += vec4<f32>(dot(q3, x0), dot(q3, x1), dot(q3, x2), dot(q3, x3));
    let q4 = subgroupBroadcast(qv, 4u);
    s4 += vec4<f32>(dot(q4, x0), dot(q4, x1), dot(q4, x2), dot(q4, x3));
    let q5 = subgroupBroadcast(qv, 5u);
    s5 += vec4<f32>(dot(q5, x0), dot(q5, x1), dot(q5, x2), dot(q5, x3));
    let q6 = subgroupBroadcast(qv, 6u);
    s6 += vec4<f32>(dot(q6, x0), dot(q6, x1), dot(q6, x2), dot(q6, x3));
    let q7 = subgroupBroadcast(qv, 7u);
    s7 += vec4<f32>(dot(q7, x0), dot(q7, x1), dot(q7, x2), dot(q7, x3));
  }
  let acc = array<vec4<f32>, QB>(s0, s1, s2, s3, s4, s5, s6, s7);
  if (c >= p.cols) {
    return;
  }
  var xn = vec4<f32>(0.0);
  if (METRIC == 0u) {
    xn = vec4<f32>(xnorm[b0 / p.dpad4], xnorm[b1 / p.dpad4], xnorm[b2 / p.dpad4], xnorm[b3 / p.dpad4]);
  }
  let nc = min(4u, p.cols - c);
  let nr = min(QB, p.rows - r);
  for (var i = 0u; i < nr; i++) {
    var v = -acc[i];
    if (METRIC == 0u) {
      v = xn - 2.0 * acc[i];
    }
    let o = (r + i) * p.ldc + c;
    for (var jj = 0u; jj < nc; jj++) {
      scores[o + jj] = v[jj];
    }
  }
}
