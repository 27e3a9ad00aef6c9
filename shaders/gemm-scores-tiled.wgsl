// gemm-scores-tiled.wgsl: the score tile of a block of queries against a block of base vectors.
//   scores[r * ldc + c] = score(q row q0 + r, x row col0 + c)   for r < rows, c < cols
//   METRIC 0 (l2): ||x||^2 - 2 q.x  (||q||^2 is added to the final k only, on the host)
//   METRIC 1 (ip): -q.x             (everything is minimised)
// CPU twin: src/cpu/gemm-scores.ts. The variant for GPUs with fast workgroup memory (see
// gemm-scores.wgsl); which variant a device runs is measured once per adapter
// (src/gpu/kernel-choice.ts).
// Strategy: a workgroup-memory tiled GEMM after tfjs-backend-webgpu's matmul_packed and
// onnxruntime-web's MatMul. A TW x TW workgroup computes a (4 TW) x (4 TW) tile of scores, each
// invocation 4 queries x 4 base vectors in registers. The inner dimension is walked TK = 16 floats
// at a time: the workgroup copies the tile's 4 TW query rows and 4 TW base rows (TK floats of each,
// vec4 loads; at TW = 16 one vec4 of each per invocation) into workgroup memory, then each
// invocation reads 4 + 4 vec4s there for 16 dot products. Each float loaded from storage then
// feeds 4 TW = 64 multiply-adds (the register-blocked variants: 8 per base float, 4 per query
// float), at the price of two barriers per TK floats: cheap on a GPU, expensive on lavapipe.
// Both operands are rows along d (the base block is the right-hand matrix transposed), so the two
// workgroup tiles have one shape: 4 TW rows of TK4P = TK / 4 + 1 vec4s. The spare vec4 staggers
// the rows across memory banks: at a stride of 5 vec4s, 8 neighbouring rows' vec4s fall in 8
// distinct groups of 4 banks (at 4 vec4s they would fall in 2).
// Invocation (tx, ty) owns queries ty + TW i and base vectors tx + TW j (i, j < 4): strided, so
// neighbouring invocations read neighbouring rows of the base tile and write neighbouring scores.
// Rows past the tile and vec4s past dpad4 are staged as zeros; scores outside the tile are not
// written, so any rows, cols, offsets and ldc are correct.
// Workgroup memory: 2 x 4 TW x TK4P x 16 bytes = 10 KiB at TW = 16 (WebGPU's default limit is 16 KiB).
// Dispatch: (ceil(cols / (4 TW)), ceil(rows / (4 TW))) workgroups of TW x TW: TW = 16 where the
// device allows 256 invocations per workgroup, else 8 (src/gpu/kernels/gemm-scores.ts).

override TW: u32 = 16u;
// Queries and base vectors per invocation: the register tile is RB x RB (unrolled below for 4).
const RB: u32 = 4u;
// The inner tile, TK = 16 floats, in vec4s; and the row stride of the workgroup tiles.
const TK4: u32 = 4u;
const TK4P: u32 = 5u;

//!include gemm-scores-io.wgsl

// Row t of a tile, vec4 k of the current inner tile, is at t * TK4P + k.
var<workgroup> tile_q: array<vec4<f32>, RB * TW * TK4P>;
var<workgroup> tile_x: array<vec4<f32>, RB * TW * TK4P>;

@compute @workgroup_size(TW, TW)
fn main(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(local_invocation_id) lid: vec3<u32>,
  @builtin(local_invocation_index) li: u32,
) {
  let side = RB * TW;
  let r0 = wid.y * side;  // the workgroup's first query, within the tile
  let c0 = wid.x * side;  // its first base vector, within the tile
  var acc = array<vec4<f32>, RB>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
  // p.dpad4 is uniform, so every invocation reaches the barriers together.
  for (var k0 = 0u; k0 < p.dpad4; k0 += TK4) {
    for (var e = li; e < side * TK4; e += TW * TW) {
      let t = e / TK4;
      let k = k0 + e % TK4;
      var q = vec4<f32>(0.0);
      if (r0 + t < p.rows && k < p.dpad4) {
        q = xq[(p.q0 + r0 + t) * p.dpad4 + k];
      }
      var x = vec4<f32>(0.0);
      if (c0 + t < p.cols && k < p.dpad4) {
        x = xb[(p.col0 + c0 + t) * p.dpad4 + k];
      }
      tile_q[t * TK4P + e % TK4] = q;
      tile_x[t * TK4P + e % TK4] = x;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < TK4; kk++) {
      let x0 = tile_x[lid.x * TK4P + kk];
      let x1 = tile_x[(lid.x + TW) * TK4P + kk];
      let x2 = tile_x[(lid.x + 2u * TW) * TK4P + kk];
      let x3 = tile_x[(lid.x + 3u * TW) * TK4P + kk];
      for (var i = 0u; i < RB; i++) {
        let q = tile_q[(lid.y + i * TW) * TK4P + kk];
        acc[i] += vec4<f32>(dot(q, x0), dot(q, x1), dot(q, x2), dot(q, x3));
      }
    }
    workgroupBarrier();
  }
  // Constant trip counts and no early exits, so that compilers unroll these loops and acc stays in
  // registers (a dynamically indexed private array would go to slow local memory).
  for (var j = 0u; j < RB; j++) {
    let c = c0 + lid.x + j * TW;
    if (c < p.cols) {
      var xn = 0.0;
      if (METRIC == 0u) {
        xn = xnorm[p.col0 + c];
      }
      for (var i = 0u; i < RB; i++) {
        let r = r0 + lid.y + i * TW;
        if (r < p.rows) {
          var v = -acc[i][j];
          if (METRIC == 0u) {
            v = xn - 2.0 * acc[i][j];
          }
          scores[r * p.ldc + c] = v;
        }
      }
    }
  }
}
