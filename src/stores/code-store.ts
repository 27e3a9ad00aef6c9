/**
 * Base vectors on a device, in chunks: each chunk holds up to `chunkRows` rows of its format's
 * `rowWords` words (one binding: `dpad` floats for float rows, packed codes for a scalar
 * quantiser, see src/stores/row-format.ts) and their squared norms (computed on the device from
 * float rows; by the format for codes). A chunk grows
 * by doubling until it is full, so small stores stay small, unless `reserve` sized it exactly
 * beforehand (a build that knows its row count); only the rows an add brings are uploaded.
 * Vectors are addressed by position (their slot: 0 .. ntotal - 1, chunk after chunk); an index maps
 * slots to its ids (src/indexes/ids.ts).
 *
 * The host reads rows (the exact re-score, save) as src/stores/rows.ts says: in place on the CPU,
 * from one host copy on a real GPU (`hostCopy`, default the device's tuning.hostCopy), or read back.
 */

import type { Device } from '../device.js';
import { chunkRows } from './chunking.js';
import { floatRows } from './row-format.js';
import { ChunkRows } from './rows.js';
import type { BaseStore, BaseStoreOptions, RowFormat, RowAt, StoreChunk, EncodedRows } from '../contracts.js';

interface Placement {
  index: number;
  start: number;
  rows: number;
}

export class CodeStore implements BaseStore {
  /** Query rows (and float rows) are `dpad` floats. */
  readonly dpad: number;
  /** Words a stored row takes (format.rowWords). */
  readonly rowWords: number;
  /** Rows per chunk: every chunk but the last that holds rows is full (chunks after it are reserved, empty). */
  readonly chunkRows: number;
  chunks: StoreChunk[] = [];
  private readonly host: ChunkRows;

  constructor(
    readonly device: Device,
    readonly d: number,
    options: BaseStoreOptions = {},
    /** How rows are stored (default float32 rows). */
    readonly format: RowFormat = floatRows(d),
  ) {
    this.dpad = format.dpad;
    this.rowWords = format.rowWords;
    this.chunkRows = chunkRows(device, Math.max(this.rowWords, this.dpad) * 4);
    this.host = new ChunkRows(device, format, this.chunkRows, options.hostCopy ?? device.tuning.hostCopy);
  }

  get ntotal(): number {
    let n = 0;
    for (const c of this.chunks) n += c.rows;
    return n;
  }

  /** Global id of each chunk's first row. */
  chunkStarts(): number[] {
    const starts: number[] = [];
    let id = 0;
    for (const c of this.chunks) {
      starts.push(id);
      id += c.rows;
    }
    return starts;
  }

  /**
   * Makes room for `n` more rows, with buffers of exactly the size they need, so that adds of up
   * to `n` rows allocate nothing more (no doubling, no copies). If it throws, nothing changed.
   */
  async reserve(n: number): Promise<void> {
    if (n <= 0) return;
    const grown = await this.allocate(this.place(n), true);
    try {
      await this.install(grown);
    } catch (err) {
      this.device.discard();
      for (const c of grown.values()) if (!this.chunks.includes(c)) this.free(c);
      throw err;
    }
  }

  async add(x: Float32Array, n: number): Promise<void> {
    return this.addRows(n, () => encodeRows(this.format, x, n));
  }

  /** Appends `n` rows already in the store's format (`n * rowWords` words): a compaction or a load. */
  async addStored(words: Float32Array, n: number): Promise<void> {
    return this.addRows(n, () => this.format.stored(words, n));
  }

  /** Appends `n` rows encoded by their codec (Codec.encode: product codes are encoded on the backend). */
  async addEncoded(rows: EncodedRows, n: number): Promise<void> {
    return this.addRows(n, () => rows);
  }

  private async addRows(n: number, encoded: () => EncodedRows): Promise<void> {
    if (n === 0) return;
    const plan = this.place(n);
    const grown = await this.allocate(plan, false);
    // Commit. A grown chunk holds the old rows too, so it stays in place if a later step fails;
    // only the new rows' counts are rolled back.
    const before = this.mark();
    try {
      await this.install(grown);
      await this.write(encoded(), plan);
    } catch (err) {
      this.device.discard();
      for (const c of grown.values()) if (!this.chunks.includes(c)) this.free(c);
      this.rollback(before);
      throw err;
    }
  }

  /** The rows each chunk holds now, for `rollback`. */
  mark(): number[] {
    return this.chunks.map((c) => c.rows);
  }

  /** Back to the rows of `mark` (adds since are dropped; chunks opened since are freed). */
  rollback(mark: number[]): void {
    for (const c of this.chunks.splice(mark.length)) this.free(c);
    mark.forEach((rows, i) => (this.chunks[i].rows = rows));
  }

