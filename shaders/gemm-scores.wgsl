enable subgroups;

// gemm-scores.wgsl: the score tile of a block of queries against a block of base vectors.
//   scores[r * ldc + c] = score(q row q0 + r, x row col0 + c)   for r < rows, c < cols
//   METRIC 0 (l2): ||x||^2 - 2 q.x  (||q||^2 is added to the final k only, on the host)
//   METRIC 1 (ip): -q.x             (everything is minimised)
// CPU twin: src/cpu/gemm-scores.ts. Used where the device has subgroups of at least 8 lanes and
// measures fastest (src/gpu/kernel-choice.ts; on lavapipe it does).
// Strategy: register blocking without workgroup memory or barriers. Each invocation computes
// QB = 16 queries x CB = 2 base vectors with vec4 loads, in 32 scalar accumulators (t: base
// vector c, s: c + 1). The 16 query rows are shared by the whole workgroup: lane i of each
// subgroup loads rows r + i and r + 8 + i and subgroupBroadcast hands them to every lane, instead
// of every lane loading all 16.
// Why this shape (read off lavapipe's generated code, GALLIVM_DEBUG=asm): lavapipe turns every
// load of a storage buffer inside a loop into one bounds-checked scalar load per lane and
// component, whatever the index (about half this loop's time), so multiply-adds per loaded float
// count: here 4 * QB * CB / (4 * CB + 4 * QB / 8) = 8, against 6.4 for 8 queries x 4 vectors;
// scalar accumulators rather than vec4 ones; 32 of them is what the registers hold without
// spilling. At 1000 x 16384 x 128, four alternating runs:
// 13.8 - 15.8 GFLOP/s against 11.2 - 15.0 for the 8 x 4 kernel (medians 14.7 and 11.8). Uniform
// loads (every lane loading the same query, in a loop or fully unrolled) were 10x slower on
// lavapipe: it loads them per lane too, which is why the broadcasts.
// Dispatch: (ceil(cols / (CB * WG)), ceil(rows / QB)). Every invocation runs the loop (out-of-range
// rows and columns read a clamped in-range row), so the broadcasts happen in uniform control flow;
// results outside the tile are not written.

override WG: u32 = 64u;
// Queries per workgroup and base vectors per invocation; the body below is unrolled for them.
const QB: u32 = 16u;
const CB: u32 = 2u;

//!include gemm-scores-io.wgsl

// Writes the scores of base vector c (global column col0 + c, partial dot products acc with
// query rows r .. r + 15) that fall inside the tile.
fn store(r: u32, c: u32, acc: array<f32, QB>) {
  if (c >= p.cols) {
    return;
  }
  var xn = 0.0;
  if (METRIC == 0u) {
    xn = xnorm[p.col0 + c];
  }
  let nr = min(QB, p.rows - r);
  for (var i = 0u; i < nr; i++) {
    var v = -acc[i];
    if (METRIC == 0u) {
      v = xn - 2.0 * acc[i];
    }
    scores[(r + i) * p.ldc + c] = v;
  }
}

@compute @workgroup_size(WG)
fn main(
  @builtin(global_invocation_id) gid: vec3<u32>,
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(subgroup_invocation_id) lane: u32,
) {
  let r = wid.y * QB;
  let c = gid.x * CB;
  let rl = p.rows - 1u;
  let cl = p.cols - 1u;
  // Clamped so that every invocation may run the loop; results outside the tile are not written.
  let b0 = (p.col0 + min(c, cl)) * p.dpad4;
  let b1 = (p.col0 + min(c + 1u, cl)) * p.dpad4;
  // Lane i (mod 8) of each subgroup loads query rows r + i and r + 8 + i.
  let qa = (p.q0 + min(r + lane % 8u, rl)) * p.dpad4;
  let qb = (p.q0 + min(r + 8u + lane % 8u, rl)) * p.dpad4;
  var t0 = 0.0; var t1 = 0.0; var t2 = 0.0; var t3 = 0.0; var s0 = 0.0; var s1 = 0.0; var s2 = 0.0; var s3 = 0.0;
  var t4 = 0.0; var t5 = 0.0; var t6 = 0.0; var t7 = 0.0; var s4 = 0.0; var s5 = 0.0; var s6 = 0.0; var s7 = 0.0;
  var t8 = 0.0; var t9 = 0.0; var t10 = 0.0; var t11 = 0.0; var s8 = 0.0; var s9 = 0.0; var s10 = 0.0; var s11 = 0.0;
  var t12 = 0.0; var t13 = 0.0; var t14 = 0.0; var t15 = 0.0; var s12 = 0.0; var s13 = 0.0; var s14 = 0.0; var s15 = 0.0;
  for (var j = 0u; j < p.dpad4; j++) {
    let x0 = xb[b0 + j];
    let x1 = xb[b1 + j];
    let va = xq[qa + j];
    let vb = xq[qb + j];
    let q0 = subgroupBroadcast(va, 0u);
    t0 += dot(q0, x0);
    s0 += dot(q0, x1);
    let q1 = subgroupBroadcast(va, 1u);
    t1 += dot(q1, x0);
    s1 += dot(q1, x1);
    let q2 = subgroupBroadcast(va, 2u);
    t2 += dot(q2, x0);
    s2 += dot(q2, x1);
    let q3 = subgroupBroadcast(va, 3u);
    t3 += dot(q3, x0);
    s3 += dot(q3, x1);
    let q4 = subgroupBroadcast(va, 4u);
    t4 += dot(q4, x0);
    s4 += dot(q4, x1);
    let q5 = subgroupBroadcast(va, 5u);
    t5 += dot(q5, x0);
    s5 += dot(q5, x1);
    let q6 = subgroupBroadcast(va, 6u);
    t6 += dot(q6, x0);
    s6 += dot(q6, x1);
    let q7 = subgroupBroadcast(va, 7u);
    t7 += dot(q7, x0);
    s7 += dot(q7, x1);
    let q8 = subgroupBroadcast(vb, 0u);
    t8 += dot(q8, x0);
    s8 += dot(q8, x1);
    let q9 = subgroupBroadcast(vb, 1u);
    t9 += dot(q9, x0);
    s9 += dot(q9, x1);
    let q10 = subgroupBroadcast(vb, 2u);
    t10 += dot(q10, x0);
    s10 += dot(q10, x1);
    let q11 = subgroupBroadcast(vb, 3u);
    t11 += dot(q11, x0);
    s11 += dot(q11, x1);
    let q12 = subgroupBroadcast(vb, 4u);
    t12 += dot(q12, x0);
    s12 += dot(q12, x1);
    let q13 = subgroupBroadcast(vb, 5u);
    t13 += dot(q13, x0);
    s13 += dot(q13, x1);
    let q14 = subgroupBroadcast(vb, 6u);
    t14 += dot(q14, x0);
    s14 += dot(q14, x1);
    let q15 = subgroupBroadcast(vb, 7u);
    t15 += dot(q15, x0);
    s15 += dot(q15, x1);
  }
  store(r, c, array<f32, QB>(t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12, t13, t14, t15));
  store(r, c + 1u, array<f32, QB>(s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15));
}
