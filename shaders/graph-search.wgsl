// graph-search.wgsl: a CAGRA-style search of a fixed-degree graph, one query per workgroup (after
// cuVS's "single-CTA" search): the k best (score, id) a greedy walk from the seeds finds.
//   query r: xq row q0 + r (dpad4 vec4s); base row v: xb[v * dpad4 ..], squared norm xnorm[v];
//   v's neighbours: graph[v * degree .. + degree) (PAD_ID: none); query r's seeds (its entry points,
//   src/plans/graph-search.ts): io[r * nseeds .. + nseeds); its results at io[out0 + r * k ..]
//   (scores, as bits) and io[out0 + rows * k + r * k ..] (ids). One read_write binding for all the
//   small arrays, which the encoder copies in and out, keeps the kernel at 7 storage bindings: room
//   for xb_hi.
//   score: METRIC 0 (l2) xnorm[v] - 2 q.x_v, METRIC 1 (ip) -q.x_v (dot products: vec4 lane sums,
//   then (x + y) + (z + w)).
//   HALF: xb holds the rows as float16 (two halves a word, low half first, 4 ceil(dpad / 8) words
//   a row, zero-padded; src/stores/half-rows.ts), read eight dimensions a step (one vec4<u32>,
//   unpack2x16float), and xnorm the norms of the rows as they decode: half the bytes (a base that
//   fits one binding: Fashion-MNIST's 188 MB of floats do not on lavapipe's 128 MiB) and half the
//   loads. The query stays float32. The scores only steer the walk; the caller re-scores.
//   With HALF the rows may span two bindings: rows from row_split on are in xb_hi (row v at
//   (v - row_split) * its width; 1,000,000 x 128 as halves is 256 MB, lavapipe binds 128 MiB);
//   row_split = PAD_ID: all in xb (xb_hi is then any buffer).
// Algorithm, per query (the CPU twin, src/cpu/graph-search.ts, does the very same steps):
//   state: the internal list of itopk entries (score, id, expanded), sorted by (score, id), all
//   (+inf, PAD_ID, no) at first; the visited hash of S = 2^hash_bits slots, all empty (PAD_ID).
//   batch B (a sequence of ids): each id other than PAD_ID that the hash does not hold is inserted
//   and scored (a candidate); the list becomes the first itopk of [list, candidates] in (score, id)
//   order (ties: only empty entries, kept in that order). Candidates are not expanded.
//   1. The query's seeds are the first batch. iterations = 0.
//   2. While iterations < max_iterations: the parents are the first search_width entries of the
//      list, in list order, that hold an id and are not expanded; they are marked expanded. None:
//      stop. If the hash holds more than S / 2 ids, it is emptied and the ids of the list are
//      inserted again (so an id in the list is always in the hash, and never twice in the list;
//      an id dropped from the list may be scored again after a reset). The next batch is the
//      parents' neighbours, parent order then neighbour order. iterations += 1.
//   3. Output: the first k entries of the list that hold an id allowed by the mask (MASKED: bit
//      mask_bit0 + v of mask, as ivf-scan.wgsl; a disallowed id is walked through like any other,
//      only never written out), to the results (above), padded with (+inf, PAD_ID); with iter0 !=
//      PAD_ID, the iterations and the ids scored to io[iter0 + 2 r] and [iter0 + 2 r + 1].
//      itopk > n simply leaves empty entries.
//   Hash: open addressing, linear probing; id starts at slot (id * HASH_MUL mod 2^32) >> (32 -
//   hash_bits). The encoder checks (src/device.ts checkGraphSearchArgs) that nseeds <= S,
//   2 * search_width * degree <= S and itopk + search_width * degree <= S, so no batch fills it:
//   every probe ends. The lanes insert a batch at once (atomicCompareExchangeWeak): which lane
//   takes an id seen twice in one batch, and where ids land, depend on timing, but the set of ids
//   held (and so every result) does not; the twin inserts in batch order.
// Order: (score, id) ascending, equal scores break on the smaller id; -0 and +0 are equal scores.
// Merge: an id not better than the list's last entry is dropped as soon as it is scored (the
// merge would cut it); the others take candidate slots in arrival order (a workgroup atomic
// counter), an order that does not matter: each entry of [list, candidates] counts the entries
// before it in (score, id) order (ids are distinct; its rank, a permutation), and the entries of
// rank < itopk are written there: up to itopk + MAX_CAND entries, PER_LANE per invocation held in
// registers across the barrier. Dropping early made the search 1.8x faster on lavapipe.
// Dispatch: one workgroup of WG invocations per query row, folded into (x, y):
//   row = workgroup_id.x + workgroup_id.y * num_workgroups.x.
// Distances: a batch is first inserted into the hash, one id an invocation, the fresh ids (those
// it did not hold) compacted into cand_i; then TEAM invocations score each fresh id together, lane
// t of a team reading the row's vec4s t, t + TEAM, ... (on a GPU the team's loads of one row are
// adjacent words), their partial sums added by the team's first lane in lane order. WG / TEAM fresh
// ids a round, so seen ids cost no invocation a round. TEAM (the encoder picks it by the row's
// width) changes only the float32 summation order: the twin scores in float64.
// Workgroup memory (caps below): query 4 KiB, list 3 KiB, candidates 4 KiB, hash 4 KiB, partial sums
// 512 B, parents and counters 144 B: 16,016 bytes, under WebGPU's 16 KiB default
// maxComputeWorkgroupStorageSize.

