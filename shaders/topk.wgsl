// topk.wgsl: per row of a score tile and per segment of that row, the k best (score, id), best first.
//   segment g of row r covers columns [g * seg_len, min(cols, (g + 1) * seg_len)); column c has id
//   id0 + c; output list (r, g) is out_s/out_i[(r * nseg + g) * k .. + k).
// Transposed (TRANSPOSED == 1): row r is column r of the tile, its column c the tile's row c
//   (scores[c * ldc + r]): a self-join's one tile selected along its columns too.
// Bias (BIAS == 1): each score plus bias[bias0 + the tile's row] (a row's own squared norm, or
//   transposed, the candidate's: a self-join's full l2 distances), added in f32.
// TRANSPOSED and BIAS are substituted into the text like K_CAP: a plain scan compiles without them.
// CPU twin: src/cpu/topk.ts.
// Order: (score, id) ascending, equal scores break on the smaller id (the same total order on GPU
// and CPU). Short segments are padded with (+inf, 0xffffffff), which reads as id -1 on the host.
// Bound: when use_bound == 1, candidates no better than the row's running k-th best
// (bound_*[(row0 + r) * k + k - 1], from earlier tiles) cannot reach the final k and are skipped
// with one compare. After the first tile almost every candidate is rejected this way.
// Method: each invocation keeps its segment's best (up to) k: for K_CAP <= 16 in a sorted list in
// registers (sorted-list.wgsl), else in a private max-heap (heap.wgsl: root = the worst kept, an
// accepted candidate costs O(log k), a heapsort of the m entries kept orders the list). Thanks to
// the bound, few candidates are accepted after the first tile.
// K_CAP is the capacity, a power of two >= k, substituted into the text when the pipeline is built
// (WGSL private arrays need a const size); k itself is a runtime parameter.
// Dispatch: one invocation per (row, segment), 1-D, folded into (x, y):
//   invocation = gid.x + gid.y * num_workgroups.x * WG; row = invocation / nseg.

//!include heap.wgsl

const K_CAP: u32 = 16u;
const TRANSPOSED: u32 = 0u;
const BIAS: u32 = 0u;
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
  bias0: u32,     // BIAS: the bias of the tile's row 0
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> scores: array<f32>;
@group(0) @binding(2) var<storage, read> bound_s: array<f32>;
@group(0) @binding(3) var<storage, read> bound_i: array<u32>;
@group(0) @binding(4) var<storage, read_write> out_s: array<f32>;
@group(0) @binding(5) var<storage, read_write> out_i: array<u32>;
@group(0) @binding(6) var<storage, read> bias: array<f32>;


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
  let tr = TRANSPOSED == 1u;
  var m = 0u;  // entries kept, <= k
  for (var c = start; c < end; c++) {
    var s = scores[select(row * p.ldc + c, c * p.ldc + row, tr)];
    if (BIAS == 1u) {
      s = s + bias[p.bias0 + select(row, c, tr)];
    }
    let id = p.id0 + c;
    if (!better(s, id, bs, bi)) {
      continue;
    }
    m = best_offer(s, id, m, k);
  }
  best_sort(m);
  best_store(inv * k, m, k);
}
