// mask-scores.wgsl: sets to +inf the score-tile columns a bitmap does not allow.
//   For c < cols, unless bit b = bit0 + c of mask is set ((mask[b >> 5] >> (b & 31)) & 1), every
//   scores[r * ldc + c], r < rows, becomes +inf. Columns whose bit is set, and columns c >= cols,
//   are left as they are. The bits are storage positions (tombstones, search filters); a minimised
//   score of a stored vector is always finite, so selection ranks a masked column after every real
//   one and the host drops it.
// CPU twin: src/cpu/mask-scores.ts.
// Order: none; each entry is written on its own. Scores are bound as u32s: +inf is stored as its
// bits (a constant expression may not evaluate to inf).
// Dispatch: one invocation per (column, block of RB rows), column fastest so that neighbouring
// invocations write neighbouring words, 1-D, folded into (x, y):
//   invocation = gid.x + gid.y * num_workgroups.x * WG; c = invocation % cols.
// An allowed column costs one mask read per invocation and no write.

override WG: u32 = 64u;
override RB: u32 = 16u;

const INF_BITS: u32 = 0x7f800000u;

struct Params {
  rows: u32,
  cols: u32,
  ldc: u32,    // row stride of scores
  bit0: u32,   // mask bit of column 0
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> scores: array<u32>;
@group(0) @binding(2) var<storage, read> mask: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let inv = gid.x + gid.y * nwg.x * WG;
  let blocks = (p.rows + RB - 1u) / RB;
  if (inv >= p.cols * blocks) {
    return;
  }
  let c = inv % p.cols;
  let b = p.bit0 + c;
  if (((mask[b >> 5u] >> (b & 31u)) & 1u) != 0u) {
    return;
  }
  let r0 = (inv / p.cols) * RB;
  let r1 = min(p.rows, r0 + RB);
  for (var r = r0; r < r1; r++) {
    scores[r * p.ldc + c] = INF_BITS;
  }
}
