/**
 * IVF inverted lists on a device. Lists live in chunks (each chunk's vectors within one binding);
 * a list is one or more extents, at most one per chunk, each a run of rows [start, start + size)
 * with spare room up to `cap`. Each chunk has a table `ranges[2L], ranges[2L + 1]`: list L's rows in
 * that chunk (empty when L has none there), which is what ivf-scan reads.
 *
 * Why lists may span chunks (rather than chunks holding whole lists): a list can be larger than
 * one binding (skewed data, or a lowered maxBindingBytes), and appending to a list must not move
 * the rows already on the device. An add fills the spare room of each list's last extent, grows
 * that extent in place when it ends the chunk's used rows, or else opens a new extent in the last
 * chunk (or a new chunk) with room for as many rows as the list already has, so a list's extents
 * grow geometrically and an add uploads only its own rows, their ids and the changed tables.
 * Spare room costs at most about the list's own size; space behind extents that could not grow is
 * not reclaimed until `reset` (a compaction would be the next step if that ever matters). A build
 * that knows each list's final size first (`reserve`, see IvfFlatIndex.addFrom and loadIndex) gets
 * extents and buffers of exactly that size: no spare room, no growth.
 *
 * The host reads rows (the exact re-score, save) as src/stores/rows.ts says: in place on the CPU,
 * from one host copy on a real GPU (`hostCopy`, default the device's tuning.hostCopy), or read back; `positionOf` maps each
 * id to its row.
 */
import type { Device } from '../device.js';

import { chunkRows, rowsPerBinding } from './chunking.js';

import { floatRows } from './row-format.js';
import { ChunkRows, type RowRun } from './rows.js';
import { encodeRows } from './code-store.js';

import { encodeHalfRows } from './half-rows.js';
import type { BaseStoreOptions, RowFormat, RowAt, ListChunk, ListStore, EncodedRows } from '../contracts.js';
import { InvalidArgumentError } from '../errors.js';
import { halfRowWords } from '../device.js';

interface Extent {
  chunk: number;
  start: number;
  size: number;
  cap: number;
}

/** Smallest extent opened for a list. */
const MIN_EXTENT = 8;

export class DeviceLists implements ListStore {
  /** How rows are stored: float rows (IVF-Flat) or codes (src/codecs: IVF-SQ, IVF-PQ). */
  readonly format: RowFormat;
  readonly dpad: number;
  /** Words a stored row takes (format.rowWords). */
  readonly rowWords: number;
  readonly chunkRows: number;
  chunks: ListChunk[] = [];
  private extents = new Map<number, Extent[]>();
  ntotal = 0;
  /**
   * Whether, in every list, ids increase with position (true for ids given in ascending order, as
   * `add` and `loadIndex` give them). The GEMM strategy selects by position within a list, which
   * is then the (score, id) order; without it, searches take the scan.
   */
  idsInPositionOrder = true;
  /** The last id added to each list (for idsInPositionOrder). */
  private lastId = new Map<number, number>();
  /** Each id's position (see `position`) and list; entries of ids not stored mean nothing. */
  private positions = new Uint32Array(0);
  private listOfId = new Uint32Array(0);
  private readonly host: ChunkRows;
  /**
   * Where the lists keep their rows as halves too (tuning.ivfHalfScan, float rows only): words a
   * half row takes, and the largest norm and rounding error of any row added since the last
   * reset (src/stores/half-rows.ts; rows removed or rolled back still count: a looser bound).
   */
  readonly half: { rowWords: number; maxNorm: number; maxError: number } | null;

  constructor(
    readonly device: Device,
    readonly d: number,
    readonly nlist: number,
    options: BaseStoreOptions = {},
    format: RowFormat = floatRows(d),
  ) {
    this.format = format;
    this.dpad = format.dpad;
    this.rowWords = format.rowWords;
    this.chunkRows = chunkRows(device, Math.max(this.rowWords, this.dpad) * 4);
    rowsPerBinding(device, 8 * nlist, `list table (8 bytes for each of nlist = ${nlist} lists)`);
    this.host = new ChunkRows(device, this.format, this.chunkRows, options.hostCopy ?? device.tuning.hostCopy);
    const floats = format.scoring.kernel === 'gemm-scores';
    this.half = floats && device.tuning.ivfHalfScan ? { rowWords: halfRowWords(this.dpad), maxNorm: 0, maxError: 0 } : null;
  }