const PAD_ID: u32 = 0xffffffffu;
// Fibonacci hashing: 2^32 / golden ratio (odd). src/cpu/graph-search.ts GRAPH_HASH_MUL.
const HASH_MUL: u32 = 0x9e3779b1u;
// Caps: src/device.ts GRAPH_SEARCH_MAX_* (MAX_HASH = 2^GRAPH_SEARCH_MAX_HASH_BITS, MAX_DPAD4 = MAX_DPAD / 4).
const MAX_ITOPK: u32 = 256u;
const MAX_CAND: u32 = 512u;
const MAX_WIDTH: u32 = 32u;
const MAX_HASH: u32 = 1024u;
const MAX_DPAD4: u32 = 256u;
// Invocations per workgroup (a const: it sizes the merge's registers).
const WG: u32 = 64u;
// Partial sums: two rounds of WG.
const PARTS: u32 = 128u;
const PER_LANE: u32 = (MAX_ITOPK + MAX_CAND + WG - 1u) / WG;
override METRIC: u32 = 0u;
override MASKED: bool = false;
override HALF: bool = false;
// Invocations that score one row together (a power of two dividing WG: GraphSearchArgs.team).
override TEAM: u32 = 1u;
// +inf, read from a variable: a constant expression may not evaluate to inf.
var<private> INF_BITS: u32 = 0x7f800000u;

