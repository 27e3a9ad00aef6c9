// sq-scores-core.wgsl: everything the sq-scores variants share (sq-scores.wgsl with subgroups,
// sq-scores-portable.wgsl without): parameters, bindings, decoding, the scan and the stores, so
// that one encoder (src/gpu/kernels/sq-scores.ts) drives both. Not a kernel: inlined where a
// shader says `//!include sq-scores-core.wgsl` (src/gpu/shaders.ts). The including shader defines
//   fn load_queries(s: u32)
// which sets q0..q7 to step s (dimensions 4s .. 4s + 3) of query rows r .. r + 7 of its
// workgroup: that is all a variant changes, how the queries reach the lanes.

// 0: l2 (||x||^2 - 2 dot), 1: ip (-dot).
override METRIC: u32 = 0u;
// 0: sq8 (4 bytes a word), 1: sq4 (8 nibbles a word), 2: fp16 (2 halves a word).
override KIND: u32 = 0u;

// Queries per workgroup and base vectors per invocation; the scan and the stores are unrolled for
// them (accumulators t: base vector c, u: c + 1, v: c + 2, w: c + 3; digit: query row r + i).
const QB: u32 = 8u;
const CB: u32 = 4u;

struct Params {
  rows: u32,        // queries in this tile
  cols: u32,        // base vectors in this tile
  dpad4: u32,       // query row length in vec4s
  q0: u32,          // first query row (of xq and qbias)
  col0: u32,        // first base row (of codes and xnorm, within the bound buffers)
  ldc: u32,         // row stride of scores
  code_words: u32,  // u32 words a base row takes
  c_first: u32,     // first tile column this dispatch scores (a wide tile takes several dispatches)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xq: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> qbias: array<f32>;
@group(0) @binding(3) var<storage, read> codes: array<u32>;
@group(0) @binding(4) var<storage, read> xnorm: array<f32>;
@group(0) @binding(5) var<storage, read_write> scores: array<f32>;

// Step s of query rows r .. r + 7 (set by the variant's load_queries).
var<private> q0: vec4<f32>; var<private> q1: vec4<f32>; var<private> q2: vec4<f32>; var<private> q3: vec4<f32>;
var<private> q4: vec4<f32>; var<private> q5: vec4<f32>; var<private> q6: vec4<f32>; var<private> q7: vec4<f32>;

// Dimensions 4s .. 4s + 3 of the base row whose words start at codes[b], as floats: sq8 bytes of
// word s, low byte first (unpack4xU8); sq4 nibbles 4 (s & 1) .. + 3 of word s >> 1, low nibble
// first; fp16 halves of words 2s, 2s + 1, low half first (unpack2x16float; a subnormal half may
// be flushed to zero).
fn decode(b: u32, s: u32) -> vec4<f32> {
  if (KIND == 0u) {
    return vec4<f32>(unpack4xU8(codes[b + s]));
  }
  if (KIND == 1u) {
    let n = codes[b + (s >> 1u)] >> (16u * (s & 1u));
    return vec4<f32>(vec4<u32>(n, n >> 4u, n >> 8u, n >> 12u) & vec4<u32>(15u));
  }
  return vec4<f32>(unpack2x16float(codes[b + 2u * s]), unpack2x16float(codes[b + 2u * s + 1u]));
}

// Writes the score of query row r + i against tile column c (dot: its dot product, xn: the
// column's norm), if the row is in the tile. Unrolled by the caller (constant i): a loop over an
// array of accumulators would put them in memory.
fn put(r: u32, i: u32, c: u32, xn: f32, dot: f32) {
  if (r + i < p.rows) {
    var s = -dot;
    if (METRIC == 0u) {
      s = xn - 2.0 * dot;
    }
    scores[(r + i) * p.ldc + c] = s;
  }
}

// Writes the scores of tile column c (a0..a7: its dot products with query rows r .. r + 7) that
// fall inside the tile.
fn store_column(r: u32, c: u32, a0: f32, a1: f32, a2: f32, a3: f32, a4: f32, a5: f32, a6: f32, a7: f32) {
  if (c >= p.cols) {
    return;
  }
  var xn = 0.0;
  if (METRIC == 0u) {
    xn = xnorm[p.col0 + c];
  }
  put(r, 0u, c, xn, a0); put(r, 1u, c, xn, a1); put(r, 2u, c, xn, a2); put(r, 3u, c, xn, a3);
  put(r, 4u, c, xn, a4); put(r, 5u, c, xn, a5); put(r, 6u, c, xn, a6); put(r, 7u, c, xn, a7);
}

// Scores query rows r .. r + 7 against tile columns c .. c + 3. Every invocation runs the whole
// loop (out-of-range rows and columns read a clamped in-range row), so that a variant's
// load_queries may use subgroup operations; results outside the tile are not written. Each sum
// starts at its query's bias, then adds one dot product (4 dimensions) a step.
fn scan_and_store(r: u32, c: u32) {
  let rl = p.rows - 1u;
  let cl = p.cols - 1u;
  let b0 = (p.col0 + min(c, cl)) * p.code_words;
  let b1 = (p.col0 + min(c + 1u, cl)) * p.code_words;
  let b2 = (p.col0 + min(c + 2u, cl)) * p.code_words;
  let b3 = (p.col0 + min(c + 3u, cl)) * p.code_words;
  var t0 = qbias[p.q0 + min(r, rl)]; var t1 = qbias[p.q0 + min(r + 1u, rl)];
  var t2 = qbias[p.q0 + min(r + 2u, rl)]; var t3 = qbias[p.q0 + min(r + 3u, rl)];
  var t4 = qbias[p.q0 + min(r + 4u, rl)]; var t5 = qbias[p.q0 + min(r + 5u, rl)];
  var t6 = qbias[p.q0 + min(r + 6u, rl)]; var t7 = qbias[p.q0 + min(r + 7u, rl)];
  var u0 = t0; var u1 = t1; var u2 = t2; var u3 = t3; var u4 = t4; var u5 = t5; var u6 = t6; var u7 = t7;
  var v0 = t0; var v1 = t1; var v2 = t2; var v3 = t3; var v4 = t4; var v5 = t5; var v6 = t6; var v7 = t7;
  var w0 = t0; var w1 = t1; var w2 = t2; var w3 = t3; var w4 = t4; var w5 = t5; var w6 = t6; var w7 = t7;
  for (var s = 0u; s < p.dpad4; s++) {
    load_queries(s);
    let x0 = decode(b0, s);
    let x1 = decode(b1, s);
    let x2 = decode(b2, s);
    let x3 = decode(b3, s);
    t0 += dot(q0, x0); u0 += dot(q0, x1); v0 += dot(q0, x2); w0 += dot(q0, x3);
    t1 += dot(q1, x0); u1 += dot(q1, x1); v1 += dot(q1, x2); w1 += dot(q1, x3);
    t2 += dot(q2, x0); u2 += dot(q2, x1); v2 += dot(q2, x2); w2 += dot(q2, x3);
    t3 += dot(q3, x0); u3 += dot(q3, x1); v3 += dot(q3, x2); w3 += dot(q3, x3);
    t4 += dot(q4, x0); u4 += dot(q4, x1); v4 += dot(q4, x2); w4 += dot(q4, x3);
    t5 += dot(q5, x0); u5 += dot(q5, x1); v5 += dot(q5, x2); w5 += dot(q5, x3);
    t6 += dot(q6, x0); u6 += dot(q6, x1); v6 += dot(q6, x2); w6 += dot(q6, x3);
    t7 += dot(q7, x0); u7 += dot(q7, x1); v7 += dot(q7, x2); w7 += dot(q7, x3);
  }
  store_column(r, c, t0, t1, t2, t3, t4, t5, t6, t7);
  store_column(r, c + 1u, u0, u1, u2, u3, u4, u5, u6, u7);
  store_column(r, c + 2u, v0, v1, v2, v3, v4, v5, v6, v7);
  store_column(r, c + 3u, w0, w1, w2, w3, w4, w5, w6, w7);
}
