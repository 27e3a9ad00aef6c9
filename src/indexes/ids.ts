/**
 * Ids: what a search returns as labels, and what filters and removal name.
 *
 * The device knows each stored vector by a 32-bit slot (a flat store's row position; the id an IVF
 * list keeps beside each row). The caller knows it by its id, kept here, on the host:
 *   - sequential ids (`add`, `addFrom`): 0, 1, 2, ... in add order, never reused, and never changed
 *     by removal or compaction (unlike Faiss's IndexFlat, which renumbers after remove_ids);
 *   - caller ids (`addWithIds`): 64-bit integers as Faiss's add_with_ids and USearch take them.
 * An index holds one kind or the other, never both (until `reset`).
 *
 * Ids are integers in [0, 2^53 - 1] and results carry them in a Float64Array: every label then
 * converts with `Number()` and `BigInt()` without loss, compares with `===` against plain numbers,
 * and -1 pads a missing result as in Faiss. (A BigInt64Array could hold all of int64, but its
 * labels would lose digits through `Number()` above 2^53, and mix badly with numbers.)
 *
 * Removal marks slots dead (tombstones: the kernels skip them through a mask over storage
 * positions, see MaskScoresArgs); an index compacts its store once COMPACT_DEAD_FRACTION of its
 * slots are dead, and `IdMap.compact` then renumbers the slots that remain.
 */
import { maskAllows } from '../cpu/mask-scores.js';
import { MAX_ID } from '../types.js';
import { InvalidArgumentError } from '../errors.js';
import type { LiveRows } from '../contracts.js';

/**
 * Which ids a search may return: the allowed ids (BigInt64Array; ids the index does not hold are
 * ignored), or a predicate on ids, evaluated once per stored vector into a bitmap.
 */
export type IdFilter = BigInt64Array | ((id: number) => boolean);

/** Fraction of an index's slots that may be dead before a removal compacts it. */
export const COMPACT_DEAD_FRACTION = 0.25;

/** Ids as a caller gives them: a BigInt64Array, or numbers or bigints (each an integer in [0, MAX_ID]). */
export type IdList = BigInt64Array | ArrayLike<number | bigint>;

/**
 * Checks `ids` (an IdList of `n` ids, each in [0, MAX_ID], no two equal unless `unique` is false)
 * and returns them as numbers. `what` names the argument in messages.
 */
export function checkIds(ids: unknown, n: number, what = 'ids', unique = true): Float64Array {
  const list = Array.isArray(ids) || (ArrayBuffer.isView(ids) && !(ids instanceof DataView)); // a BigInt64Array among the typed arrays
  if (!list) {
    const got = ids === null ? 'null' : typeof ids === 'object' ? (ids as object).constructor?.name : typeof ids;
    throw new InvalidArgumentError(`${what} must be ${n} ids (a BigInt64Array, or an array of numbers or bigints); got ${got}`);
  }
  const given = ids as ArrayLike<number | bigint>;
  if (given.length !== n) throw new InvalidArgumentError(`${what} holds ${given.length} ids for ${n} vectors; expected one id per vector`);
  const out = new Float64Array(n);
  const seen = new Set<number>();
  for (let i = 0; i < n; i++) {
    out[i] = checkId(given[i], `${what}[${i}]`);
    if (unique && seen.has(out[i])) throw new InvalidArgumentError(`${what}[${i}]: id ${given[i]} appears twice; each id may be added once`);
    seen.add(out[i]);
  }
  return out;
}

/** Checks one id given as a number or a bigint: an integer in [0, MAX_ID]; returns it as a number. */
export function checkId(id: unknown, what = 'id'): number {
  const ok = typeof id === 'bigint' ? id >= 0n && id <= BigInt(MAX_ID) : typeof id === 'number' && Number.isSafeInteger(id) && id >= 0;
  if (!ok) throw new InvalidArgumentError(`${what} is ${typeof id === 'bigint' ? `${id}n` : typeof id === 'number' ? String(id) : `a ${typeof id} (${String(id)})`}; ids must be integers in [0, ${MAX_ID}] (2^53 - 1), as a number or a bigint`);
  return Number(id);
}

/** Checks a filter (see IdFilter). */
export function checkFilter(filter: unknown): IdFilter {
  if (filter instanceof BigInt64Array || typeof filter === 'function') return filter as IdFilter;
  const got = filter === null ? 'null' : typeof filter === 'object' ? (filter as object).constructor?.name : typeof filter;
  throw new InvalidArgumentError(`filter must be a BigInt64Array of allowed ids or a function (id: number) => boolean; got ${got}`);
}

/**
 * The slot -> id map of one index, its tombstones, and (built on first need) id -> slot.
 * Mutated only inside the index's operation queue.
 */