struct Params {
  rows: u32,
  q0: u32,
  dpad4: u32,           // row length in vec4s
  degree: u32,
  nseeds: u32,
  itopk: u32,
  search_width: u32,
  max_iterations: u32,
  hash_bits: u32,
  k: u32,
  mask_bit0: u32,
  iter0: u32,           // where the iterations and ids scored go in io, or PAD_ID: nowhere
  out0: u32,            // where the results begin in io
  row_split: u32,       // the first row in xb_hi (HALF), or PAD_ID: none
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xq: array<vec4<f32>>;
// The rows: float32 (bits, read through bitcast), or with HALF the rows as halves (those from
// row_split on in xb_hi).
@group(0) @binding(2) var<storage, read> xb: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> xnorm: array<f32>;
@group(0) @binding(4) var<storage, read> graph: array<u32>;
// Each query's seeds, its results and (from iter0) its iterations (see the top).
@group(0) @binding(5) var<storage, read_write> io: array<u32>;
@group(0) @binding(6) var<storage, read> mask: array<u32>;
@group(0) @binding(7) var<storage, read> xb_hi: array<vec4<u32>>;

var<workgroup> q: array<vec4<f32>, MAX_DPAD4>;
var<workgroup> list_s: array<f32, MAX_ITOPK>;
var<workgroup> list_i: array<u32, MAX_ITOPK>;
var<workgroup> list_x: array<u32, MAX_ITOPK>;   // 1: expanded
var<workgroup> cand_s: array<f32, MAX_CAND>;
var<workgroup> cand_i: array<u32, MAX_CAND>;
var<workgroup> cand_n: atomic<u32>;             // candidates in cand_s/cand_i
var<workgroup> fresh_n: atomic<u32>;            // a batch's fresh ids, in cand_i before scoring
var<workgroup> part: array<f32, PARTS>;         // the teams' partial dot products (two rounds)
var<workgroup> hash: array<atomic<u32>, MAX_HASH>;
var<workgroup> hash_n: atomic<u32>;             // ids the hash holds
var<workgroup> parents: array<u32, MAX_WIDTH>;
// Lane 0's word, read back uniformly: parents picked | 0x80000000 when the hash is reset; then
// the candidates kept.
var<workgroup> ctl: u32;

fn better(s1: f32, i1: u32, s2: f32, i2: u32) -> bool {
  return s1 < s2 || (s1 == s2 && i1 < i2);
}

fn allowed(v: u32) -> bool {
  if (!MASKED) {
    return true;
  }
  let b = p.mask_bit0 + v;
  return ((mask[b >> 5u] >> (b & 31u)) & 1u) != 0u;
}

// Adds id to the visited hash; true when it was not there yet.
fn hash_insert(id: u32) -> bool {
  let last = (1u << p.hash_bits) - 1u;
  var s = (id * HASH_MUL) >> (32u - p.hash_bits);
  loop {
    let r = atomicCompareExchangeWeak(&hash[s], PAD_ID, id);
    if (r.exchanged) {
      atomicAdd(&hash_n, 1u);
      return true;
    }
    if (r.old_value == id) {
      return false;
    }
    if (r.old_value != PAD_ID) {
      s = (s + 1u) & last;
    }
    // else a spurious failure of the weak exchange: the same slot again
  }
}

// Vec4s of a half row: ceil(dpad4 / 2). Where dpad4 is odd a row's last four halves are zeros, and
// q[dpad4] is zero (main sets it).
fn half_row_words4() -> u32 {
  return (p.dpad4 + 1u) / 2u;
}

// The query's dimensions 8 j .. 8 j + 7 times a row's word-quad j (eight halves).
fn half_terms(j: u32, w: vec4<u32>) -> vec4<f32> {
  return q[2u * j] * vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)) + q[2u * j + 1u] * vec4<f32>(unpack2x16float(w.z), unpack2x16float(w.w));
}

// Query r's dot product with row v over the vec4s (HALF: the word-quads) t, t + TEAM, t + 2 TEAM,
// ...: lane t of a team of TEAM (the team's lanes read one row, each its own stretch).
fn partial_dot(v: u32, t: u32) -> f32 {
  var acc = vec4<f32>(0.0);
  if (HALF) {
    let w4 = half_row_words4();
    if (v < p.row_split) {
      let h0 = v * w4;
      for (var j = t; j < w4; j += TEAM) {
        acc += half_terms(j, xb[h0 + j]);
      }
    } else {
      let h0 = (v - p.row_split) * w4;
      for (var j = t; j < w4; j += TEAM) {
        acc += half_terms(j, xb_hi[h0 + j]);
      }
    }
  } else {
    let x0 = v * p.dpad4;
    for (var j = t; j < p.dpad4; j += TEAM) {
      acc += q[j] * bitcast<vec4<f32>>(xb[x0 + j]);
    }
  }
  return (acc.x + acc.y) + (acc.z + acc.w);
}

fn score_of(v: u32, dot_qx: f32) -> f32 {
  if (METRIC == 0u) {
    return xnorm[v] - 2.0 * dot_qx;
  }
  return -dot_qx;
}

// A batch's first step, batch id v: if the hash did not hold it yet, it is a fresh id, appended to
// cand_i at an atomic counter (the order does not matter: see the header).
fn insert_fresh(v: u32) {
  if (v == PAD_ID || !hash_insert(v)) {
    return;
  }
  cand_i[atomicAdd(&fresh_n, 1u)] = v;
}

