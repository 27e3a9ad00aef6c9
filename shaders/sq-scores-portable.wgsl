// sq-scores-portable.wgsl: the score tile of a block of queries against a block of
// scalar-quantised base vectors, decoded in registers; what it computes, the code layouts and the
// dispatch are as in sq-scores.wgsl (CPU twin: src/cpu/sq-scores.ts). The variant for devices
// without subgroups of at least 8 lanes: every invocation loads its workgroup's QB = 8 query rows
// itself (the same addresses across the workgroup) instead of one row a lane and broadcasts.

override WG: u32 = 64u;

//!include sq-scores-core.wgsl

// Offsets of query rows r .. r + 7 (clamped; set by main).
var<private> a0: u32; var<private> a1: u32; var<private> a2: u32; var<private> a3: u32;
var<private> a4: u32; var<private> a5: u32; var<private> a6: u32; var<private> a7: u32;

fn load_queries(s: u32) {
  q0 = xq[a0 + s]; q1 = xq[a1 + s]; q2 = xq[a2 + s]; q3 = xq[a3 + s];
  q4 = xq[a4 + s]; q5 = xq[a5 + s]; q6 = xq[a6 + s]; q7 = xq[a7 + s];
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let r = wid.y * QB;
  let rl = p.rows - 1u;
  a0 = (p.q0 + min(r, rl)) * p.dpad4;
  a1 = (p.q0 + min(r + 1u, rl)) * p.dpad4;
  a2 = (p.q0 + min(r + 2u, rl)) * p.dpad4;
  a3 = (p.q0 + min(r + 3u, rl)) * p.dpad4;
  a4 = (p.q0 + min(r + 4u, rl)) * p.dpad4;
  a5 = (p.q0 + min(r + 5u, rl)) * p.dpad4;
  a6 = (p.q0 + min(r + 6u, rl)) * p.dpad4;
  a7 = (p.q0 + min(r + 7u, rl)) * p.dpad4;
  scan_and_store(r, p.c_first + gid.x * CB);
}
