// cagra-offsets.wgsl: exclusive prefix sums of n u32 counts (a CAGRA graph's in-degrees, into the
// offsets of its reverse-edge lists: cagra-reverse.wgsl).
//   offsets[i] = counts[0] + .. + counts[i - 1] for i <= n; offsets[n] is the total.
// CPU twin: src/cpu/cagra-offsets.ts. Integer sums, so exact in any order; this one is fixed.
// Method: one workgroup. Invocation v sums its run [v * per, (v + 1) * per) of the counts
// (per = ceil(n / WG)), the workgroup scans the WG sums in workgroup memory (Hillis-Steele), and
// each invocation writes its run's offsets from its sum's prefix.
// Dispatch: one workgroup of WG invocations, whatever n (n + 1 words of offsets fit one binding).

override WG: u32 = 256u;

struct Params {
  n: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> counts: array<u32>;
@group(0) @binding(2) var<storage, read_write> offsets: array<u32>;

var<workgroup> sums: array<u32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32) {
  let n = p.n;
  let per = (n + WG - 1u) / WG;
  let lo = min(n, lid * per);
  let hi = min(n, lo + per);
  var run = 0u;
  for (var i = lo; i < hi; i++) {
    run += counts[i];
  }
  sums[lid] = run;
  workgroupBarrier();
  // Inclusive scan of sums.
  for (var step = 1u; step < WG; step *= 2u) {
    var add = 0u;
    if (lid >= step) {
      add = sums[lid - step];
    }
    workgroupBarrier();
    sums[lid] += add;
    workgroupBarrier();
  }
  var at = sums[lid] - run;
  for (var i = lo; i < hi; i++) {
    offsets[i] = at;
    at += counts[i];
  }
  if (lid == WG - 1u) {
    offsets[n] = sums[lid];
  }
}
