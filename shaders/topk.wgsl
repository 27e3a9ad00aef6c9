// topk.wgsl: per row of a score tile and per segment of that row, the k best (score, id), best first.
//   segment g of row r covers columns [g * seg_len, min(cols, (g + 1) * seg_len)); column c has id
//   id0 + c; output list (r, g) is out_s/out_i[(r * nseg + g) * k .. + k).
// CPU twin: src/cpu/topk.ts.
// Order: (score, id) ascending, equal scores break on the smaller id (the same total order on GPU
// and CPU). Short segments are padded with (+inf, 0xffffffff), which reads as id -1 on the host.
// Bound: when use_bound == 1, candidates no better than the row's running k-th best
// (bound_*[(row0 + r) * k + k - 1], from earlier tiles) cannot reach the final k and are skipped
// with one compare. After the first tile almost every candidate is rejected this way.
// Method: each invocation keeps its segment's best (up to) k in a private max-heap (root = the
// worst kept), so an accepted candidate costs O(log k); a heapsort of the m entries kept orders
// the list. Thanks to the bound, m is small after the first tile, and so is the sort.
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

// Adds (s, id) as entry n of the max-heap hs/hi[0, n) and sifts it up.
fn sift_up(s: f32, id: u32, n: u32) {
  var pos = n;
  while (pos > 0u) {
    let parent = (pos - 1u) / 2u;
    if (!better(hs[parent], hi[parent], s, id)) {
      break;
    }
    hs[pos] = hs[parent];
    hi[pos] = hi[parent];
    pos = parent;
  }
  hs[pos] = s;
  hi[pos] = id;
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
  var m = 0u;  // entries kept, <= k
  for (var c = start; c < end; c++) {
    let s = scores[rbase + c];
    let id = p.id0 + c;
    if (!better(s, id, bs, bi)) {
      continue;
    }
    if (m < k) {
      sift_up(s, id, m);
      m++;
    } else if (better(s, id, hs[0], hi[0])) {
      sift_down(s, id, k);
    }
  }
  // Heapsort: move the worst to the end, one at a time; leaves hs/hi[0, m) ascending.
  for (var n = m; n > 1u; n--) {
    let s = hs[n - 1u];
    let id = hi[n - 1u];
    hs[n - 1u] = hs[0];
    hi[n - 1u] = hi[0];
    sift_down(s, id, n - 1u);
  }
  let o = inv * k;
  for (var j = 0u; j < m; j++) {
    out_s[o + j] = hs[j];
    out_i[o + j] = hi[j];
  }
  for (var j = m; j < k; j++) {
    out_s[o + j] = inf;
    out_i[o + j] = PAD_ID;
  }
}
