import { PAD_ID } from '../kernel-facts.js';

/**
 * CPU twin of shaders/select-radix.wgsl: for each row of a score tile, the k best (score, id) of
 * the tile's row and the row's running list together: the row's new running list.
 *
 * Layout: `scores[r * ldc + c]` for r < rows, c < cols; the id of column c is `id0 + c`, or
 * `colIds[id0 + c]` when given (the ids of rows in storage order, such as an IVF chunk's).
 * `runInS/runInI`: `rows * k` (row r at `r * k`), or null for "no running list yet" (first tile);
 * padding entries are (+Infinity, PAD_ID), anywhere in the row.
 * `runOutS/runOutI`: `rows * k`; must not alias the inputs.
 * Order: (score, id) ascending, equal scores break on the smaller id; -0 and +0 are equal scores.
 * Ids are distinct, except PAD_ID.
 * Output: the selected entries other than padding first, then (+Infinity, PAD_ID) up to k, so a
 * reader can stop at the first PAD_ID. The selected entries are in no particular order (the GPU
 * writes them in the order its invocations take slots; this twin in input order: tile columns,
 * then the running list); sort them by (score, id) where order matters (sortLists).
 *
 * Method (as on the GPU): each score becomes an order-preserving u32 key (orderKey); tile entries
 * whose key exceeds every key of the running list are skipped (they cannot be selected); radix passes
 * over 8-bit digits, most significant first, count the entries whose key matches the digits fixed
 * so far and fix the digit of the bin holding the `need`-th entry, until a bin holds exactly the
 * entries still needed (all of it is taken) or the key is complete (K*). Ties at K* beyond what is
 * needed are cut the same way on the ids of the entries whose key is K* (I*). Selected: key < K*,
 * or key == K* and id <= I*.
 */
export function selectRadix(
  scores: Float32Array,
  ldc: number,
  rows: number,
  cols: number,
  id0: number,
  colIds: Uint32Array | null,
  k: number,
  runInS: Float32Array | null,
  runInI: Uint32Array | null,
  runOutS: Float32Array,
  runOutI: Uint32Array,
): void {
  const keys = new Uint32Array(cols + k);
  const ids = new Uint32Array(cols + k);
  const vals = new Float32Array(cols + k);
  const scoreBits = new Uint32Array(scores.buffer, scores.byteOffset, scores.length);
  const runBits = runInS ? new Uint32Array(runInS.buffer, runInS.byteOffset, runInS.length) : null;
  const hist = new Uint32Array(RADIX);
  for (let r = 0; r < rows; r++) {
    // The bound: the running list's largest key. A tile entry above it is worse than all k
    // entries of the running list: it can never be selected, and is skipped.
    let bound = 0xffffffff;
    if (runBits) {
      bound = 0;
      for (let j = r * k; j < (r + 1) * k; j++) bound = Math.max(bound, orderKey(runBits[j]));
    }
    let n = 0;
    for (let c = 0; c < cols; c++) {
      const key = orderKey(scoreBits[r * ldc + c]);
      if (key > bound) continue;
      keys[n] = key;
      ids[n] = colIds ? colIds[id0 + c] : id0 + c;
      vals[n++] = scores[r * ldc + c];
    }
    for (let j = r * k; runInS && runInI && runBits && j < (r + 1) * k; j++) {
      keys[n] = orderKey(runBits[j]);
      ids[n] = runInI[j];
      vals[n++] = runInS[j];
    }
    const { kstar, istar } = n > k ? radixCut(keys, ids, n, k, hist) : { kstar: 0xffffffff, istar: PAD_ID };
    let m = 0;
    for (let j = 0; j < n; j++) {
      if (ids[j] !== PAD_ID && (keys[j] < kstar || (keys[j] === kstar && ids[j] <= istar))) {
        runOutS[r * k + m] = vals[j];
        runOutI[r * k + m] = ids[j];
        m++;
      }
    }
    runOutS.fill(Infinity, r * k + m, (r + 1) * k);
    runOutI.fill(PAD_ID, r * k + m, (r + 1) * k);
  }
}

/** Bins per radix pass (8-bit digits). WGSL: `RADIX`. */
const RADIX = 256;

/**
 * The order-preserving key of a float's bits `b`: keys compare as unsigned integers as the floats
 * compare (negative floats have all bits flipped, others the sign bit); -0 gets the key of +0.
 */
export function orderKey(b: number): number {
  if (b << 1 === 0) return 0x80000000;
  return (b & 0x80000000 ? ~b : b | 0x80000000) >>> 0;
}

/**
 * The cut of the k best of the `n` > k entries (keys, ids): K* and I* such that exactly the k
 * best are those with key < K*, or key == K* and id <= I* (counting padding entries, which are
 * never written, as distinct). `hist` is RADIX counters of scratch.
 */
function radixCut(keys: Uint32Array, ids: Uint32Array, n: number, k: number, hist: Uint32Array): { kstar: number; istar: number } {
  let kstar = 0;
  let prefix = 0; // digits fixed so far: of the key (passes 0-3), then of the id among keys == K* (4-7)
  let mask = 0;
  let need = k; // entries still to take among those matching the prefix
  for (let pass = 0; ; pass++) {
    const byId = pass >= 4;
    const shift = 24 - 8 * (pass % 4);
    if (pass === 4) {
      kstar = prefix;
      prefix = 0;
      mask = 0;
    }
    hist.fill(0);
    for (let j = 0; j < n; j++) {
      if (byId) {
        if (keys[j] === kstar && (ids[j] & mask) >>> 0 === prefix) hist[(ids[j] >>> shift) & 0xff]++;
      } else if ((keys[j] & mask) >>> 0 === prefix) hist[(keys[j] >>> shift) & 0xff]++;
    }
    let bin = 0;
    while (hist[bin] < need) need -= hist[bin++];
    prefix = (prefix | (bin << shift)) >>> 0;
    mask = (mask | (0xff << shift)) >>> 0;
    if (hist[bin] === need || pass === 7) {
      // Every entry left matching the prefix is taken.
      const all = (prefix | ~mask) >>> 0;
      return byId ? { kstar, istar: all } : { kstar: all, istar: PAD_ID };
    }
  }
}
