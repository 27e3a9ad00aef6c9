// sorted-list.wgsl: the k best (score, id) pairs that topk.wgsl and ivf-scan.wgsl keep per
// invocation where K_CAP <= LIST_MAX_CAP (16): a list sorted best first, in registers. The same
// functions as heap.wgsl, which serves larger K_CAP; src/gpu/shaders.ts includes this file in its
// place. Every index into the list is a literal (list_step and list_store_entry are called once
// per position, 15 .. 1 and 0 .. 15, so LIST_MAX_CAP = 16): an array indexed only by constants
// stays in registers, while one computed index (a heap's, a loop's) puts the whole array in
// memory. On lavapipe the k = 8 selection of k-means' assignment (65,536 points x 1024 centroids)
// went from 0.13 s over the k = 1 search's 0.54 s to 0.05 s, and `bench kmeans` (262,144 x 128,
// 1024 centroids) from 19.5 and 20.1 s to 17.9 and 18.2 s; written as a loop, the list was no
// faster than the heap. At K_CAP = 32 (the candidates of a search for k <= 16) a list of 32 was no
// faster than the heap in ivf-scan, so larger K_CAP keep the heap. An accepted pair costs up to k
// compare-and-selects; most pairs are rejected by one compare with the k-th.
// CPU twin: heapOffer / heapSortAndPad in src/cpu/topk.ts (the same k best, in the same order).
// Order: (score, id) ascending, equal scores break on the smaller id.

// Id of a padding entry (reads as -1 on the host).
const PAD_ID: u32 = 0xffffffffu;
// +inf, read from a variable: a constant expression may not evaluate to inf.
var<private> INF_BITS: u32 = 0x7f800000u;

var<private> hs: array<f32, K_CAP>;
var<private> hi: array<u32, K_CAP>;
// Entry k - 1 once k pairs are kept: what a pair must beat to be kept.
var<private> worst_s: f32;
var<private> worst_i: u32;

fn better(s1: f32, i1: u32, s2: f32, i2: u32) -> bool {
  return s1 < s2 || (s1 == s2 && i1 < i2);
}

// Entry j (1 <= j < k, a literal at every call) once (s, id) goes into the list of m: entry j - 1
// where (s, id) goes before it, else (s, id) where it goes before entry j or j is past the m kept.
fn list_step(j: u32, s: f32, id: u32, m: u32, k: u32) {
  if (j < K_CAP && j < k) {
    let before_prev = j - 1u < m && better(s, id, hs[j - 1u], hi[j - 1u]);
    let before_this = j >= m || better(s, id, hs[j], hi[j]);
    hs[j] = select(select(hs[j], s, before_this), hs[j - 1u], before_prev);
    hi[j] = select(select(hi[j], id, before_this), hi[j - 1u], before_prev);
    if (j == k - 1u) {
      worst_s = hs[j];
      worst_i = hi[j];
    }
  }
}

// Offers (s, id) to the list of m of at most k pairs; returns the new count.
fn best_offer(s: f32, id: u32, m: u32, k: u32) -> u32 {
  if (m == k && !better(s, id, worst_s, worst_i)) {
    return m;
  }
  list_step(15u, s, id, m, k);
  list_step(14u, s, id, m, k);
  list_step(13u, s, id, m, k);
  list_step(12u, s, id, m, k);
  list_step(11u, s, id, m, k);
  list_step(10u, s, id, m, k);
  list_step(9u, s, id, m, k);
  list_step(8u, s, id, m, k);
  list_step(7u, s, id, m, k);
  list_step(6u, s, id, m, k);
  list_step(5u, s, id, m, k);
  list_step(4u, s, id, m, k);
  list_step(3u, s, id, m, k);
  list_step(2u, s, id, m, k);
  list_step(1u, s, id, m, k);
  if (m == 0u || better(s, id, hs[0], hi[0])) {
    hs[0] = s;
    hi[0] = id;
  }
  if (k == 1u) {
    worst_s = hs[0];
    worst_i = hi[0];
  }
  return min(m + 1u, k);
}

// The list is kept sorted: nothing to do (heap.wgsl sorts its heap here).
fn best_sort(m: u32) {}

// Writes entry j (a literal at every call) to out_s/out_i[o + j], or (+inf, PAD_ID) past the m kept.
fn list_store_entry(j: u32, o: u32, m: u32, k: u32) {
  if (j < K_CAP && j < k) {
    let kept = j < m;
    out_s[o + j] = select(bitcast<f32>(INF_BITS), hs[j], kept);
    out_i[o + j] = select(PAD_ID, hi[j], kept);
  }
}

// Writes the m pairs kept to out_s/out_i[o, o + k), padded with (+inf, PAD_ID).
fn best_store(o: u32, m: u32, k: u32) {
  list_store_entry(0u, o, m, k);
  list_store_entry(1u, o, m, k);
  list_store_entry(2u, o, m, k);
  list_store_entry(3u, o, m, k);
  list_store_entry(4u, o, m, k);
  list_store_entry(5u, o, m, k);
  list_store_entry(6u, o, m, k);
  list_store_entry(7u, o, m, k);
  list_store_entry(8u, o, m, k);
  list_store_entry(9u, o, m, k);
  list_store_entry(10u, o, m, k);
  list_store_entry(11u, o, m, k);
  list_store_entry(12u, o, m, k);
  list_store_entry(13u, o, m, k);
  list_store_entry(14u, o, m, k);
  list_store_entry(15u, o, m, k);
}
