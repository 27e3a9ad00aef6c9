// cagra-prune.wgsl: CAGRA's rank-based pruning (Ootomo et al., arXiv 2308.15136; cuVS
// cpp/src/neighbors/detail/cagra/graph_core.cuh, kern_fused_prune) of a tile of nodes of an
// intermediate kNN graph: each node keeps the `degree` edges of its row with the fewest detours.
//   kNN graph: n nodes, kin ids a row, best first (by distance, ties on the smaller id), PAD_ID
//   after the last neighbour. Node A = node0 + r (r < nodes) reads its row at a[(a0 + r) * kin ..].
//   Entry j of A's row is an edge when its id is a node (< n), not A itself, and not already at an
//   earlier rank of the row (cuVS lowers a self edge's priority instead; our rows have none).
//   Detours of edge j (A -> B): the edges D at ranks i < j whose rows hold B at any rank, each
//   occurrence counted (cuVS counts B anywhere in D's row: its `kDB < kAB` test is commented out,
//   where the paper's rule would also ask B's rank in D's row to be below j). D's row is
//   d[(D - d0) * kin ..] when d0 <= D < d0 + drows; a D outside those rows is counted by another
//   call. Counts accumulate in detours[r * kin + j]: zeroed first when first == 1, added to by
//   every call.
//   last == 1: node A keeps its `degree` edges with the fewest detours, ties by the smaller rank,
//   in that order (fewest detours first; cuVS writes them in the order it selects them), to
//   out[(out0 + r) * degree ..], PAD_ID after the last edge; detours of entries that are not
//   edges become PAD_ID.
// CPU twin: src/cpu/cagra-prune.ts.
// Method, O(kin^2) a node: the workgroup holds A's row and a hash of it (id -> its first rank) in
// workgroup memory; invocations share the (i, l) pairs of edge D = row[i] and entry E = D's l-th
// id, and E's rank j in A's row, when j > i, gains a detour (a workgroup atomic add: counts do not
// depend on the order). Then each edge's place = the number of edges whose (detours, rank) is
// smaller: no ties, since ranks differ. Deterministic.
// Dispatch: one workgroup of WG invocations per node of the tile, folded into (x, y):
//   r = workgroup_id.x + workgroup_id.y * num_workgroups.x.
// Tiling (the plan): the a and d rows must each fit one binding, and detours (nodes * kin words)
// and out too. Where the whole graph fits one binding, one call a tile: a = d = the graph,
// a0 = node0, d0 = 0, drows = n, first = last = 1. Where it does not, the graph's rows are split
// in chunks that fit; a tile lies within one chunk (a = that chunk, a0 = node0 - its first node)
// and is called once per chunk c (d = chunk c, d0 = its first node, drows = its rows), first on
// the first call, last on the last: the counts add up across calls, so the result is the same.
// Tiles of at most maxComputeWorkgroupsPerDimension^2 nodes fold into one dispatch.

const KIN_CAP: u32 = 64u;  // the next power of two >= kin (and >= 16), at most CAGRA_MAX_KIN
const HASH_CAP: u32 = 2u * KIN_CAP;
const PAD_ID: u32 = 0xffffffffu;
override WG: u32 = 64u;

