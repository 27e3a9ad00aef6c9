enable subgroups;

// sq-scores.wgsl: the score tile of a block of queries against a block of scalar-quantised base
// vectors, decoded in registers.
//   dot(r, c) = qbias[q0 + r] + sum_{j < dpad} xq[(q0 + r) * dpad + j] * v(c, j)
//   scores[r * ldc + c] = METRIC 0 (l2): xnorm[col0 + c] - 2 dot(r, c);  METRIC 1 (ip): -dot(r, c)
//                                                                       for r < rows, c < cols
// v(c, j): dimension j of base row col0 + c as a float, from the row's code_words u32 words at
// codes[(col0 + c) * code_words ..]:
//   KIND 0 (sq8):  byte j & 3 of word j >> 2, low byte first (0 .. 255)
//   KIND 1 (sq4):  nibble j & 7 of word j >> 3, low nibble first (0 .. 15)
//   KIND 2 (fp16): half j & 1 of word j >> 1, low half first
// Padded dimensions (d <= j < dpad) have code 0 and xq 0. The host transforms the queries so that
// dot is q . decode(x) (SQ8: xq_j = q_j vdiff_j / 255, qbias = sum_j q_j (vmin_j + vdiff_j / 510)),
// and xnorm holds the decoded rows' squared norms.
// CPU twin: src/cpu/sq-scores.ts. Order: each sum starts at qbias and adds one dot (4 dimensions)
// a step, in float32; the twin adds in the same order in float64 and rounds once.
// Used where the device has subgroups of at least 8 lanes (src/gpu/kernels/sq-scores.ts);
// sq-scores-portable.wgsl elsewhere. The scan itself is in sq-scores-core.wgsl.
// Strategy: register blocking without workgroup memory or barriers, as gemm-scores.wgsl. Each
// invocation computes QB = 8 queries x CB = 4 base vectors in 32 scalar accumulators; lane i of
// each subgroup loads step s of query row r + i and subgroupBroadcast hands it to every lane.
// Why this shape (read off lavapipe's code, GALLIVM_DEBUG=asm, MESA_SHADER_CACHE_DISABLE=true):
// lavapipe turns each storage load into a masked, bounds-checked scalar load per lane and 32-bit
// component, about 12 instructions, so a u32 of codes costs as much as a float; what quantisation
// saves is words, not loads. Per 4 dimensions a lane loads 4 query floats and 4 (sq8), 4 (sq4: one
// word serves two steps but is loaded in each), or 8 (fp16) code words for 128 multiply-adds, where
// gemm-scores' 16 x 2 loads 16 floats: about 1450 instructions a step against gemm-scores' 1950,
// of which 256 are the multiply-adds (no FMA: fma() and dot() both become mul + add). At 1000 x
// 16384 x 128 sq8 and sq4 ran 1.1 - 1.4x gemm-scores' speed, fp16 0.9 - 1.0x (unpack2x16float
// costs); 16 queries x 4 base vectors (64 accumulators), 8 x 8, a loop over pairs of steps, and
// vec4<u32> code loads measured no better within the noise of this machine.
// Dispatch: (ceil(cols / (CB * WG)), ceil(rows / QB)), tile columns from c_first: a tile wider than
// one dispatch's workgroups per dimension allow takes several (the encoder splits it). Every
// invocation runs the loop (out-of-range rows and columns read a clamped in-range row), so the
// broadcasts happen in uniform control flow; results outside the tile are not written.

override WG: u32 = 64u;

//!include sq-scores-core.wgsl

// Lane i (mod 8) of each subgroup loads query row r + i (clamped; set by main).
var<private> qa: u32;

fn load_queries(s: u32) {
  let q = xq[qa + s];
  q0 = subgroupBroadcast(q, 0u); q1 = subgroupBroadcast(q, 1u); q2 = subgroupBroadcast(q, 2u); q3 = subgroupBroadcast(q, 3u);
  q4 = subgroupBroadcast(q, 4u); q5 = subgroupBroadcast(q, 5u); q6 = subgroupBroadcast(q, 6u); q7 = subgroupBroadcast(q, 7u);
}

@compute @workgroup_size(WG)
fn main(
  @builtin(global_invocation_id) gid: vec3<u32>,
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(subgroup_invocation_id) lane: u32,
) {
  let r = wid.y * QB;
  qa = (p.q0 + min(r + lane % QB, p.rows - 1u)) * p.dpad4;
  scan_and_store(r, p.c_first + gid.x * CB);
}
