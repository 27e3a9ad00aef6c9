// gemm-scores-io.wgsl: the parameters and bindings every gemm-scores variant shares
// (gemm-scores.wgsl, gemm-scores-portable.wgsl, gemm-scores-tiled.wgsl), so that one encoder
// (src/gpu/kernels/gemm-scores.ts) drives them all. Not a kernel: inlined where a shader says
// `//!include gemm-scores-io.wgsl` (src/gpu/shaders.ts).

// 0: l2 (||x||^2 - 2 q.x), 1: ip (-q.x).
override METRIC: u32 = 0u;

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
