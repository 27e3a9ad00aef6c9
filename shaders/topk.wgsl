// topk.wgsl: per row of a score tile and per segment of that row, the k best (score, id), best first.
//   segment g of row r covers columns [g * seg_len, min(cols, (g + 1) * seg_len)); column c has id
//   id0 + c; output list (r, g) is out_s/out_i[(r * nseg + g) * k .. + k).
// CPU twin: src/cpu/topk.ts.
// Order: (score, id) ascending, equal scores break on the smaller id (the same total order on GPU
// and CPU). Short segments are padded with (+inf, 0xffffffff), which reads as id -1 on the host.
// Method: each invocation keeps a sorted queue of its segment's best k in private memory and
// inserts only candidates that beat the current k-th (most are rejected by one compare).
// K_CAP is the queue's capacity, a power of two >= k, substituted into the text when the pipeline
// is built (WGSL private arrays need a const size); k itself is a runtime parameter.
// Dispatch: one invocation per (row, segment), 1-D, folded into (x, y):
//   invocation = gid.x + gid.y * num_workgroups.x * WG; row = invocation / nseg.

const K_CAP: u32 = 16u;
override WG: u32 = 64u;

struct Params {
  rows: u32,
  cols: u32,     // valid columns in the tile
  ldc: u32,      // row stride of scores
  k: u32,
  nseg: u32,
  seg_len: u32,
  id0: u32,      // id of column 0
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> scores: array<f32>;
@group(0) @binding(2) var<storage, read_write> out_s: array<f32>;
@group(0) @binding(3) var<storage, read_write> out_i: array<u32>;

const PAD_ID: u32 = 0xffffffffu;
// +inf, read from a variable: a constant expression may not evaluate to inf.
var<private> INF_BITS: u32 = 0x7f800000u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let inv = gid.x + gid.y * nwg.x * WG;
  if (inv >= p.rows * p.nseg) {
    return;
  }
  let row = inv / p.nseg;
  let seg = inv % p.nseg;
  let k = p.k;
  var qs: array<f32, K_CAP>;
  var qi: array<u32, K_CAP>;
  for (var m = 0u; m < k; m++) {
    qs[m] = bitcast<f32>(INF_BITS);
    qi[m] = PAD_ID;
  }
  let start = seg * p.seg_len;
  let end = min(p.cols, start + p.seg_len);
  let rbase = row * p.ldc;
  var worst_s = qs[k - 1u];
  var worst_i = qi[k - 1u];
  for (var c = start; c < end; c++) {
    let s = scores[rbase + c];
    let id = p.id0 + c;
    if (s < worst_s || (s == worst_s && id < worst_i)) {
      var pos = k - 1u;
      while (pos > 0u && (s < qs[pos - 1u] || (s == qs[pos - 1u] && id < qi[pos - 1u]))) {
        qs[pos] = qs[pos - 1u];
        qi[pos] = qi[pos - 1u];
        pos--;
      }
      qs[pos] = s;
      qi[pos] = id;
      worst_s = qs[k - 1u];
      worst_i = qi[k - 1u];
    }
  }
  let o = inv * k;
  for (var m = 0u; m < k; m++) {
    out_s[o + m] = qs[m];
    out_i[o + m] = qi[m];
  }
}
