// ivf-scan.wgsl: scores the inverted lists each query probes and keeps, per (query, probed list,
// segment of that list), the k best (score, id), best first.
//   list L = lists[probe0 + r * nprobe + p] (the coarse search's p-th nearest centroid of query r);
//   its vectors in this chunk are xb[lists[2L] .. lists[2L + 1]) (vectors grouped by list, with
//   spare room between lists), with norms xnorm and ids at the same positions; segment g covers an
//   nseg-th of that range. A list absent from the chunk has an empty range. The lists' ranges and
//   the probes share one binding so that the kernel binds 8 storage buffers, the most every WebGPU
//   device allows (maxStorageBuffersPerShaderStage's default).
//   HALF: the dot products read the rows as float16 from the xb binding (two halves a word, low
//   half first, 4 ceil(dpad / 8) words a row, zero-padded; src/stores/half-rows.ts): half the loads, which bound this
//   loop on a software adapter. Scores are then approximate; the plan checks them against a bound
//   and searches again where it cannot vouch for them (src/plans/ivf-search.ts).
//   MASKED: position v is skipped (never offered) unless bit b = mask_bit0 + v of mask is set
//   ((mask[b >> 5] >> (b & 31)) & 1; see mask-scores.wgsl). A pipeline constant, so the unmasked
//   scan compiles without the test; its pipeline still declares the mask binding (an override
//   does not change what a shader statically uses), which the encoder fills with any buffer.
//   score: METRIC 0 (l2) ||x||^2 - 2 q.x, METRIC 1 (ip) -q.x; q = xq row q0 + r.
//   output list (r, p, g): out_s/out_i[((r * nprobe + p) * nseg + g) * k .. + k), padded with
//   (+inf, 0xffffffff); the lists are then merged by topk-merge.wgsl.
// CPU twin: src/cpu/ivf-scan.ts.
// Order: (score, id) ascending, equal scores break on the smaller id. The k best of a segment are
// kept as topk.wgsl keeps them (sorted-list.wgsl for K_CAP <= 16, else heap.wgsl).
// Dispatch: one invocation per (row, probe, segment), 1-D, folded into (x, y):
//   invocation = gid.x + gid.y * num_workgroups.x * WG.

//!include heap.wgsl

const K_CAP: u32 = 16u;
override WG: u32 = 64u;
override METRIC: u32 = 0u;
override MASKED: bool = false;
override HALF: bool = false;

struct Params {
  rows: u32,
  k: u32,
  nprobe: u32,
  nseg: u32,
  dpad4: u32,   // row length in vec4s
  q0: u32,      // first query row of xq
  probe0: u32,  // where the probes start in lists (row r's: probe0 + r * nprobe ..)
  mask_bit0: u32,  // mask bit of position 0 (MASKED)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xq: array<vec4<f32>>;
// [start, end) of each list's rows in this chunk (2 words a list), then the probes from probe0.
@group(0) @binding(2) var<storage, read> lists: array<u32>;
// The rows: float32 (bits, read through bitcast), or with HALF the rows as halves (xh): one
// binding for either (see lists).
@group(0) @binding(3) var<storage, read> xb: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> xnorm: array<f32>;
@group(0) @binding(5) var<storage, read> ids: array<u32>;
@group(0) @binding(6) var<storage, read_write> out_s: array<f32>;
@group(0) @binding(7) var<storage, read_write> out_i: array<u32>;
@group(0) @binding(8) var<storage, read> mask: array<u32>;

// Whether position v may be a result (always, unless MASKED).
fn allowed(v: u32) -> bool {
  if (!MASKED) {
    return true;
  }
  let b = p.mask_bit0 + v;
  return ((mask[b >> 5u] >> (b & 31u)) & 1u) != 0u;
}

// Scores row v from its dot product's four lane sums and offers it to the k best kept (m so far),
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
  return best_offer(s, ids[v], m, k);
}

// The lane products of query dimensions 8j .. 8j + 7 (qa, qc) with the eight halves of w.
fn halves_dot(qa: vec4<f32>, qc: vec4<f32>, w: vec4<u32>) -> vec4<f32> {
  return qa * vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)) + qc * vec4<f32>(unpack2x16float(w.z), unpack2x16float(w.w));
}

// Half rows (HALF): eight dimensions a step, one vec4<u32> of a row's halves; a row is
// ceil(dpad / 8) of them. Where dpad / 4 is odd a row's last four halves are zeros, whose products
// with the query's last vec4 (read again, to stay in its row) add nothing.
fn half_row_words4() -> u32 {
  return (p.dpad4 + 1u) / 2u;
}

fn query_odd(qb: u32, j: u32) -> vec4<f32> {
  return xq[qb + min(2u * j + 1u, p.dpad4 - 1u)];
}

// The vec4 lane sums of the dot products of query row qb (in vec4s) with rows v .. v + 3.
struct Dots4 {
  d0: vec4<f32>,
  d1: vec4<f32>,
  d2: vec4<f32>,
  d3: vec4<f32>,
}

fn dots4(qb: u32, v: u32) -> Dots4 {
  var a = Dots4(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
  if (HALF) {
    let w4 = half_row_words4();
    let h0 = v * w4;
    for (var j = 0u; j < w4; j++) {
      let qa = xq[qb + 2u * j];
      let qc = query_odd(qb, j);
      a.d0 += halves_dot(qa, qc, xb[h0 + j]);
      a.d1 += halves_dot(qa, qc, xb[h0 + w4 + j]);
      a.d2 += halves_dot(qa, qc, xb[h0 + 2u * w4 + j]);
      a.d3 += halves_dot(qa, qc, xb[h0 + 3u * w4 + j]);
    }
    return a;
  }
  let x0 = v * p.dpad4;
  for (var j = 0u; j < p.dpad4; j++) {
    let q = xq[qb + j];
    a.d0 += q * bitcast<vec4<f32>>(xb[x0 + j]);
    a.d1 += q * bitcast<vec4<f32>>(xb[x0 + p.dpad4 + j]);
    a.d2 += q * bitcast<vec4<f32>>(xb[x0 + 2u * p.dpad4 + j]);
    a.d3 += q * bitcast<vec4<f32>>(xb[x0 + 3u * p.dpad4 + j]);
  }
  return a;
}

// The vec4 lane sums of the dot product of query row qb with row v.
fn dot1(qb: u32, v: u32) -> vec4<f32> {
  var acc = vec4<f32>(0.0);
  if (HALF) {
    let w4 = half_row_words4();
    for (var j = 0u; j < w4; j++) {
      acc += halves_dot(xq[qb + 2u * j], query_odd(qb, j), xb[v * w4 + j]);
    }
    return acc;
  }
  for (var j = 0u; j < p.dpad4; j++) {
    acc += xq[qb + j] * bitcast<vec4<f32>>(xb[v * p.dpad4 + j]);
  }
  return acc;
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
  let list = lists[p.probe0 + rp];
  let k = p.k;
  var m = 0u;
  if (list != PAD_ID) {
    let start = lists[2u * list];
    let len = lists[2u * list + 1u] - start;
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
      let a = dots4(qb, v);
      m = offer_dot(v, a.d0, m, k);
      m = offer_dot(v + 1u, a.d1, m, k);
      m = offer_dot(v + 2u, a.d2, m, k);
      m = offer_dot(v + 3u, a.d3, m, k);
    }
    for (; v < hi_end; v++) {
      if (allowed(v)) {
        m = offer_dot(v, dot1(qb, v), m, k);
      }
    }
  }
  best_sort(m);
  best_store(inv * k, m, k);
}
