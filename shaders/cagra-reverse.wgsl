// cagra-reverse.wgsl: the reverse edges of a pruned CAGRA graph (cuVS graph_core.cuh,
// kern_make_rev_graph_k), as lists by target, for sources node0 .. node0 + nodes - 1.
//   graph: n nodes, `degree` ids a row (PAD_ID after the last edge); edge s -> t at rank k.
//   SCATTER false: counts[t] += 1 for every edge s -> t (t < n).
//   SCATTER true (after every source was counted and cagra-offsets turned counts into offsets):
//   the edge is stored as the key k * n + s at slot offsets[t] + c - 1 of edges, c the value
//   atomicSub takes from counts[t] (so counts end at zero). Keys fit u32: k * n + s < degree * n,
//   the words of the graph, which fit one binding.
// CPU twin: src/cpu/cagra-reverse.ts.
// Order: counts and each target's range [offsets[t], offsets[t + 1]) of edges (the same keys) do
// not depend on the order the atomics run in; which slot of its range an edge takes does, and
// nothing reads it: cagra-merge takes a range's keys in key order (rank, then source), where cuVS
// appends them rank by rank and, within a rank, in the order its atomics run.
// Dispatch: one invocation per (source, rank) of the tile, 1-D, folded into (x, y):
//   invocation = gid.x + gid.y * num_workgroups.x * WG; source node0 + invocation / degree.
// Tiling (the plan): graph, edges (n * degree words at most) and counts are bound whole; any tile
// of sources will do (at most maxComputeWorkgroupsPerDimension^2 * WG edges a dispatch). Count
// every tile, cagra-offsets, then scatter every tile, then cagra-merge.

override WG: u32 = 64u;
override SCATTER: bool = false;

struct Params {
  n: u32,
  degree: u32,
  node0: u32,
  nodes: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> graph: array<u32>;
@group(0) @binding(2) var<storage, read_write> counts: array<atomic<u32>>;
// Read, and edges written, only with SCATTER; the counting pipeline still declares them (an
// override does not change what a shader statically uses), which the encoder fills with any buffer.
@group(0) @binding(3) var<storage, read> offsets: array<u32>;
@group(0) @binding(4) var<storage, read_write> edges: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let inv = gid.x + gid.y * nwg.x * WG;
  if (inv >= p.nodes * p.degree) {
    return;
  }
  let s = p.node0 + inv / p.degree;
  let k = inv % p.degree;
  let t = graph[s * p.degree + k];
  if (t >= p.n) {  // PAD_ID: no edge
    return;
  }
  if (SCATTER) {
    let c = atomicSub(&counts[t], 1u);
    edges[offsets[t] + c - 1u] = k * p.n + s;
  } else {
    atomicAdd(&counts[t], 1u);
  }
}
