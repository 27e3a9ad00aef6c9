// select-radix.wgsl: per row of a score tile, the k best (score, id) of the tile's row and the row's
// running list together: the row's new running list. For k too large for a private heap (topk.wgsl);
// after cuVS select_k (radix).
//   tile row r: scores[r * ldc .. + cols); column c has id id0 + c, or col_ids[id0 + c] when
//   use_ids == 1 (the ids of rows in storage order, such as an IVF chunk's)
//   running lists: run_in_*/run_out_*[(row0 + r) * k .. + k); run_in is ignored when first == 1;
//   padding entries (+inf, 0xffffffff) may sit anywhere in run_in. run_out must not alias run_in.
// CPU twin: src/cpu/select-radix.ts.
// Order: (score, id) ascending, equal scores break on the smaller id; -0 and +0 are equal scores.
// Ids are distinct, except PAD_ID. Output: the selected entries other than padding first, in no
// particular order (each takes a slot from a workgroup atomic counter), then (+inf, 0xffffffff) up
// to k, so a reader can stop at the first PAD_ID; the host sorts where order matters.
// Method: each score becomes an order-preserving u32 key (order_key). Tile entries whose key
// exceeds every key of the running list (the bound) cannot be selected and are skipped; after the
// first tiles few pass, and when at most CAP do, their keys and columns are kept in workgroup
// memory (else every pass reads the tile again). Radix passes over 8-bit digits, most significant
// first: the workgroup counts, in a histogram in workgroup memory, the entries whose key matches
// the digits fixed so far, and fixes the digit of the bin holding the need-th entry; it stops when
// a bin holds exactly the entries still needed (all of it is taken) or the key is complete (K*).
// Ties at K* beyond what is needed are cut the same way on the ids of the entries whose key is K*
// (I*), so the cut is exact. A final pass writes the entries with key < K*, or key == K* and
// id <= I*. The decisions that steer the passes come from workgroupUniformLoad, so the barriers
// stay in uniform control flow.
// Dispatch: one workgroup of WG invocations per row, folded into (x, y):
//   row = workgroup_id.x + workgroup_id.y * num_workgroups.x.

override WG: u32 = 256u;

// Bins per pass (8-bit digits), and bins summed per invocation when the bin is looked for.
const RADIX: u32 = 256u;
const SPAN: u32 = 16u;
// Tile entries kept in workgroup memory (key and column: 12 KiB) when no more pass the bound.
const CAP: u32 = 1536u;
const PAD_ID: u32 = 0xffffffffu;
// +inf, read from a variable: a constant expression may not evaluate to inf.
var<private> INF_BITS: u32 = 0x7f800000u;

struct Params {
  rows: u32,
  cols: u32,   // valid columns in the tile
  ldc: u32,    // row stride of scores
  k: u32,
  first: u32,  // 1: there is no running list yet
  row0: u32,   // first row of the running lists
  id0: u32,    // id of column 0, or its index in col_ids
  use_ids: u32,
}

