// hamming-scores.wgsl: Hamming distances between binary codes (Faiss's IndexLSH codes).
//   For r < rows, c < cols:
//     scores[r * ldc + c] = f32(sum_{w < codeWords} countOneBits(xq[(q0 + r) * codeWords + w] ^ codes[(col0 + c) * codeWords + w]))
//   Rows of both are codeWords u32 words; the bits past a code's length are 0 in both.
// CPU twin: src/cpu/hamming-scores.ts. Every score is an integer, exact in float32: equal bits.
// Strategy: each invocation scores QB query rows x CB columns, one word of each a step, in 16
// integer accumulators; neighbouring lanes take neighbouring columns (i * WG + lane), so a step's
// code loads are adjacent rows, and the query words are the same for every lane of a workgroup.
// Dispatch: (ceil(cols / (CB * WG)), ceil(rows / QB)), columns from c_first: a tile wider than
// one dispatch's workgroups per dimension allow takes several (the encoder splits it).
// Out-of-range rows and columns read a clamped in-range row; their results are not written.

override WG: u32 = 64u;
const QB: u32 = 4u;
const CB: u32 = 4u;

struct Params {
  rows: u32,
  cols: u32,
  ldc: u32,
  q0: u32,
  col0: u32,
  codeWords: u32,
  c_first: u32,
  pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xq: array<u32>;
@group(0) @binding(2) var<storage, read> codes: array<u32>;
@group(0) @binding(3) var<storage, read_write> scores: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let r0 = wid.y * QB;
  let c0 = p.c_first + wid.x * WG * CB + lid.x;
  let W = p.codeWords;
  var qa: array<u32, QB>;
  var xa: array<u32, CB>;
  for (var j = 0u; j < QB; j++) {
    qa[j] = (p.q0 + min(r0 + j, p.rows - 1u)) * W;
  }
  for (var i = 0u; i < CB; i++) {
    xa[i] = (p.col0 + min(c0 + i * WG, p.cols - 1u)) * W;
  }
  var acc: array<u32, 16>;
  for (var w = 0u; w < W; w++) {
    var x: array<u32, CB>;
    for (var i = 0u; i < CB; i++) {
      x[i] = codes[xa[i] + w];
    }
    for (var j = 0u; j < QB; j++) {
      let q = xq[qa[j] + w];
      for (var i = 0u; i < CB; i++) {
        acc[j * CB + i] += countOneBits(q ^ x[i]);
      }
    }
  }
  for (var j = 0u; j < QB; j++) {
    let r = r0 + j;
    for (var i = 0u; i < CB; i++) {
      let c = c0 + i * WG;
      if (r < p.rows && c < p.cols) {
        scores[r * p.ldc + c] = f32(acc[j * CB + i]);
      }
    }
  }
}