  /**
   * Makes room for `counts[l]` more rows in each list l, in extents and buffers of exactly that
   * size, so that adds of those rows allocate nothing more. If it throws, nothing changed.
   */
  async reserve(counts: ArrayLike<number>): Promise<void> {
    const touched: number[] = [];
    let total = 0;
    for (let l = 0; l < this.nlist; l++) {
      if (counts[l] > 0) touched.push(l);
      total += counts[l];
    }
    this.growPositions(this.ntotal + total);
    const saved = this.snapshot(touched);
    const oldChunks = this.chunks.length;
    try {
      for (const l of touched) {
        const spare = (this.extents.get(l) ?? []).reduce((a, e) => a + e.cap - e.size, 0);
        if (counts[l] > spare) this.reserveRows(l, counts[l] - spare);
      }
      await this.growChunks(true);
    } catch (err) {
      this.device.discard();
      for (const ch of this.chunks.splice(oldChunks)) this.free(ch);
      this.restore(saved);
      throw err;
    }
  }

  /**
   * Appends `n` rows of `x` (`n * d`, already prepared; residuals for a residual format) to lists
   * `listOf[i]`, with ids `ids[i]`. If it throws, the lists are as they were.
   */
  async add(x: Float32Array, n: number, listOf: Uint32Array, ids: Uint32Array): Promise<void> {
    if (n === 0) return;
    return this.addEncoded(encodeRows(this.format, x, n), n, listOf, ids);
  }

  /** As `add`, for rows already encoded (Codec.encode) or as stored (a load, a compaction). */
  async addEncoded(encoded: EncodedRows, n: number, listOf: Uint32Array, ids: Uint32Array): Promise<void> {
    if (n === 0) return;
    const w = this.rowWords;
    // Rows grouped by list (a counting sort, stable), lists in ascending order.
    const count = new Map<number, number>();
    for (let i = 0; i < n; i++) count.set(listOf[i], (count.get(listOf[i]) ?? 0) + 1);
    const order = [...count.keys()].sort((a, b) => a - b);
    const at = new Map<number, number>();
    let o = 0;
    for (const l of order) {
      at.set(l, o);
      o += count.get(l)!;
    }
    const rows = new Uint32Array(n);
    for (let i = 0; i < n; i++) {
      const l = listOf[i];
      const p = at.get(l)!;
      rows[p] = i;
      at.set(l, p + 1);
    }
    const saved = this.snapshot(order);
    for (let p = 0; p < n; p++) {
      const l = listOf[rows[p]];
      const id = ids[rows[p]];
      const last = this.lastId.get(l);
      if (last !== undefined && id <= last) this.idsInPositionOrder = false;
      this.lastId.set(l, id);
    }
    const oldChunks = this.chunks.length;
    try {
      // Placement: which rows go where (host bookkeeping only).
      const writes: { chunk: number; at: number; from: number; rows: number; list: number }[] = [];
      let from = 0;
      for (const l of order) {
        let m = count.get(l)!;
        while (m > 0) {
          const e = this.extentFor(l, m);
          const t = Math.min(m, e.cap - e.size);
          writes.push({ chunk: e.chunk, at: e.start + e.size, from, rows: t, list: l });
          e.size += t;
          from += t;
          m -= t;
        }
      }
      await this.growChunks(false);
      const maxId = ids.reduce((a, id) => Math.max(a, id), 0);
      if (maxId >= this.positions.length) this.growPositions(Math.max(maxId + 1, 2 * this.positions.length));
      const { words, norms } = encoded;
      // The largest norm and half-rounding error of the rows added (set once the add succeeds).
      let maxNorm = 0;
      let maxError = 0;
      for (const wr of writes) {
        const ch = this.chunks[wr.chunk];
        const pick = rows.subarray(wr.from, wr.from + wr.rows);
        const xs = new Float32Array(wr.rows * w);
        const is = new Uint32Array(wr.rows);
        const ns = norms ? new Float32Array(wr.rows) : null;
        pick.forEach((r, j) => {
          xs.set(words.subarray(r * w, (r + 1) * w), j * w);
          if (ns) ns[j] = norms![r];
          is[j] = ids[r];
          this.positions[ids[r]] = this.position(wr.chunk, wr.at + j);
          this.listOfId[ids[r]] = wr.list;
        });
        this.device.upload(ch.xb, wr.at * w * 4, xs);
        if (this.half) {
          const h = encodeHalfRows(xs, wr.rows, this.dpad);
          this.device.upload(ch.xh!, wr.at * this.half.rowWords * 4, h.words);
          maxNorm = Math.max(maxNorm, h.maxNorm);
          maxError = Math.max(maxError, h.maxError);
        }
        this.host.mirror(ch, wr.at, xs);
        if (ns) this.device.upload(ch.xnorm, wr.at * 4, ns);
        this.device.upload(ch.ids, wr.at * 4, is);
        ch.hostIds.set(is, wr.at);
      }
      // Norms after every upload: an upload after a recorded call would cost a submit each.
      for (const wr of norms ? [] : writes) {
        const ch = this.chunks[wr.chunk];
        this.device.dispatch({ kernel: 'norms', x: ch.xb, out: ch.xnorm, n: wr.rows, dpad: this.dpad, row0: wr.at, out0: wr.at });
      }
      // The tables: only the entries of the lists this add touched (each is 8 bytes; a whole
      // table is 8 * nlist), or the whole table of a chunk where most entries changed.
      const changed = new Map<number, number[]>();
      for (const l of order) {
        for (const e of this.extents.get(l)!) {
          const r = this.chunks[e.chunk].ranges;
          if (r[2 * l] === e.start && r[2 * l + 1] === e.start + e.size) continue;
          r[2 * l] = e.start;
          r[2 * l + 1] = e.start + e.size;
          let ls = changed.get(e.chunk);
          if (!ls) changed.set(e.chunk, (ls = []));
          ls.push(l);
        }
      }
      for (const [c, ls] of changed) {
        const ch = this.chunks[c];
        if (ls.length > 64) this.device.upload(ch.rangesBuf, 0, ch.ranges);
        else for (const l of ls) this.device.upload(ch.rangesBuf, 8 * l, ch.ranges.subarray(2 * l, 2 * l + 2));
      }
      await this.device.flush();
      this.ntotal += n;
      if (this.half) {
        this.half.maxNorm = Math.max(this.half.maxNorm, maxNorm);
        this.half.maxError = Math.max(this.half.maxError, maxError);
      }
    } catch (err) {
      this.device.discard();
      for (const ch of this.chunks.splice(oldChunks)) this.free(ch);
      this.restore(saved);
      throw err;
    }
  }

