// pairs-threshold.wgsl: the candidate pairs of a score tile (a self-join's or a range search's),
// appended to a list.
//   For r < rows, c < cols: i = q0 + r (query row), j = id0 + c (base row); when i < j (the
//   self-join, ALL_PAIRS 0: each pair once, never a row with itself) or always (range search,
//   ALL_PAIRS 1: queries and base rows are numbered independently), and
//     l2 (METRIC 0): scores[r * ldc + c] + qn <= limit + rel * (qn + xn)
//     ip (METRIC 1): scores[r * ldc + c]      <= limit + rel * (qn + xn)
//   with qn = xnorm_q[qn0 + r] and xn = xnorm_b[cn0 + c], the squared norms of the two rows,
//   the pair (i, j) is appended: slot = atomicAdd(count, 1); pairs[2 * slot .. + 1] = (i, j) while
//   slot < capacity. `count` keeps counting past capacity, so the host sees an overflow and runs
//   the tile again with room for every pair: no pair is ever dropped.
//   The scores are gemm-scores' minimised expansions (l2: ||x||^2 - 2 q.x, ip: -q.x), whose float32
//   rounding error is below rel * (||q||^2 + ||x||^2): the margin lets every true pair through; the
//   host then re-scores each candidate exactly and applies the exact threshold.
// CPU twin: src/cpu/pairs-threshold.ts (the same candidates, in row-major order; the GPU's order
// depends on scheduling, so the host sorts them).
// Dispatch: one invocation per tile entry, 2-D: (ceil(cols / WG), rows).

override WG: u32 = 64u;
override METRIC: u32 = 0u;
override ALL_PAIRS: u32 = 0u;

struct Params {
  rows: u32,
  cols: u32,
  ldc: u32,
  q0: u32,
  id0: u32,
  limit_bits: u32,   // f32 bits of the threshold on the minimised score
  rel_bits: u32,     // f32 bits of the relative margin
  capacity: u32,     // pairs that fit in `pairs`
  qn0: u32,          // first element of xnorm_q for row 0 of the tile
  cn0: u32,          // first element of xnorm_b for column 0 of the tile
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> scores: array<f32>;
@group(0) @binding(2) var<storage, read> xnorm_q: array<f32>;
@group(0) @binding(3) var<storage, read> xnorm_b: array<f32>;
@group(0) @binding(4) var<storage, read_write> count: atomic<u32>;
@group(0) @binding(5) var<storage, read_write> pairs: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let c = gid.x;
  let r = gid.y;
  if (c >= p.cols || r >= p.rows) {
    return;
  }
  let i = p.q0 + r;
  let j = p.id0 + c;
  if (ALL_PAIRS == 0u && i >= j) {
    return;
  }
  let qn = xnorm_q[p.qn0 + r];
  var s = scores[r * p.ldc + c];
  if (METRIC == 0u) {
    s = s + qn;
  }
  if (s <= bitcast<f32>(p.limit_bits) + bitcast<f32>(p.rel_bits) * (qn + xnorm_b[p.cn0 + c])) {
    let slot = atomicAdd(&count, 1u);
    if (slot < p.capacity) {
      pairs[2u * slot] = i;
      pairs[2u * slot + 1u] = j;
    }
  }
}
