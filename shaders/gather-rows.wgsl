// gather-rows.wgsl: copies chosen rows of one store chunk into a compact buffer, word for word.
//   out[(out0 + i) * words + w] = x[rows[rows0 + i] * words + w]   for i in [0, n), w in [0, words)
// CPU twin: src/cpu/gather-rows.ts. Words are copied as u32, so float rows and packed codes come
// out bit for bit. What the exact re-score reads where a store keeps no host copy of its rows
// (src/stores/rows.ts): one dispatch a chunk and one readback, instead of a copy command a row.
// Dispatch: one invocation per output word, 1-D, folded into (x, y) when the words exceed
// maxComputeWorkgroupsPerDimension * WG; invocation index = gid.x + gid.y * num_workgroups.x * WG.

override WG: u32 = 64u;

struct Params {
  n: u32,      // rows to copy
  words: u32,  // words a row
  rows0: u32,  // first entry of rows to read
  out0: u32,   // first row of out to write
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read> rows: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let t = gid.x + gid.y * nwg.x * WG;
  if (t >= p.n * p.words) {
    return;
  }
  let i = t / p.words;
  let w = t - i * p.words;
  out[(p.out0 + i) * p.words + w] = x[rows[p.rows0 + i] * p.words + w];
}