  /**
   * The first extent of list `l` with room (`m` rows waiting): one with spare room, else room made
   * by growing the list by max(m, MIN_EXTENT, its size), so that it grows geometrically.
   */
  private extentFor(l: number, m: number): Extent {
    const room = (): Extent | undefined => this.extents.get(l)?.find((e) => e.size < e.cap);
    const listSize = (this.extents.get(l) ?? []).reduce((a, e) => a + e.size, 0);
    if (!room()) this.reserveRows(l, Math.max(m, MIN_EXTENT, listSize));
    return room()!;
  }

  /**
   * Room for `m` more rows at the end of list `l` (host bookkeeping only; buffers follow in
   * growChunks): its last extent grows in place where it ends its chunk's used rows, the rest goes
   * to new extents in the last chunk (not the list's own) or new chunks.
   */
  private reserveRows(l: number, m: number): void {
    let exts = this.extents.get(l);
    if (!exts) this.extents.set(l, (exts = []));
    while (m > 0) {
      const last = exts[exts.length - 1];
      if (last) {
        const ch = this.chunks[last.chunk];
        const room = this.chunkRows - ch.used;
        if (ch.used === last.start + last.cap && room > 0) {
          const extra = Math.min(room, m);
          ch.used += extra;
          last.cap += extra;
          m -= extra;
          continue;
        }
      }
      let c = this.chunks.length - 1;
      if (c < 0 || this.chunks[c].used === this.chunkRows || last?.chunk === c) c = this.newChunk();
      const ch = this.chunks[c];
      const cap = Math.min(this.chunkRows - ch.used, m);
      exts.push({ chunk: c, start: ch.used, size: 0, cap });
      ch.used += cap;
      m -= cap;
    }
  }

