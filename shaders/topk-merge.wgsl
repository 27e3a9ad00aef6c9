// topk-merge.wgsl: per row, merge nseg sorted partial lists (from topk.wgsl) and the row's running
// list into a new running list of the k best, best first.
//   partial list (r, g), g in [0, nseg): part_s/part_i[(r * stride + seg0 + g) * k .. + k)
//   (stride = lists per row in the buffer; seg0 = first list merged here: large list counts are
//   merged in rounds of at most MAX_SEG)
//   running lists: run_in_*/run_out_*[(row0 + r) * k .. + k); run_in is ignored when first == 1
// CPU twin: src/cpu/topk-merge.ts.
// Order: (score, id) ascending, equal scores break on the smaller id. Every list holds exactly k
// entries (padding included), so k picks never run past the end of a list.
// Method: a k-way merge: each step takes the best head among the nseg + 1 lists (nseg <= MAX_SEG).
// Dispatch: one invocation per row, 1-D, folded into (x, y) like topk.wgsl.

const MAX_SEG: u32 = 32u;
override WG: u32 = 64u;

struct Params {
  rows: u32,
  k: u32,
  nseg: u32,
  first: u32,   // 1: there is no running list yet
  row0: u32,    // first row of the running lists
  stride: u32,  // partial lists per row in part_*
  seg0: u32,    // first partial list of each row merged by this dispatch
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> part_s: array<f32>;
@group(0) @binding(2) var<storage, read> part_i: array<u32>;
@group(0) @binding(3) var<storage, read> run_in_s: array<f32>;
@group(0) @binding(4) var<storage, read> run_in_i: array<u32>;
@group(0) @binding(5) var<storage, read_write> run_out_s: array<f32>;
@group(0) @binding(6) var<storage, read_write> run_out_i: array<u32>;

const PAD_ID: u32 = 0xffffffffu;
// +inf, read from a variable: a constant expression may not evaluate to inf.
var<private> INF_BITS: u32 = 0x7f800000u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let r = gid.x + gid.y * nwg.x * WG;
  if (r >= p.rows) {
    return;
  }
  let k = p.k;
  let nseg = p.nseg;
  var heads: array<u32, MAX_SEG + 1u>;
  for (var g = 0u; g <= nseg; g++) {
    heads[g] = 0u;
  }
  let pbase = (r * p.stride + p.seg0) * k;
  let rbase = (p.row0 + r) * k;
  for (var o = 0u; o < k; o++) {
    // The running list (index nseg) is the first candidate; the partial lists follow.
    var best = nseg;
    var bs = bitcast<f32>(INF_BITS);
    var bi = PAD_ID;
    if (p.first == 0u) {
      bs = run_in_s[rbase + heads[nseg]];
      bi = run_in_i[rbase + heads[nseg]];
    }
    for (var g = 0u; g < nseg; g++) {
      let h = pbase + g * k + heads[g];
      let s = part_s[h];
      let id = part_i[h];
      if ((p.first == 1u && g == 0u) || s < bs || (s == bs && id < bi)) {
        best = g;
        bs = s;
        bi = id;
      }
    }
    run_out_s[rbase + o] = bs;
    run_out_i[rbase + o] = bi;
    heads[best] += 1u;
  }
}