// The bin holding the need-th entry of a pass, the entries in the bins below it, and its count.
struct Found {
  bin: u32,
  below: u32,
  count: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> scores: array<f32>;
@group(0) @binding(2) var<storage, read> col_ids: array<u32>;
@group(0) @binding(3) var<storage, read> run_in_s: array<f32>;
@group(0) @binding(4) var<storage, read> run_in_i: array<u32>;
@group(0) @binding(5) var<storage, read_write> run_out_s: array<f32>;
@group(0) @binding(6) var<storage, read_write> run_out_i: array<u32>;

var<workgroup> hist: array<atomic<u32>, RADIX>;
var<workgroup> span_sum: array<u32, RADIX / SPAN>;
var<workgroup> found: Found;
var<workgroup> bound: atomic<u32>;
// Tile entries that pass the bound: their count (also past CAP) and, up to CAP, key and column.
var<workgroup> passed: atomic<u32>;
var<workgroup> passed_n: u32;
var<workgroup> cand_key: array<u32, CAP>;
var<workgroup> cand_col: array<u32, CAP>;
var<workgroup> taken: atomic<u32>;

// Keys compare as unsigned integers as the scores compare: negative floats have all bits flipped,
// others the sign bit; -0 gets the key of +0.
fn order_key(s: f32) -> u32 {
  let b = bitcast<u32>(s);
  if ((b << 1u) == 0u) {
    return 0x80000000u;
  }
  if ((b & 0x80000000u) != 0u) {
    return ~b;
  }
  return b | 0x80000000u;
}

fn col_id(c: u32) -> u32 {
  if (p.use_ids == 1u) {
    return col_ids[p.id0 + c];
  }
  return p.id0 + c;
}

// The pass's digit of an entry that matches the digits fixed so far, or RADIX.
fn digit_of(key: u32, id: u32, by_id: bool, kstar: u32, prefix: u32, mask: u32, shift: u32) -> u32 {
  if (by_id) {
    if (key == kstar && (id & mask) == prefix) {
      return (id >> shift) & 0xffu;
    }
  } else if ((key & mask) == prefix) {
    return (key >> shift) & 0xffu;
  }
  return RADIX;
}

fn count(key: u32, id: u32, by_id: bool, kstar: u32, prefix: u32, mask: u32, shift: u32) {
  let d = digit_of(key, id, by_id, kstar, prefix, mask, shift);
  if (d < RADIX) {
    atomicAdd(&hist[d], 1u);
  }
}

// Writes (s, id) to the row's next slot of run_out if it is selected and not padding.
fn emit(s: f32, key: u32, id: u32, kstar: u32, istar: u32, base: u32) {
  if (id != PAD_ID && (key < kstar || (key == kstar && id <= istar))) {
    let slot = atomicAdd(&taken, 1u);
    // Exactly the k best are selected; the guard keeps a wrong cut inside the row.
    if (slot < p.k) {
      run_out_s[base + slot] = s;
      run_out_i[base + slot] = id;
    }
  }
}

@compute @workgroup_size(WG)
fn main(
  @builtin(local_invocation_index) lid: u32,
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
) {
  let r = wid.x + wid.y * nwg.x;
  if (r >= p.rows) {
    return;
  }
  let k = p.k;
  let kr = select(k, 0u, p.first == 1u);  // running-list entries
  let run0 = (p.row0 + r) * k;
  let tile0 = r * p.ldc;
  if (lid == 0u) {
    atomicStore(&bound, 0u);
    atomicStore(&passed, 0u);
    atomicStore(&taken, 0u);
  }
  workgroupBarrier();
  // Tile entries that can be selected (nc of them, those with key <= b); when at most CAP, later
  // passes read them (key and column) from workgroup memory instead of the tile.
  var b = 0xffffffffu;
  var nc = p.cols;
  if (kr == 0u) {
    // First tile: every entry.
    for (var c = lid; nc <= CAP && c < nc; c += WG) {
      cand_key[c] = order_key(scores[tile0 + c]);
      cand_col[c] = c;
    }
  } else {
    // The bound: the running list's largest key. A tile entry above it is worse than all k
    // entries of the running list: it can never be selected, and is skipped.
    var most = 0u;
    for (var j = lid; j < kr; j += WG) {
      most = max(most, order_key(run_in_s[run0 + j]));
    }
    atomicMax(&bound, most);
    workgroupBarrier();
    b = atomicLoad(&bound);
    for (var c = lid; c < p.cols; c += WG) {
      let key = order_key(scores[tile0 + c]);
      if (key <= b) {
        let t = atomicAdd(&passed, 1u);
        if (t < CAP) {
          cand_key[t] = key;
          cand_col[t] = c;
        }
      }
    }
    workgroupBarrier();
    if (lid == 0u) {
      passed_n = atomicLoad(&passed);
    }
    nc = workgroupUniformLoad(&passed_n);
  }
  workgroupBarrier();
  let compact = nc <= CAP;
  // The cut: selected are key < kstar, or key == kstar and id <= istar (everything when no more
  // than k entries are left).
  var kstar = 0xffffffffu;
  var istar = PAD_ID;
  if (kr + nc > k) {
    var prefix = 0u;  // digits fixed so far: of the key (digits 0-3), then of the id among keys == kstar (4-7)
    var mask = 0u;
    var need = k;     // entries still to take among those matching the prefix
    for (var digit = 0u; digit < 8u; digit++) {
      let by_id = digit >= 4u;
      let shift = 24u - 8u * (digit % 4u);
      if (digit == 4u) {
        kstar = prefix;
        prefix = 0u;
        mask = 0u;
      }
      for (var i = lid; i < RADIX; i += WG) {
        atomicStore(&hist[i], 0u);
      }
      workgroupBarrier();
      if (compact) {
        for (var t = lid; t < nc; t += WG) {
          count(cand_key[t], col_id(cand_col[t]), by_id, kstar, prefix, mask, shift);
        }
      } else {
        for (var c = lid; c < p.cols; c += WG) {
          let key = order_key(scores[tile0 + c]);
          if (key <= b) {
            count(key, col_id(c), by_id, kstar, prefix, mask, shift);
          }
        }
      }
      for (var j = lid; j < kr; j += WG) {
        count(order_key(run_in_s[run0 + j]), run_in_i[run0 + j], by_id, kstar, prefix, mask, shift);
      }
      workgroupBarrier();
      for (var g = lid; g < RADIX / SPAN; g += WG) {
        var sum = 0u;
        for (var i = g * SPAN; i < (g + 1u) * SPAN; i++) {
          sum += atomicLoad(&hist[i]);
        }
        span_sum[g] = sum;
      }
      workgroupBarrier();
      if (lid == 0u) {
        // The histogram holds at least `need` entries; the bounds only guard against a hang.
        var below = 0u;
        var g = 0u;
        while (g + 1u < RADIX / SPAN && below + span_sum[g] < need) {
          below += span_sum[g];
          g++;
        }
        var i = g * SPAN;
        while (i + 1u < (g + 1u) * SPAN && below + atomicLoad(&hist[i]) < need) {
          below += atomicLoad(&hist[i]);
          i++;
        }
        found = Found(i, below, atomicLoad(&hist[i]));
      }
      let f = workgroupUniformLoad(&found);
      need -= f.below;
      prefix |= f.bin << shift;
      mask |= 0xffu << shift;
      if (f.count == need || digit == 7u) {
        // Every entry left matching the prefix is taken.
        if (by_id) {
          istar = prefix | ~mask;
        } else {
          kstar = prefix | ~mask;
        }
        break;
      }
    }
  }
  if (compact) {
    for (var t = lid; t < nc; t += WG) {
      let c = cand_col[t];
      emit(scores[tile0 + c], cand_key[t], col_id(c), kstar, istar, run0);
    }
  } else {
    for (var c = lid; c < p.cols; c += WG) {
      let s = scores[tile0 + c];
      let key = order_key(s);
      if (key <= b) {
        emit(s, key, col_id(c), kstar, istar, run0);
      }
    }
  }
  for (var j = lid; j < kr; j += WG) {
    let s = run_in_s[run0 + j];
    emit(s, order_key(s), run_in_i[run0 + j], kstar, istar, run0);
  }
  workgroupBarrier();
  let inf = bitcast<f32>(INF_BITS);
  for (var j = min(atomicLoad(&taken), k) + lid; j < k; j += WG) {
    run_out_s[run0 + j] = inf;
    run_out_i[run0 + j] = PAD_ID;
  }
}