  /**
   * Buffers for every chunk whose reserved rows outgrew them: `exact`, or doubling (at most a
   * chunk). The rows move to the new buffers, which then replace the old. If it throws, the new
   * buffers are freed and the old ones are still in place.
   */
  private async growChunks(exact: boolean): Promise<void> {
    const grown = new Map<number, ListChunk>();
    try {
      for (let c = 0; c < this.chunks.length; c++) {
        const ch = this.chunks[c];
        if (ch.used <= ch.capacity) continue;
        const capacity = exact ? ch.used : Math.min(this.chunkRows, Math.max(ch.used, 2 * ch.capacity));
        grown.set(c, this.allocate(capacity, ch.ranges));
      }
      await this.device.flush();
      for (const [c, g] of grown) {
        const old = this.chunks[c];
        if (old.capacity > 0) {
          this.device.copy(old.xb, 0, g.xb, 0, old.capacity * this.rowWords * 4);
          if (old.xh) this.device.copy(old.xh, 0, g.xh!, 0, old.capacity * this.half!.rowWords * 4);
          this.device.copy(old.xnorm, 0, g.xnorm, 0, old.capacity * 4);
          this.device.copy(old.ids, 0, g.ids, 0, old.capacity * 4);
          g.hostIds.set(old.hostIds.subarray(0, old.capacity));
          this.host.carry(old, g, old.capacity);
        }
        g.used = old.used;
      }
      // The copies run before the old buffers go back.
      await this.device.flush();
    } catch (err) {
      this.device.discard();
      for (const g of grown.values()) this.free(g);
      throw err;
    }
    for (const [c, g] of grown) {
      this.free(this.chunks[c]);
      this.chunks[c] = g;
    }
  }

  /** Opens an empty chunk (buffers come when rows are reserved in it) and returns its number. */
  private newChunk(): number {
    // Positions (chunk * chunkRows + row) are u32 on the device, below the padding id.
    if ((this.chunks.length + 1) * this.chunkRows >= 0xffffffff) {
      throw new InvalidArgumentError(`IVF lists on this device hold at most ${Math.floor(0xfffffffe / this.chunkRows)} chunks of ${this.chunkRows} rows`);
    }
    this.chunks.push(this.allocate(0, new Uint32Array(2 * this.nlist)));
    return this.chunks.length - 1;
  }

  private allocate(capacity: number, ranges: Uint32Array): ListChunk {
    const rows = Math.max(1, capacity);
    const xb = this.device.buffer('ivf_xb', rows * this.rowWords * 4);
    const ch: ListChunk = {
      xb,
      host: this.host.hostFor(xb, rows),
      xh: this.half ? this.device.buffer('ivf_xh', rows * this.half.rowWords * 4) : null,
      xnorm: this.device.buffer('ivf_xnorm', rows * 4),
      ids: this.device.buffer('ivf_ids', rows * 4),
      capacity,
      used: 0,
      ranges: ranges.slice(),
      rangesBuf: this.device.buffer('ivf_ranges', 8 * this.nlist),
      hostIds: new Uint32Array(capacity),
    };
    this.device.upload(ch.rangesBuf, 0, ch.ranges);
    return ch;
  }

  /** Room in `positionOf` for ids below `n` (exactly `n` after a reserve; doubling as adds go). */
  private growPositions(n: number): void {
    if (n <= this.positions.length) return;
    const grown = new Uint32Array(n);
    grown.set(this.positions);
    this.positions = grown;
    const lists = new Uint32Array(n);
    lists.set(this.listOfId);
    this.listOfId = lists;
  }

  /** Every list as it is now, for `rollback`. */
  mark(): { saved: ReturnType<DeviceLists['snapshot']>; chunks: number } {
    return { saved: this.snapshot(Array.from({ length: this.nlist }, (_, l) => l)), chunks: this.chunks.length };
  }

  /** Back to the lists `mark` saw (rows added since are dropped; chunks opened since are freed). */
  rollback(mark: ReturnType<DeviceLists['mark']>): void {
    for (const ch of this.chunks.splice(mark.chunks)) this.free(ch);
    this.restore(mark.saved);
  }

  /** What an add of rows to `touched` lists may change, to put back if it fails. */
  private snapshot(touched: number[]) {
    return {
      touched,
      extents: touched.map((l) => this.extents.get(l)?.map((e) => ({ ...e }))),
      lastId: touched.map((l) => this.lastId.get(l)),
      used: this.chunks.map((c) => c.used),
      ntotal: this.ntotal,
      ordered: this.idsInPositionOrder,
    };
  }

