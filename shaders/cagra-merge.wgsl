// cagra-merge.wgsl: CAGRA's final rows (cuVS graph_core.cuh, kern_merge_graph, without the MST
// edges cuVS may protect first): each node's pruned row merged with its reverse edges.
//   graph: the pruned graph (cagra-prune), n nodes, `degree` ids a row, PAD_ID after the last edge.
//   Node A = node0 + r's reverse edges: the keys k * n + s in edges[offsets[A] .. offsets[A + 1])
//   (edge s -> A at rank k of s's row: cagra-reverse), the `degree` smallest in key order, that is
//   by rank, then by source (cuVS appends them rank by rank, and within a rank in the order its
//   atomics run), taken as the sources s: rev[0 .. c), c = min(in-degree, degree).
//   Row A's first h = floor(degree / 2) entries are kept (P); then come the reverse edges not in P
//   (R), then the rest of A's row, less those in rev (F). Row out0 + r of out = the first `degree`
//   ids of P, R, F that are nodes (< n), then PAD_ID. Where A's row has no padding this is cuVS's
//   row: it inserts each reverse edge, last to first, at place h (moving it there when the row
//   holds it already, else dropping the row's last entry), which leaves P, then R, then F, cut
//   to `degree`. Rows have no repeated id and no self edge when the pruned rows have none.
// CPU twin: src/cpu/cagra-merge.ts.
// Method: the workgroup holds A's row and a histogram of its reverse edges' ranks; the smallest
// rank K whose running count reaches `degree` bounds the keys that can be among the first
// `degree` (every key of rank < K is); each key of rank <= K finds its place by counting the
// smaller keys of the range. Then flags say which of P, R, F stay, and one invocation writes the
// row in order. Deterministic: keys are distinct (a row holds each target once).
// Dispatch: one workgroup of WG invocations per node of the tile, folded into (x, y):
//   r = workgroup_id.x + workgroup_id.y * num_workgroups.x.
// Tiling (the plan): graph, offsets and edges are bound whole (the graph's words fit one binding);
// out holds the tile's rows from out0; tiles of at most maxComputeWorkgroupsPerDimension^2 nodes.

const DEG_CAP: u32 = 256u;  // CAGRA_MAX_DEGREE
const PAD_ID: u32 = 0xffffffffu;
override WG: u32 = 64u;

struct Params {
  n: u32,
  degree: u32,
  node0: u32,
  nodes: u32,
  out0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> graph: array<u32>;
@group(0) @binding(2) var<storage, read> offsets: array<u32>;
@group(0) @binding(3) var<storage, read> edges: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;

var<workgroup> fwd: array<u32, DEG_CAP>;
var<workgroup> rev: array<u32, DEG_CAP>;
var<workgroup> hist: array<atomic<u32>, DEG_CAP>;
// Whether entry q of P, R, F (P at q < h, R at h <= q < h + c, F after) stays.
var<workgroup> keep: array<u32, 2 * DEG_CAP>;
var<workgroup> cut: u32;

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
  let n = p.n;
  let degree = p.degree;
  let h = degree / 2u;
  for (var t = lid; t < degree; t += WG) {
    fwd[t] = graph[node * degree + t];
    atomicStore(&hist[t], 0u);
  }
  workgroupBarrier();
  let e0 = offsets[node];
  let len = offsets[node + 1u] - e0;
  for (var x = lid; x < len; x += WG) {
    atomicAdd(&hist[edges[e0 + x] / n], 1u);
  }
  workgroupBarrier();
  if (lid == 0u) {
    var k = 0u;
    var sum = 0u;
    for (; k < degree - 1u; k++) {
      sum += atomicLoad(&hist[k]);
      if (sum >= degree) {
        break;
      }
    }
    cut = k;  // ranks above cut: not among the first degree keys
  }
  let kmax = workgroupUniformLoad(&cut);
  for (var x = lid; x < len; x += WG) {
    let key = edges[e0 + x];
    if (key / n > kmax) {
      continue;
    }
    var place = 0u;
    for (var y = 0u; y < len; y++) {
      place += select(0u, 1u, edges[e0 + y] < key);
    }
    if (place < degree) {
      rev[place] = key % n;
    }
  }
  workgroupBarrier();
  let c = min(len, degree);
  for (var q = lid; q < degree + c; q += WG) {
    var stays = 0u;
    if (q < h) {
      stays = select(0u, 1u, fwd[q] < n);
    } else if (q < h + c) {
      let v = rev[q - h];
      stays = 1u;
      for (var t = 0u; t < h; t++) {
        if (fwd[t] == v) {
          stays = 0u;
          break;
        }
      }
    } else {
      let v = fwd[q - c];
      stays = select(0u, 1u, v < n);
      for (var t = 0u; t < c; t++) {
        if (rev[t] == v) {
          stays = 0u;
          break;
        }
      }
    }
    keep[q] = stays;
  }
  workgroupBarrier();
  if (lid == 0u) {
    let o = (p.out0 + r) * degree;
    var m = 0u;
    for (var q = 0u; q < degree + c && m < degree; q++) {
      if (keep[q] == 1u) {
        var v: u32;
        if (q < h) {
          v = fwd[q];
        } else if (q < h + c) {
          v = rev[q - h];
        } else {
          v = fwd[q - c];
        }
        out[o + m] = v;
        m++;
      }
    }
    for (; m < degree; m++) {
      out[o + m] = PAD_ID;
    }
  }
}
