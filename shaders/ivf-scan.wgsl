// ivf-scan.wgsl: scores the inverted lists each query probes and keeps, per (query, probed list,
// segment of that list), the k best (score, id), best first.
//   list L = probes[(row0 + r) * nprobe + p] (the coarse search's p-th nearest centroid of query r);
//   its vectors in this chunk are xb[ranges[2L] .. ranges[2L + 1]) (vectors grouped by list, with
//   spare room between lists), with norms xnorm and ids at the same positions; segment g covers an
//   nseg-th of that range. A list absent from the chunk has an empty range.
//   MASKED: position v is skipped (never offered) unless bit b = mask_bit0 + v of mask is set
//   ((mask[b >> 5] >> (b & 31)) & 1; see mask-scores.wgsl). A pipeline constant, so the unmasked
//   scan compiles without the test; its pipeline still declares the mask binding (an override
//   does not change what a shader statically uses), which the encoder fills with any buffer.
//   score: METRIC 0 (l2) ||x||^2 - 2 q.x, METRIC 1 (ip) -q.x; q = xq row q0 + r.
//   output list (r, p, g): out_s/out_i[((r * nprobe + p) * nseg + g) * k .. + k), padded with
//   (+inf, 0xffffffff); the lists are then merged by topk-merge.wgsl.
// CPU twin: src/cpu/ivf-scan.ts.
// Order: (score, id) ascending, equal scores break on the smaller id (heap.wgsl).
// Dispatch: one invocation per (row, probe, segment), 1-D, folded into (x, y):
//   invocation = gid.x + gid.y * num_workgroups.x * WG.

//!include heap.wgsl

const K_CAP: u32 = 16u;
override WG: u32 = 64u;
override METRIC: u32 = 0u;
override MASKED: bool = false;

struct Params {
  rows: u32,
  k: u32,
  nprobe: u32,
  nseg: u32,
  dpad4: u32,   // row length in vec4s
  q0: u32,      // first query row of xq
  row0: u32,    // first row of probes
  mask_bit0: u32,  // mask bit of position 0 (MASKED)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xq: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> probes: array<u32>;
@group(0) @binding(3) var<storage, read> ranges: array<u32>;
@group(0) @binding(4) var<storage, read> xb: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> xnorm: array<f32>;
@group(0) @binding(6) var<storage, read> ids: array<u32>;
@group(0) @binding(7) var<storage, read_write> out_s: array<f32>;
@group(0) @binding(8) var<storage, read_write> out_i: array<u32>;
@group(0) @binding(9) var<storage, read> mask: array<u32>;

// Whether position v may be a result (always, unless MASKED).
fn allowed(v: u32) -> bool {
  if (!MASKED) {
    return true;
  }
  let b = p.mask_bit0 + v;
  return ((mask[b >> 5u] >> (b & 31u)) & 1u) != 0u;
}

// Scores row v from its dot product's four lane sums and offers it to the heap of m entries,
// unless the mask skips it.
fn offer_dot(v: u32, acc: vec4<f32>, m: u32, k: u32) -> u32 {
  if (!allowed(v)) {
    return m;
  }
  let dot_qx = (acc.x + acc.y) + (acc.z + acc.w);
  var s = -dot_qx;
  if (METRIC == 0u) {
    s = xnorm[v] - 2.0 * dot_qx;
  }
  return heap_offer(s, ids[v], m, k);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let inv = gid.x + gid.y * nwg.x * WG;
  if (inv >= p.rows * p.nprobe * p.nseg) {
    return;
  }
  let seg = inv % p.nseg;
  let rp = inv / p.nseg;
  let r = rp / p.nprobe;
  let list = probes[(p.row0 + r) * p.nprobe + rp % p.nprobe];
  let k = p.k;
  var m = 0u;
  if (list != PAD_ID) {
    let start = ranges[2u * list];
    let len = ranges[2u * list + 1u] - start;
    let seg_len = (len + p.nseg - 1u) / p.nseg;
    let lo = start + min(len, seg * seg_len);
    let hi_end = start + min(len, (seg + 1u) * seg_len);
    let qb = (p.q0 + r) * p.dpad4;
    // Four vectors per pass: each query load feeds four dot products (on a software adapter the
    // loads, not the multiply-adds, bound this loop). Every dot product still adds its vec4 lanes
    // in j order, so scores are those of one vector at a time.
    var v = lo;
    for (; v + 4u <= hi_end; v += 4u) {
      if (!(allowed(v) || allowed(v + 1u) || allowed(v + 2u) || allowed(v + 3u))) {
        continue;  // four masked vectors: no dot products
      }
      var a0 = vec4<f32>(0.0);
      var a1 = vec4<f32>(0.0);
      var a2 = vec4<f32>(0.0);
      var a3 = vec4<f32>(0.0);
      let x0 = v * p.dpad4;
      for (var j = 0u; j < p.dpad4; j++) {
        let q = xq[qb + j];
        a0 += q * xb[x0 + j];
        a1 += q * xb[x0 + p.dpad4 + j];
        a2 += q * xb[x0 + 2u * p.dpad4 + j];
        a3 += q * xb[x0 + 3u * p.dpad4 + j];
      }
      m = offer_dot(v, a0, m, k);
      m = offer_dot(v + 1u, a1, m, k);
      m = offer_dot(v + 2u, a2, m, k);
      m = offer_dot(v + 3u, a3, m, k);
    }
    for (; v < hi_end; v++) {
      if (!allowed(v)) {
        continue;
      }
      var acc = vec4<f32>(0.0);
      let xv = v * p.dpad4;
      for (var j = 0u; j < p.dpad4; j++) {
        acc += xq[qb + j] * xb[xv + j];
      }
      m = offer_dot(v, acc, m, k);
    }
  }
  heap_sort(m);
  heap_store(inv * k, m, k);
}
