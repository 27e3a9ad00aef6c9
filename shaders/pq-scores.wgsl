// pq-scores.wgsl: scores of product-quantised codes from lookup tables (pq-tables), Faiss's ADC.
//   For r < rows, c < cols:
//     scores[r * ldc + c] = qbias[q0 + r] + sum_{m < M} luts[(r * M + m) * KSUB + code(col0 + c, m)]
//   code(i, m): bits [m * NBITS, (m + 1) * NBITS) of row i's codeWords words, codes[i * codeWords ..]
//   (bit b is bit b & 31 of word b >> 5: Faiss's PQ code packing, little-endian); KSUB = 2^NBITS.
// CPU twin: src/cpu/pq-scores.ts (the same float32 sums in the same order: equal bits).
// Order: qbias first, then m ascending; each score on its own.
// Table: SHARED 1 copies the row's M * KSUB entries into workgroup memory first (LUT_N floats, at
// least M * KSUB); SHARED 0 reads them from storage (a table larger than the device's workgroup
// memory, as cuVS falls back to). Both give the same bits.
// Dispatch: workgroup (x, y) scores tile row y against columns c_first + x * WG * CPT + i * WG + lane,
// i < CPT (neighbouring lanes read neighbouring rows of codes); y < rows.

override WG: u32 = 64u;
const NBITS: u32 = 8u;
const SHARED: u32 = 1u;
const LUT_N: u32 = 4096u;
const CPT: u32 = 16u;
const KSUB: u32 = 1u << NBITS;
const MASK: u32 = KSUB - 1u;

struct Params {
  rows: u32,
  cols: u32,
  ldc: u32,
  q0: u32,
  col0: u32,
  M: u32,
  codeWords: u32,
  c_first: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> luts: array<f32>;
@group(0) @binding(2) var<storage, read> qbias: array<f32>;
@group(0) @binding(3) var<storage, read> codes: array<u32>;
@group(0) @binding(4) var<storage, read_write> scores: array<f32>;

var<workgroup> table: array<f32, LUT_N>;

fn code_at(base: u32, m: u32) -> u32 {
  let bit = m * NBITS;
  let w = base + (bit >> 5u);
  let s = bit & 31u;
  var v = codes[w] >> s;
  if (s + NBITS > 32u) {
    v = v | (codes[w + 1u] << (32u - s));
  }
  return v & MASK;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let r = wid.y;
  let n = p.M * KSUB;
  let t0 = r * n;
  if (SHARED == 1u) {
    for (var i = lid.x; i < n; i += WG) {
      table[i] = luts[t0 + i];
    }
    workgroupBarrier();
  }
  let bias = qbias[p.q0 + r];
  for (var i = 0u; i < CPT; i++) {
    let c = p.c_first + wid.x * WG * CPT + i * WG + lid.x;
    if (c >= p.cols) {
      break;
    }
    let base = (p.col0 + c) * p.codeWords;
    var s = bias;
    for (var m = 0u; m < p.M; m++) {
      let e = m * KSUB + code_at(base, m);
      if (SHARED == 1u) {
        s = s + table[e];
      } else {
        s = s + luts[t0 + e];
      }
    }
    scores[r * p.ldc + c] = s;
  }
}