export class IdMap implements LiveRows {
  /** 'sequential' or 'caller' once something was added; null while empty. */
  kind: 'sequential' | 'caller' | null = null;
  /** Slots in use (live or dead); new vectors take slots nslots, nslots + 1, ... */
  nslots = 0;
  ndead = 0;
  /** The next sequential id. */
  nextId = 0;
  private ids = new Float64Array(0);
  private dead = new Uint8Array(0);
  /** id -> slot of every live vector; null until asked for (built in one pass). */
  private slotById: Map<number, number> | null = null;
  /** Bumped by every change, for caches of masks. */
  version = 0;

  get ntotal(): number {
    return this.nslots - this.ndead;
  }

  /** The map's typed arrays (each slot's id, the tombstones), for memoryBytes; the id -> slot Map is not counted. */
  get arrays(): ArrayBufferView[] {
    return [this.ids, this.dead];
  }

  /**
   * The ids of `n` vectors about to be added (`given`: caller ids, checked by checkIds; else
   * sequential). Throws if the index holds the other kind, or a given id is already stored. Changes
   * nothing: `append` commits them once the vectors are stored.
   */
  idsFor(n: number, given?: Float64Array): Float64Array {
    const kind = given ? 'caller' : 'sequential';
    if (this.kind !== null && this.kind !== kind && this.nslots > 0) {
      throw new InvalidArgumentError(
        this.kind === 'caller'
          ? 'this index holds caller ids (addWithIds): add vectors with addWithIds too, or reset it first'
          : 'this index holds sequential ids (add): it cannot take caller ids (addWithIds) as well; reset it first or use a new index',
      );
    }
    if (given) {
      const bySlot = this.slotMap();
      given.forEach((id, i) => {
        if (bySlot.has(id)) throw new InvalidArgumentError(`ids[${i}]: id ${id} is already in the index; each id may be added once`);
      });
      return given;
    }
    if (this.nextId + n - 1 > MAX_ID) throw new InvalidArgumentError(`${n} more sequential ids would pass ${MAX_ID}`);
    return Float64Array.from({ length: n }, (_, i) => this.nextId + i);
  }

  /** Gives slots nslots .. nslots + ids.length - 1 the ids `ids` (from idsFor). */
  append(ids: Float64Array, kind: 'sequential' | 'caller'): void {
    this.kind = kind;
    this.grow(this.nslots + ids.length);
    this.ids.set(ids, this.nslots);
    if (this.slotById) ids.forEach((id, i) => this.slotById!.set(id, this.nslots + i));
    this.nslots += ids.length;
    if (kind === 'sequential' && ids.length > 0) this.nextId = Math.max(this.nextId, ids[ids.length - 1] + 1);
    this.version++;
  }

  /** The id of `slot`. */
  idOf(slot: number): number {
    return this.ids[slot];
  }

  isDead(slot: number): boolean {
    return this.dead[slot] === 1;
  }

  /** The live slot holding `id`, or -1. */
  slotOf(id: number): number {
    return this.slotMap().get(id) ?? -1;
  }

  /** Marks the live vectors of `ids` dead; returns how many there were (ids not held are ignored). */
  remove(ids: Float64Array): number {
    const bySlot = this.slotMap();
    let removed = 0;
    for (const id of ids) {
      const slot = bySlot.get(id);
      if (slot === undefined) continue;
      bySlot.delete(id);
      this.dead[slot] = 1;
      removed++;
    }
    this.ndead += removed;
    if (removed > 0) this.version++;
    return removed;
  }

  /** Whether enough slots are dead for the index to compact (see COMPACT_DEAD_FRACTION). */
  shouldCompact(): boolean {
    return this.ndead > 0 && this.ndead >= COMPACT_DEAD_FRACTION * this.nslots;
  }

  /**
   * After the store dropped the dead rows: `order` lists the live old slots in their new slot order
   * (new slot s held old slot order[s]).
   */
  compact(order: ArrayLike<number>): void {
    const ids = new Float64Array(order.length);
    for (let s = 0; s < order.length; s++) ids[s] = this.ids[order[s]];
    this.ids = ids;
    this.dead = new Uint8Array(order.length);
    this.nslots = order.length;
    this.ndead = 0;
    this.slotById = null;
    this.version++;
  }

  /**
   * Restores a saved map (loadIndex): slot s has id `ids[s]`; `nextId` is the next sequential id,
   * or -1 for caller ids. Throws on ids out of range or repeated.
   */
  restore(ids: Float64Array, nextId: number, what: string): void {
    const seen = new Set<number>();
    ids.forEach((id, s) => {
      if (!Number.isInteger(id) || id < 0 || id > MAX_ID || (nextId >= 0 && id >= nextId)) {
        throw new InvalidArgumentError(`${what}: id of slot ${s} is ${id}; expected an integer in [0, ${nextId >= 0 ? nextId - 1 : MAX_ID}]`);
      }
      if (seen.has(id)) throw new InvalidArgumentError(`${what}: id ${id} appears twice; each id must appear once`);
      seen.add(id);
    });
    this.reset();
    this.kind = ids.length === 0 && nextId <= 0 ? null : nextId >= 0 ? 'sequential' : 'caller';
    this.grow(ids.length);
    this.ids.set(ids);
    this.nslots = ids.length;
    this.nextId = Math.max(0, nextId);
    this.version++;
  }

