import type { KernelMetric } from '../kernel-facts.js';
import { PAD_ID } from '../kernel-facts.js';
import { checkGraphSearchArgs, halfRowWords } from '../device.js';
import { halfToFloat } from '../common/fp16.js';
import { InvalidArgumentError } from '../errors.js';
import { maskAllows } from './mask-scores.js';

/** graph-search's arguments on host arrays (src/device.ts GraphSearchArgs, whose fields they are). */
export interface GraphSearchHost {
  metric: KernelMetric;
  xq: Float32Array;
  q0: number;
  rows: number;
  /** Float32 rows (dpad a row), or with `half` the half rows' words (halfRowWords(dpad) a row). */
  xb: Float32Array | Uint32Array;
  xnorm: Float32Array;
  half?: boolean;
  /** With `half`, the half rows' words from row `rowSplit` on (GraphSearchArgs); null or absent: none. */
  xbHi?: Uint32Array | null;
  rowSplit?: number;
  graph: Uint32Array;
  degree: number;
  n: number;
  seeds: Uint32Array;
  nseeds: number;
  mask: Uint32Array | null;
  maskBit0: number;
  dpad: number;
  itopk: number;
  searchWidth: number;
  /** Checked, then ignored: a GPU's lanes a row (GraphSearchArgs.team); the twin sums in float64, in one order. */
  team?: number;
  maxIterations: number;
  hashBits: number;
  k: number;
  outS: Float32Array;
  outI: Uint32Array;
  outWork?: Uint32Array | null;
}

/** The visited hash's multiplier (Fibonacci hashing: 2^32 / golden ratio, odd). WGSL: `HASH_MUL`. */
export const GRAPH_HASH_MUL = 0x9e3779b1;

/** The slot where id's linear probe starts in a hash of 2^hashBits slots: the top bits of id * GRAPH_HASH_MUL mod 2^32. */
export function graphHashSlot(id: number, hashBits: number): number {
  return Math.imul(id, GRAPH_HASH_MUL) >>> (32 - hashBits);
}

/** The visited set: open addressing, linear probing, PAD_ID marks an empty slot (ids never are PAD_ID). */
class VisitedHash {
  private readonly slots: Uint32Array;
  /** Ids held. */
  count = 0;

  constructor(private readonly bits: number) {
    this.slots = new Uint32Array(2 ** bits).fill(PAD_ID);
  }

  clear(): void {
    this.slots.fill(PAD_ID);
    this.count = 0;
  }

  /** Whether the table is more than half full (then the search resets it before the next batch). */
  get overHalf(): boolean {
    return this.count > this.slots.length / 2;
  }

  /** Adds id; true when it was not there yet. checkGraphSearchArgs keeps a slot free for every id added. */
  insert(id: number): boolean {
    const last = this.slots.length - 1;
    for (let s = graphHashSlot(id, this.bits); ; s = (s + 1) & last) {
      if (this.slots[s] === id) return false;
      if (this.slots[s] === PAD_ID) {
        this.slots[s] = id;
        this.count++;
        return true;
      }
    }
  }
}

/** What a search did, over all its rows (for tests: the results do not show it). */
export interface GraphSearchWork {
  /** Ids scored. */
  scored: number;
  /** Visited-hash resets. */
  resets: number;
}

interface Entry {
  s: number;
  id: number;
  expanded: boolean;
}

/** (score, id) order: smaller score first, equal scores (-0 equals +0) on the smaller id. */
function compare(a: Entry, b: Entry): number {
  if (a.s < b.s) return -1;
  if (a.s > b.s) return 1;
  return a.id - b.id;
}

/**
 * CPU twin of shaders/graph-search.wgsl (its header is the specification; this follows it step by
 * step): per query row r (xq row q0 + r),
 *   1. the internal list is itopk empty entries (+Infinity, PAD_ID, not expanded), the visited hash
 *      empty; the row's seeds (seeds[r * nseeds ..]) are the first batch of candidates;
 *   2. while iterations < maxIterations: pick the first searchWidth entries of the list (in list
 *      order) that hold an id and are not expanded, and mark them expanded; none: stop. If the hash
 *      holds more than half its slots, clear it and insert the ids of the list. The batch is the
 *      parents' neighbours (parent order, then neighbour order); then iterations += 1;
 *   a batch: each id other than PAD_ID that the hash does not hold yet is inserted and scored
 *   (float64 dot product, rounded once to float32; with `half` of the query with the row's halves
 *   decoded exactly, halfToFloat; rows from rowSplit on read from xbHi); the list becomes the first itopk of the list
 *   followed by the new candidates (not expanded), stably sorted by (score, id);
 *   3. the first k entries of the list that hold an id the mask allows (every id without a mask)
 *      go to outS/outI[r * k ..], padded with (+Infinity, PAD_ID); the iterations and the ids
 *      scored to outWork[2 r] and outWork[2 r + 1].
 */