  /** Puts back a snapshot; the chunks' tables are derived again from the restored extents. */
  private restore(s: ReturnType<DeviceLists['snapshot']>): void {
    s.used.forEach((used, c) => (this.chunks[c].used = used));
    s.touched.forEach((l, i) => {
      for (const ch of this.chunks) ch.ranges.fill(0, 2 * l, 2 * l + 2);
      const exts = s.extents[i];
      if (exts) this.extents.set(l, exts);
      else this.extents.delete(l);
      for (const e of exts ?? []) this.chunks[e.chunk].ranges.set([e.start, e.start + e.size], 2 * l);
      const last = s.lastId[i];
      if (last === undefined) this.lastId.delete(l);
      else this.lastId.set(l, last);
    });
    for (const ch of this.chunks) this.device.upload(ch.rangesBuf, 0, ch.ranges);
    this.ntotal = s.ntotal;
    this.idsInPositionOrder = s.ordered;
  }

  /** The runs of rows of list `l`, in chunk order: chunk, first row, rows. */
  extentsOf(l: number): readonly { chunk: number; start: number; size: number }[] {
    return this.extents.get(l) ?? [];
  }

  /** A row's position across chunks (`chunk * chunkRows + row`): what the GEMM strategy selects by. */
  position(chunk: number, row: number): number {
    return chunk * this.chunkRows + row;
  }

  /** The position of the row stored with `id` (see `position`). */
  positionOf(id: number): number {
    return this.positions[id];
  }

  /** Vectors per list. */
  listSizes(): Uint32Array {
    const sizes = new Uint32Array(this.nlist);
    for (const [l, exts] of this.extents) for (const e of exts) sizes[l] += e.size;
    return sizes;
  }

  /** The list of the row stored with `id`. */
  listOf(id: number): number {
    return this.listOfId[id];
  }

  /** The stored rows of `ids`, by id (see BaseStore.rowsAt; for a residual format, the residuals). */
  rowsAt(ids: ArrayLike<number>): Promise<RowAt> {
    return this.host.rowsAt(this.chunks, ids, (id) => this.positions[id]);
  }

  /** The runs of every list, list after list (what save writes, in that order). */
  private runs(): RowRun[] {
    const runs: RowRun[] = [];
    for (let l = 0; l < this.nlist; l++) for (const e of this.extents.get(l) ?? []) if (e.size > 0) runs.push({ chunk: e.chunk, start: e.start, rows: e.size });
    return runs;
  }

  /** The ids of every list, list after list, in position order. */
  listIds(): Uint32Array {
    const out = new Uint32Array(this.ntotal);
    let o = 0;
    for (const r of this.runs()) {
      out.set(this.chunks[r.chunk].hostIds.subarray(r.start, r.start + r.rows), o);
      o += r.rows;
    }
    return out;
  }

  /**
   * The rows of every list, list after list, in position order, in blocks (see ChunkRows.read):
   * as floats, or with `stored`, as stored (codes).
   */
  readRows(stored = false): AsyncGenerator<Float32Array> {
    return this.host.read(this.chunks, this.runs(), stored);
  }

  /** The id stored at a position (see `position`). */
  idAt(position: number): number {
    return this.chunks[Math.floor(position / this.chunkRows)].hostIds[position % this.chunkRows];
  }

  /** Frees every chunk; the lists are empty. */
  /** The host arrays mapping each id to its position and its list (IvfFlatIndex.memoryBytes counts them). */
  get idArrays(): Uint32Array[] {
    return [this.positions, this.listOfId];
  }

  reset(): void {
    for (const ch of this.chunks) this.free(ch);
    this.chunks = [];
    this.extents.clear();
    this.ntotal = 0;
    this.lastId.clear();
    this.idsInPositionOrder = true;
    this.positions = new Uint32Array(0);
    this.listOfId = new Uint32Array(0);
    if (this.half) this.half.maxNorm = this.half.maxError = 0;
  }

  private free(ch: ListChunk): void {
    for (const b of [ch.xb, ch.xh, ch.xnorm, ch.ids, ch.rangesBuf]) if (b) this.device.release(b);
    ch.host = null;
  }
}