  /** The ids of the live slots in slot order: what save writes, with `savedNextId`. */
  liveIds(): Float64Array {
    const out = new Float64Array(this.ntotal);
    let o = 0;
    for (let s = 0; s < this.nslots; s++) if (!this.dead[s]) out[o++] = this.ids[s];
    return out;
  }

  /** The next sequential id as save writes it: -1 where the index holds caller ids. */
  get savedNextId(): number {
    return this.kind === 'caller' ? -1 : this.nextId;
  }

  /**
   * The live rows of `blocks` (rows of `width` floats, in order; row i, counted across blocks,
   * holds slot `slotAt(i)`), in blocks: each block as it is while nothing is dead, else a copy
   * without the dead rows (empty blocks are skipped).
   */
  async *liveRows(blocks: AsyncIterable<Float32Array>, width: number, slotAt: (row: number) => number): AsyncGenerator<Float32Array> {
    let row = 0;
    for await (const block of blocks) {
      const n = block.length / width;
      if (this.ndead === 0) {
        yield block;
        row += n;
        continue;
      }
      const out = new Float32Array(n * width);
      let m = 0;
      for (let i = 0; i < n; i++, row++) if (!this.dead[slotAt(row)]) out.set(block.subarray(i * width, (i + 1) * width), width * m++);
      if (m > 0) yield out.subarray(0, m * width);
    }
  }

  /** Slots as ids: `labels` (slots, -1 = none) in place of the caller's ids. */
  toIds(labels: Int32Array | Uint32Array): Float64Array {
    const out = new Float64Array(labels.length);
    for (let i = 0; i < labels.length; i++) out[i] = labels[i] < 0 ? -1 : this.ids[labels[i]];
    return out;
  }

  reset(): void {
    this.kind = null;
    this.nslots = 0;
    this.ndead = 0;
    this.nextId = 0;
    this.ids = new Float64Array(0);
    this.dead = new Uint8Array(0);
    this.slotById = null;
    this.version++;
  }

  private slotMap(): Map<number, number> {
    if (!this.slotById) {
      this.slotById = new Map();
      for (let s = 0; s < this.nslots; s++) if (!this.dead[s]) this.slotById.set(this.ids[s], s);
    }
    return this.slotById;
  }

  private grow(n: number): void {
    if (n <= this.ids.length) return;
    const cap = Math.max(n, 2 * this.ids.length);
    const ids = new Float64Array(cap);
    ids.set(this.ids.subarray(0, this.nslots));
    const dead = new Uint8Array(cap);
    dead.set(this.dead.subarray(0, this.nslots));
    this.ids = ids;
    this.dead = dead;
  }
}

/**
 * Which stored rows a search may return, one bitmap per store chunk (bit r of word r >> 5: the
 * chunk's row r; what MaskScoresArgs.mask and IvfScanArgs.mask hold), and how many rows are
 * allowed: the live slots that pass `filter` (every live slot without one), slot s at storage
 * position `positionOf(s)` = chunk * chunkRows + row.
 */
export function allowedRows(
  ids: IdMap,
  filter: IdFilter | undefined,
  chunkRows: number,
  chunks: number,
  positionOf: (slot: number) => number,
): { masks: Uint32Array[]; allowed: number } {
  const masks = Array.from({ length: chunks }, () => new Uint32Array(Math.ceil(chunkRows / 32)));
  let allowed = 0;
  const set = (slot: number): void => {
    const p = positionOf(slot);
    if (rowAllowed(masks, chunkRows, p)) return;
    const row = p % chunkRows;
    masks[(p - row) / chunkRows][row >>> 5] |= 1 << (row & 31);
    allowed++;
  };
  if (filter instanceof BigInt64Array) {
    for (const id of filter) {
      if (id < 0n || id > BigInt(MAX_ID)) continue; // not an id the index can hold
      const slot = ids.slotOf(Number(id));
      if (slot >= 0) set(slot);
    }
  } else {
    for (let s = 0; s < ids.nslots; s++) if (!ids.isDead(s) && (!filter || filter(ids.idOf(s)))) set(s);
  }
  return { masks, allowed };
}

/** Whether per-chunk row masks (see allowedRows) allow the row at storage position `position`. */
export function rowAllowed(masks: Uint32Array[], chunkRows: number, position: number): boolean {
  const row = position % chunkRows;
  return maskAllows(masks[(position - row) / chunkRows], row);
}
