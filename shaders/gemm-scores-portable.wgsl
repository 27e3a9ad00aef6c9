// gemm-scores-portable.wgsl: the score tile of a block of queries against a block of base vectors.
//   scores[r * ldc + c] = score(q row q0 + r, x row col0 + c)   for r < rows, c < cols
//   METRIC 0 (l2): ||x||^2 - 2 q.x  (||q||^2 is added to the final k only, on the host)
//   METRIC 1 (ip): -q.x             (everything is minimised)
// CPU twin: src/cpu/gemm-scores.ts. The variant for devices without subgroups (see gemm-scores.wgsl).
// Strategy: register blocking without workgroup memory or barriers. Each invocation computes
// QB queries x 4 base vectors with vec4 loads. The QB query rows depend only on the workgroup, so
// every invocation of a workgroup loads the same query values: on a SIMD CPU driver (lavapipe) those
// are uniform loads, and only the base vectors are gathered per lane (8 multiply-adds per gathered
// float). Barriers are expensive on lavapipe, so this beats a shared-memory tiled GEMM there; on
// discrete GPUs a tiled variant would be the one to add.
// Dispatch: (ceil(cols / (4 * WG)), ceil(rows / QB)). Out-of-range rows and columns read a clamped
// in-range row and are not written.

override WG: u32 = 64u;
// Queries per workgroup; the body below is unrolled for QB = 8 (a0..a7, s0..s7).
const QB: u32 = 8u;

//!include gemm-scores-io.wgsl

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let r = wid.y * QB;
  let c = gid.x * 4u;
  let rl = p.rows - 1u;
  let cl = p.cols - 1u;
  // Clamped so that every invocation may run the loop; results outside the tile are not written.
  let b0 = (p.col0 + min(c, cl)) * p.dpad4;
  let b1 = (p.col0 + min(c + 1u, cl)) * p.dpad4;
  let b2 = (p.col0 + min(c + 2u, cl)) * p.dpad4;
  let b3 = (p.col0 + min(c + 3u, cl)) * p.dpad4;
  let a0 = (p.q0 + min(r + 0u, rl)) * p.dpad4;
  let a1 = (p.q0 + min(r + 1u, rl)) * p.dpad4;
  let a2 = (p.q0 + min(r + 2u, rl)) * p.dpad4;
  let a3 = (p.q0 + min(r + 3u, rl)) * p.dpad4;
  let a4 = (p.q0 + min(r + 4u, rl)) * p.dpad4;
  let a5 = (p.q0 + min(r + 5u, rl)) * p.dpad4;
  let a6 = (p.q0 + min(r + 6u, rl)) * p.dpad4;
  let a7 = (p.q0 + min(r + 7u, rl)) * p.dpad4;
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
    let q0 = xq[a0 + j];
    s0 += vec4<f32>(dot(q0, x0), dot(q0, x1), dot(q0, x2), dot(q0, x3));
    let q1 = xq[a1 + j];
    s1 += vec4<f32>(dot(q1, x0), dot(q1, x1), dot(q1, x2), dot(q1, x3));
    let q2 = xq[a2 + j];
    s2 += vec4<f32>(dot(q2, x0), dot(q2, x1), dot(q2, x2), dot(q2, x3));
    let q3 = xq[a3 + j];
    s3 += vec4<f32>(dot(q3, x0), dot(q3, x1), dot(q3, x2), dot(q3, x3));
    let q4 = xq[a4 + j];
    s4 += vec4<f32>(dot(q4, x0), dot(q4, x1), dot(q4, x2), dot(q4, x3));
    let q5 = xq[a5 + j];
    s5 += vec4<f32>(dot(q5, x0), dot(q5, x1), dot(q5, x2), dot(q5, x3));
    let q6 = xq[a6 + j];
    s6 += vec4<f32>(dot(q6, x0), dot(q6, x1), dot(q6, x2), dot(q6, x3));
    let q7 = xq[a7 + j];
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
