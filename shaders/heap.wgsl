// heap.wgsl: the k best (score, id) pairs that topk.wgsl and ivf-scan.wgsl keep per invocation, in
// a private max-heap (root = the worst pair kept), for K_CAP > LIST_MAX_CAP; smaller K_CAP keep
// a sorted list in registers instead (sorted-list.wgsl, the same functions). Not a kernel: inlined
// where a shader says `//!include heap.wgsl` (src/gpu/shaders.ts picks the file by K_CAP). It uses
// the includer's K_CAP (the heap's capacity) and, in best_store, its output arrays out_s / out_i.
// CPU twin: heapOffer / heapSortAndPad in src/cpu/topk.ts.
// Order: (score, id) ascending, equal scores break on the smaller id.

// Id of a padding entry (reads as -1 on the host).
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


// Offers (s, id) to a heap holding m of at most k pairs; returns the new count.
fn best_offer(s: f32, id: u32, m: u32, k: u32) -> u32 {
  if (m < k) {
    sift_up(s, id, m);
    return m + 1u;
  }
  if (better(s, id, hs[0], hi[0])) {
    sift_down(s, id, k);
  }
  return m;
}

// Heapsort of the m pairs kept: leaves hs/hi[0, m) ascending (best first).
fn best_sort(m: u32) {
  for (var n = m; n > 1u; n--) {
    let s = hs[n - 1u];
    let id = hi[n - 1u];
    hs[n - 1u] = hs[0];
    hi[n - 1u] = hi[0];
    sift_down(s, id, n - 1u);
  }
}

// Writes the m pairs kept (sorted by best_sort) to out_s/out_i[o, o + k), padded with (+inf, PAD_ID).
fn best_store(o: u32, m: u32, k: u32) {
  let inf = bitcast<f32>(INF_BITS);
  for (var j = 0u; j < m; j++) {
    out_s[o + j] = hs[j];
    out_i[o + j] = hi[j];
  }
  for (var j = m; j < k; j++) {
    out_s[o + j] = inf;
    out_i[o + j] = PAD_ID;
  }
}