struct Params {
  n: u32,
  kin: u32,
  degree: u32,
  node0: u32,
  nodes: u32,
  a0: u32,     // row of a holding node node0's
  d0: u32,     // node of d's first row
  drows: u32,  // rows in d
  out0: u32,   // row of out for node node0
  first: u32,
  last: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> d: array<u32>;
@group(0) @binding(3) var<storage, read_write> detours: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;

// A's row (PAD_ID where an entry is not an edge, once the hash is built).
var<workgroup> ids: array<u32, KIN_CAP>;
// Open addressing, linear probing: id (PAD_ID: empty slot) -> its first rank in A's row.
var<workgroup> hash_id: array<atomic<u32>, HASH_CAP>;
var<workgroup> hash_rank: array<atomic<u32>, HASH_CAP>;
var<workgroup> det: array<atomic<u32>, KIN_CAP>;
// (detours << 8) | rank of each edge, PAD_ID for the other entries.
var<workgroup> order: array<u32, KIN_CAP>;
var<workgroup> edges: atomic<u32>;

fn slot_of(id: u32) -> u32 {
  // Fibonacci hashing: the top log2(HASH_CAP) bits of id * 2^32 / phi.
  return (id * 0x9e3779b1u) >> (32u - countTrailingZeros(HASH_CAP));
}

fn insert(id: u32, rank: u32) {
  var s = slot_of(id);
  loop {
    let r = atomicCompareExchangeWeak(&hash_id[s], PAD_ID, id);
    if (r.exchanged || r.old_value == id) {
      atomicMin(&hash_rank[s], rank);
      return;
    }
    if (r.old_value != PAD_ID) {
      s = (s + 1u) & (HASH_CAP - 1u);
    }
    // else: a spurious failure of the weak exchange; try the same slot again.
  }
}

// The first rank of id in A's row, or PAD_ID when the row does not hold it (id < n, not A).
fn rank_of(id: u32) -> u32 {
  var s = slot_of(id);
  loop {
    let k = atomicLoad(&hash_id[s]);
    if (k == id) {
      return atomicLoad(&hash_rank[s]);
    }
    if (k == PAD_ID) {
      return PAD_ID;
    }
    s = (s + 1u) & (HASH_CAP - 1u);
  }
}

@compute @workgroup_size(WG)
fn main(
  @builtin(local_invocation_index) lid: u32,
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
) {
  let r = wid.x + wid.y * nwg.x;
  if (r >= p.nodes) {
    return;
  }
  let node = p.node0 + r;
  let kin = p.kin;
  let n = p.n;
  for (var s = lid; s < HASH_CAP; s += WG) {
    atomicStore(&hash_id[s], PAD_ID);
    atomicStore(&hash_rank[s], PAD_ID);
  }
  for (var j = lid; j < kin; j += WG) {
    ids[j] = a[(p.a0 + r) * kin + j];
    var c = 0u;
    if (p.first == 0u) {
      c = detours[r * kin + j];
    }
    atomicStore(&det[j], c);
  }
  if (lid == 0u) {
    atomicStore(&edges, 0u);
  }
  workgroupBarrier();
  for (var j = lid; j < kin; j += WG) {
    let id = ids[j];
    if (id < n && id != node) {
      insert(id, j);
    }
  }
  workgroupBarrier();
  // Entries that are not edges (padding, A, a repeat) read as padding from here on. Each
  // invocation rewrites only its own entries, and lookups read the hash, not ids.
  for (var j = lid; j < kin; j += WG) {
    let id = ids[j];
    if (id >= n || id == node || rank_of(id) != j) {
      ids[j] = PAD_ID;
    }
  }
  workgroupBarrier();
  // Detours: D = ids[i] (i < kin - 1, an edge, its row in d), E = D's l-th id.
  let pairs = (kin - 1u) * kin;
  for (var t = lid; t < pairs; t += WG) {
    let i = t / kin;
    let l = t - i * kin;
    let dv = ids[i] - p.d0;  // PAD_ID and nodes below d0 fall outside [0, drows)
    if (dv >= p.drows) {
      continue;
    }
    let e = d[dv * kin + l];
    if (e >= n) {
      continue;
    }
    let j = rank_of(e);
    if (j != PAD_ID && j > i) {
      atomicAdd(&det[j], 1u);
    }
  }
  workgroupBarrier();
  if (p.last == 0u) {
    for (var j = lid; j < kin; j += WG) {
      detours[r * kin + j] = atomicLoad(&det[j]);
    }
    return;
  }
  for (var j = lid; j < kin; j += WG) {
    let c = atomicLoad(&det[j]);
    if (ids[j] == PAD_ID) {
      order[j] = PAD_ID;
      detours[r * kin + j] = PAD_ID;
    } else {
      order[j] = (c << 8u) | j;  // j < kin <= 256; c <= (kin - 1) * kin < 2^24
      detours[r * kin + j] = c;
      atomicAdd(&edges, 1u);
    }
  }
  workgroupBarrier();
  let o = (p.out0 + r) * p.degree;
  for (var j = lid; j < kin; j += WG) {
    let key = order[j];
    if (key == PAD_ID) {
      continue;
    }
    var place = 0u;
    for (var k = 0u; k < kin; k++) {
      place += select(0u, 1u, order[k] < key);
    }
    if (place < p.degree) {
      out[o + place] = ids[j];
    }
  }
  for (var q = atomicLoad(&edges) + lid; q < p.degree; q += WG) {
    out[o + q] = PAD_ID;
  }
}