// A batch's second step, once every invocation has inserted its ids: each fresh id is scored by a
// team of TEAM lanes (their partial sums added in lane order by the team's first lane), and kept
// as a candidate when it would enter the list (better than the list's last entry: any other would
// be cut by the merge anyway). Kept candidates are compacted in place, in cand_s / cand_i from 0:
// a round of WG / TEAM fresh ids reads its ids before its barrier and writes the kept ones after
// it, below its own end (no more are kept than were read), where no later round reads. The
// partial sums alternate between two halves of `part`, so a round's writes never meet the last
// round's reads. Returns the candidates kept (uniform: the merge's barriers follow).
fn score_fresh(lid: u32) -> u32 {
  workgroupBarrier();
  if (lid == 0u) {
    ctl = atomicLoad(&fresh_n);
  }
  let nf = workgroupUniformLoad(&ctl);
  let team = lid / TEAM;
  let t = lid % TEAM;
  let last = p.itopk - 1u;
  var half = 0u;
  for (var c0 = 0u; c0 < nf; c0 += WG / TEAM) {
    let c = c0 + team;
    var v = PAD_ID;
    var d = 0.0;
    if (c < nf) {
      v = cand_i[c];
      d = partial_dot(v, t);
    }
    part[half + lid] = d;
    workgroupBarrier();
    if (t == 0u && c < nf) {
      var dot_qx = part[half + lid];
      for (var u = 1u; u < TEAM; u++) {
        dot_qx += part[half + lid + u];
      }
      let s = score_of(v, dot_qx);
      if (better(s, v, list_s[last], list_i[last])) {
        let j = atomicAdd(&cand_n, 1u);
        cand_s[j] = s;
        cand_i[j] = v;
      }
    }
    half = WG - half;
  }
  workgroupBarrier();
  if (lid == 0u) {
    ctl = atomicLoad(&cand_n);
  }
  return workgroupUniformLoad(&ctl);
}