export function graphSearch(a: GraphSearchHost): GraphSearchWork {
  checkGraphSearchArgs(a);
  const work: GraphSearchWork = { scored: 0, resets: 0 };
  const { dpad, degree, itopk, k } = a;
  const hash = new VisitedHash(a.hashBits);
  const hw = halfRowWords(dpad);
  const { xb } = a;
  if (a.half ? !(xb instanceof Uint32Array) : !(xb instanceof Float32Array)) {
    throw new InvalidArgumentError(`graph-search: xb must be ${a.half ? 'the half rows\' words (a Uint32Array)' : 'float32 rows (a Float32Array)'}`);
  }
  if (a.xbHi != null && !(a.xbHi instanceof Uint32Array)) throw new InvalidArgumentError('graph-search: xbHi must be the half rows\' words (a Uint32Array)');
  const hi = a.xbHi ?? null;
  const split = hi ? a.rowSplit! : Infinity;
  // Element j of row v: a float, or half j of the row's words (two a word, low half first; rows
  // from rowSplit on in xbHi).
  const halfAt = (words: Uint32Array, v: number, j: number) => halfToFloat((words[v * hw + (j >>> 1)] >>> (16 * (j & 1))) & 0xffff);
  const element = a.half
    ? (v: number, j: number) => (v < split ? halfAt(xb as Uint32Array, v, j) : halfAt(hi!, v - split, j))
    : (v: number, j: number) => xb[v * dpad + j];
  for (let r = 0; r < a.rows; r++) {
    const qb = (a.q0 + r) * dpad;
    const score = (v: number): number => {
      let dot = 0;
      for (let j = 0; j < dpad; j++) dot += a.xq[qb + j] * element(v, j);
      return Math.fround(a.metric === 'l2' ? a.xnorm[v] - 2 * dot : -dot);
    };
    const scored0 = work.scored;
    let list: Entry[] = Array.from({ length: itopk }, () => ({ s: Infinity, id: PAD_ID, expanded: false }));
    hash.clear();
    const merge = (batch: ArrayLike<number>): void => {
      const cands: Entry[] = [];
      for (let j = 0; j < batch.length; j++) {
        const v = batch[j];
        if (v !== PAD_ID && hash.insert(v)) {
          cands.push({ s: score(v), id: v, expanded: false });
          work.scored++;
        }
      }
      list = [...list, ...cands].sort(compare).slice(0, itopk);
    };

    merge(a.seeds.subarray(r * a.nseeds, (r + 1) * a.nseeds));
    let iterations = 0;
    while (iterations < a.maxIterations) {
      const parents: number[] = [];
      for (const e of list) {
        if (parents.length === a.searchWidth) break;
        if (e.id !== PAD_ID && !e.expanded) {
          e.expanded = true;
          parents.push(e.id);
        }
      }
      if (parents.length === 0) break;
      if (hash.overHalf) {
        hash.clear();
        work.resets++;
        for (const e of list) if (e.id !== PAD_ID) hash.insert(e.id);
      }
      const batch: number[] = [];
      for (const p of parents) for (let t = 0; t < degree; t++) batch.push(a.graph[p * degree + t]);
      merge(batch);
      iterations++;
    }

    let m = 0;
    for (const e of list) {
      if (m === k) break;
      if (e.id === PAD_ID) continue;
      if (a.mask && !maskAllows(a.mask, a.maskBit0 + e.id)) continue;
      a.outS[r * k + m] = e.s;
      a.outI[r * k + m] = e.id;
      m++;
    }
    for (; m < k; m++) {
      a.outS[r * k + m] = Infinity;
      a.outI[r * k + m] = PAD_ID;
    }
    if (a.outWork) {
      a.outWork[2 * r] = iterations;
      a.outWork[2 * r + 1] = work.scored - scored0;
    }
  }
  return work;
}