  /** Which chunks the next `n` rows go to: from the first chunk with room on. */
  private place(n: number): Placement[] {
    const plan: Placement[] = [];
    let remaining = n;
    let index = this.chunks.findIndex((c) => c.rows < this.chunkRows);
    if (index < 0) index = this.chunks.length;
    let filled = this.chunks[index]?.rows ?? 0;
    while (remaining > 0) {
      if (filled === this.chunkRows) {
        index++;
        filled = this.chunks[index]?.rows ?? 0;
      }
      const rows = Math.min(remaining, this.chunkRows - filled);
      plan.push({ index, start: filled, rows });
      filled += rows;
      remaining -= rows;
    }
    return plan;
  }

  /**
   * New buffers (and host copies) for every chunk of `plan` too small for it: exactly the rows it
   * needs, or (not `exact`) doubling. Allocates everything first and waits for the device to
   * confirm it, so that running out of memory leaves the store as it was.
   */
  private async allocate(plan: Placement[], exact: boolean): Promise<Map<number, StoreChunk>> {
    const grown = new Map<number, StoreChunk>();
    try {
      for (const p of plan) {
        const old = this.chunks[p.index];
        const need = p.start + p.rows;
        if (old && old.capacity >= need) continue;
        const capacity = exact ? need : Math.min(this.chunkRows, Math.max(need, (old?.capacity ?? 0) * 2));
        const xb = this.device.buffer('xb', capacity * this.rowWords * 4);
        const c: StoreChunk = { xb, xnorm: this.device.buffer('xnorm', capacity * 4), host: null, rows: old?.rows ?? 0, capacity };
        grown.set(p.index, c);
        c.host = this.host.hostFor(xb, capacity);
      }
      await this.device.flush();
    } catch (err) {
      this.device.discard();
      for (const c of grown.values()) this.free(c);
      throw err;
    }
    return grown;
  }

  /** Moves each grown chunk's rows into its new buffers and puts it in place of the old one. */
  private async install(grown: Map<number, StoreChunk>): Promise<void> {
    const rowBytes = this.rowWords * 4;
    for (const [i, c] of grown) {
      const old = this.chunks[i];
      if (!old) continue;
      this.device.copy(old.xb, 0, c.xb, 0, old.rows * rowBytes);
      this.device.copy(old.xnorm, 0, c.xnorm, 0, old.rows * 4);
      this.host.carry(old, c, old.rows);
    }
    await this.device.flush();
    for (const [i, c] of grown) {
      const old = this.chunks[i];
      if (old) this.free(old);
      this.chunks[i] = c;
    }
  }

  /** Uploads the rows as stored (and mirrors them), computes or uploads their norms, and counts them. */
  private async write({ words, norms }: { words: Float32Array; norms: Float32Array | null }, plan: Placement[]): Promise<void> {
    const { device, dpad, rowWords: w } = this;
    let src = 0;
    for (const p of plan) {
      const c = this.chunks[p.index];
      const rows = words.subarray(src * w, (src + p.rows) * w);
      device.upload(c.xb, p.start * w * 4, rows);
      this.host.mirror(c, p.start, rows);
      if (norms) device.upload(c.xnorm, p.start * 4, norms.subarray(src, src + p.rows));
      else device.dispatch({ kernel: 'norms', x: c.xb, out: c.xnorm, n: p.rows, dpad, row0: p.start, out0: p.start });
      c.rows = p.start + p.rows;
      src += p.rows;
    }
    await device.flush();
  }

  /** Rows by id, for the given ids (see ChunkRows.rowsAt). */
  rowsAt(ids: ArrayLike<number>): Promise<RowAt> {
    return this.host.rowsAt(this.chunks, ids);
  }

  /** Every row in id order, in blocks (see ChunkRows.read): as floats, or with `stored`, as stored (codes). */
  readRows(stored = false): AsyncGenerator<Float32Array> {
    return this.host.read(
      this.chunks,
      this.chunks.map((c, chunk) => ({ chunk, start: 0, rows: c.rows })),
      stored,
    );
  }

  reset(): void {
    for (const c of this.chunks) this.free(c);
    this.chunks = [];
  }

  dispose(): void {
    this.reset();
  }

  private free(c: StoreChunk): void {
    this.device.release(c.xb);
    this.device.release(c.xnorm);
    c.host = null;
  }
}

/** `n` rows of `x` (`n * d`) encoded by `format`; product codes come encoded (ProductQuantizer.encode, then addStored). */
export function encodeRows(format: RowFormat, x: Float32Array, n: number): EncodedRows {
  if (!format.encode) throw new Error('rows of this format are encoded by their index and added as stored words (addStored)');
  return format.encode(x, n);
}