// The list becomes the first itopk of [list, candidates 0 .. nc) in (score, id) order. Every id
// is distinct; the only equal entries are the list's empty ones, which keep their order. Called
// by every invocation, in uniform control flow.
fn merge(lid: u32, nc: u32) {
  let itopk = p.itopk;
  var ms: array<f32, PER_LANE>;
  var mi: array<u32, PER_LANE>;
  var mx: array<u32, PER_LANE>;
  var mr: array<u32, PER_LANE>;
  var m = 0u;
  for (var e = lid; e < itopk + nc; e += WG) {
    var s: f32;
    var id: u32;
    var x = 0u;
    var rank = 0u;
    if (e < itopk) {
      // The list is in order: e entries of it come first, and the candidates strictly better.
      s = list_s[e];
      id = list_i[e];
      x = list_x[e];
      rank = e;
      for (var c = 0u; c < nc; c++) {
        if (better(cand_s[c], cand_i[c], s, id)) {
          rank++;
        }
      }
    } else {
      // A candidate: the list entries better (none is equal: the ids differ), and the candidates.
      s = cand_s[e - itopk];
      id = cand_i[e - itopk];
      for (var j = 0u; j < itopk; j++) {
        if (better(list_s[j], list_i[j], s, id)) {
          rank++;
        }
      }
      for (var c = 0u; c < nc; c++) {
        if (better(cand_s[c], cand_i[c], s, id)) {
          rank++;
        }
      }
    }
    ms[m] = s;
    mi[m] = id;
    mx[m] = x;
    mr[m] = rank;
    m++;
  }
  workgroupBarrier();
  for (var t = 0u; t < m; t++) {
    let at = mr[t];
    if (at < itopk) {
      list_s[at] = ms[t];
      list_i[at] = mi[t];
      list_x[at] = mx[t];
    }
  }
  workgroupBarrier();
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) nwg: vec3<u32>) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) {
    return;
  }
  let inf = bitcast<f32>(INF_BITS);
  let slots = 1u << p.hash_bits;
  let qb = (p.q0 + row) * p.dpad4;
  for (var j = lid; j < p.dpad4; j += WG) {
    q[j] = xq[qb + j];
  }
  if (HALF && lid == 0u && p.dpad4 % 2u == 1u) {
    q[p.dpad4] = vec4<f32>(0.0); // a half row's last vec4 reads q[dpad4] (dpad4 < MAX_DPAD4: odd)
  }
  for (var i = lid; i < p.itopk; i += WG) {
    list_s[i] = inf;
    list_i[i] = PAD_ID;
    list_x[i] = 0u;
  }
  for (var s = lid; s < slots; s += WG) {
    atomicStore(&hash[s], PAD_ID);
  }
  if (lid == 0u) {
    atomicStore(&hash_n, 0u);
    atomicStore(&cand_n, 0u);
    atomicStore(&fresh_n, 0u);
  }
  workgroupBarrier();

  // 1. The query's seeds.
  let s0 = row * p.nseeds;
  for (var j = lid; j < p.nseeds; j += WG) {
    insert_fresh(io[s0 + j]);
  }
  merge(lid, score_fresh(lid));

  // 2. Expansions. Invocation 0 counts the ids scored: hash_n's inserts, less the list's ids
  // inserted again after a reset (`relisted`), which are not scored.
  var iterations = 0u;
  var scored = 0u;
  var relisted = 0u;
  loop {
    if (iterations >= p.max_iterations) {
      break;
    }
    if (lid == 0u) {
      var np = 0u;
      for (var i = 0u; i < p.itopk && np < p.search_width; i++) {
        if (list_i[i] != PAD_ID && list_x[i] == 0u) {
          list_x[i] = 1u;
          parents[np] = list_i[i];
          np++;
        }
      }
      let held = atomicLoad(&hash_n);
      let reset = np > 0u && held > slots / 2u;
      if (reset) {
        scored += held - relisted;
      }
      ctl = np | select(0u, 0x80000000u, reset);
      atomicStore(&cand_n, 0u);
      atomicStore(&fresh_n, 0u);
    }
    let c = workgroupUniformLoad(&ctl);
    let np = c & 0x7fffffffu;
    if (np == 0u) {
      break;
    }
    if ((c & 0x80000000u) != 0u) {
      for (var s = lid; s < slots; s += WG) {
        atomicStore(&hash[s], PAD_ID);
      }
      if (lid == 0u) {
        atomicStore(&hash_n, 0u);
      }
      workgroupBarrier();
      for (var i = lid; i < p.itopk; i += WG) {
        let v = list_i[i];
        if (v != PAD_ID) {
          _ = hash_insert(v);
        }
      }
      workgroupBarrier();
      if (lid == 0u) {
        relisted = atomicLoad(&hash_n);
      }
    }
    let nb = np * p.degree;
    for (var j = lid; j < nb; j += WG) {
      let parent = parents[j / p.degree];
      insert_fresh(graph[parent * p.degree + j % p.degree]);
    }
    merge(lid, score_fresh(lid));
    iterations++;
  }

  // 3. Output.
  let o = p.out0 + row * p.k;
  let oi = o + p.rows * p.k;
  if (!MASKED) {
    // Empty entries are (+inf, PAD_ID) already, and come last.
    for (var j = lid; j < p.k; j += WG) {
      io[o + j] = bitcast<u32>(list_s[j]);
      io[oi + j] = list_i[j];
    }
  } else if (lid == 0u) {
    var m = 0u;
    for (var i = 0u; i < p.itopk && m < p.k; i++) {
      let v = list_i[i];
      if (v != PAD_ID && allowed(v)) {
        io[o + m] = bitcast<u32>(list_s[i]);
        io[oi + m] = v;
        m++;
      }
    }
    for (; m < p.k; m++) {
      io[o + m] = INF_BITS;
      io[oi + m] = PAD_ID;
    }
  }
  if (lid == 0u && p.iter0 != PAD_ID) {
    io[p.iter0 + 2u * row] = iterations;
    io[p.iter0 + 2u * row + 1u] = scored + atomicLoad(&hash_n) - relisted;
  }
}
