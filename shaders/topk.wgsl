// topk.wgsl: per row of a score tile and per segment of that row, the k best (score, id), best first.
//   segment g of row r covers columns [g * seg_len, min(cols, (g + 1) * seg_len)); column c has id
//   id0 + c; output list (r, g) is out_s/out_i[(r * nseg + g) * k .. + k).
// CPU twin: src/cpu/topk.ts.
// Order: (score, id) ascending, equal scores break on the smaller id (the same total order on GPU
// and CPU). Short segments are padded with (+inf, 0xffffffff), which reads as id -1 on the host.
// Bound: when use_bound == 1, candidates no better than the row's running k-th best
// (bound_*[(row0 + r) * k + k - 1], from earlier tiles) cannot reach the final k and are skipped
// with one compare. After the first tile almost every candidate is rejected this way.
// Method: each invocation keeps its segment's best k in a private max-heap (root = the current
// k-th best), so an accepted candidate costs O(log k); a heapsort at the end orders the list.
// K_CAP is the heap's capacity, a power of two >= k, substituted into the text when the pipeline
// is built (WGSL private arrays need a const size); k itself is a runtime parameter.
// Dispatch: one invocation per (row, segment), 1-D, folded into (x, y):
//   invocation = gid.x + gid.y * num_workgroups.x * WG; row = invocation / nseg.

const K_CAP: u32 = 16u;
override WG: u32 = 64u;

struct Params {
  rows: u32,
  cols: u32,      // valid columns in the tile
  ldc: u32,       // row stride of scores
  k: u32,
  nseg: u32,
  seg_len: u32,
  id0: u32,       // id of column 0
  use_bound: u32, // 1: skip candidates no better than the running k-th best
  row0: u32,      // first row of the running lists
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> scores: array<f32>;
@group(0) @binding(2) var<storage, read> bound_s: array<f32>;
@group(0) @binding(3) var<storage, read> bound_i: array<u32>;
@group(0) @binding(4) var<storage, read_write> out_s: array<f32>;
@group(0) @binding(5) var<storage, read_write> out_i: array<u32>;

const PAD_ID: u32 = 0xffffffffu;
// +inf, read from a variable: a constant expression may not evaluate to inf.
var<private> INF_BITS: u32 = 0x7f800000u;

var<private> hs: array<f32, K_CAP>;
var<private> hi: array<u32, K_CAP>;

fn better(s1: f32, i1: u32, s2: f32, i2: u32) -> bool {
  return s1 < s2 || (s1 == s2 && i1 < i2);
}

// Places (s, id) at the root of the max-heap hs/hi[0, n) and sifts it down.
fn sift_down(s: f32, id: u32, n: u32) {
  var pos = 0u;
  loop {
    let l = 2u * pos + 1u;
    if (l >= n) {
      break;
    }
    var m = l;
    if (l + 1u < n && better(hs[l], hi[l], hs[l + 1u], hi[l + 1u])) {
      m = l + 1u;
    }
    if (!better(s, id, hs[m], hi[m])) {
      break;
    }
    hs[pos] = hs[m];
    hi[pos] = hi[m];
    pos = m;
  }
  hs[pos] = s;
  hi[pos] = id;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let inv = gid.x + gid.y * nwg.x * WG;
  if (inv >= p.rows * p.nseg) {
    return;
  }
  let row = inv / p.nseg;
  let seg = inv % p.nseg;
  let k = p.k;
  let inf = bitcast<f32>(INF_BITS);
  for (var m = 0u; m < k; m++) {
    hs[m] = inf;
    hi[m] = PAD_ID;
  }
  var bs = inf;
  var bi = PAD_ID;
  if (p.use_bound == 1u) {
    let b = (p.row0 + row) * k + k - 1u;
    bs = bound_s[b];
    bi = bound_i[b];
  }
  let start = seg * p.seg_len;
  let end = min(p.cols, start + p.seg_len);
  let rbase = row * p.ldc;
  for (var c = start; c < end; c++) {
    let s = scores[rbase + c];
    let id = p.id0 + c;
    if (better(s, id, hs[0], hi[0]) && better(s, id, bs, bi)) {
      sift_down(s, id, k);
    }
  }
  // Heapsort: move the worst to the end, one at a time; leaves hs/hi ascending.
  for (var n = k - 1u; n > 0u; n--) {
    let s = hs[n];
    let id = hi[n];
    hs[n] = hs[0];
    hi[n] = hi[0];
    sift_down(s, id, n);
  }
  let o = inv * k;
  for (var m = 0u; m < k; m++) {
    out_s[o + m] = hs[m];
    out_i[o + m] = hi[m];
  }
}
