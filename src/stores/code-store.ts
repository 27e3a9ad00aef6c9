/**
 * Base vectors on a device, in chunks: each chunk holds up to `chunkRows` rows of `dpad` floats
 * (one binding) and their squared norms, computed on the device when rows are added. A chunk grows
 * by doubling until it is full, so small stores stay small; only the rows an add brings are
 * uploaded. Vectors are addressed by position: ids 0 .. ntotal - 1, chunk after chunk.
 *
 * The store may keep a host copy of its rows (see BaseStore.rows): the exact re-score of each
 * search's final candidates and `save` read it, so neither reads the device back.
 */
import type { BaseStore, BaseStoreOptions } from '../backend.js';
import type { Device, DeviceBuffer } from '../device.js';
import { padRows, paddedDim } from '../device.js';
import { chunkRows } from '../plans/tiling.js';
import { RowBuffer } from '../row-buffer.js';

export interface Chunk {
  xb: DeviceBuffer;
  xnorm: DeviceBuffer;
  rows: number;
  capacity: number;
}

interface Placement {
  index: number;
  start: number;
  rows: number;
}

export class CodeStore implements BaseStore {
  readonly dpad: number;
  /** Rows per chunk: every chunk but the last is full. */
  readonly chunkRows: number;
  chunks: Chunk[] = [];
  private readonly host: RowBuffer | null;

  constructor(
    readonly device: Device,
    readonly d: number,
    options: BaseStoreOptions = {},
  ) {
    this.dpad = paddedDim(d);
    this.host = options.hostCopy === false ? null : new RowBuffer(d);
    this.chunkRows = chunkRows(device, this.dpad * 4);
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

  async add(x: Float32Array, n: number): Promise<void> {
    if (n === 0) return;
    const plan = this.place(n);
    // Allocate every new buffer first and wait for the device to confirm them, so that running out
    // of device memory leaves the store as it was.
    const grown = new Map<number, Chunk>();
    try {
      for (const p of plan) {
        const old = this.chunks[p.index];
        const need = p.start + p.rows;
        if (old && old.capacity >= need) continue;
        const capacity = Math.min(this.chunkRows, Math.max(need, (old?.capacity ?? 0) * 2));
        grown.set(p.index, {
          xb: this.device.buffer('xb', capacity * this.dpad * 4),
          xnorm: this.device.buffer('xnorm', capacity * 4),
          rows: old?.rows ?? 0,
          capacity,
        });
      }
      await this.device.flush();
    } catch (err) {
      this.device.discard();
      for (const c of grown.values()) this.free(c);
      throw err;
    }
    // The host copy first: if it cannot grow, nothing has changed yet.
    const hostRows = this.host?.n ?? 0;
    try {
      this.host?.append(x, n);
    } catch (err) {
      for (const c of grown.values()) this.free(c);
      throw err;
    }
    // Commit. A grown chunk holds the old rows too, so it stays in place if a later step fails;
    // only the new rows' counts are rolled back.
    const chunkCount = this.chunks.length;
    const lastRows = chunkCount > 0 ? this.chunks[chunkCount - 1].rows : 0;
    try {
      await this.commit(x, n, plan, grown);
    } catch (err) {
      this.device.discard();
      this.host?.truncate(hostRows);
      for (const c of grown.values()) if (!this.chunks.includes(c)) this.free(c);
      if (chunkCount > 0) this.chunks[chunkCount - 1].rows = lastRows;
      for (const c of this.chunks.splice(chunkCount)) this.free(c);
      throw err;
    }
  }

  /** Which chunks the next `n` rows go to. */
  private place(n: number): Placement[] {
    const plan: Placement[] = [];
    let remaining = n;
    let index = this.chunks.length - 1;
    let filled = index >= 0 ? this.chunks[index].rows : this.chunkRows;
    while (remaining > 0) {
      if (filled === this.chunkRows) {
        index++;
        filled = 0;
      }
      const rows = Math.min(remaining, this.chunkRows - filled);
      plan.push({ index, start: filled, rows });
      filled += rows;
      remaining -= rows;
    }
    return plan;
  }

  private async commit(x: Float32Array, n: number, plan: Placement[], grown: Map<number, Chunk>): Promise<void> {
    const { device, dpad } = this;
    const rowBytes = dpad * 4;
    for (const [i, c] of grown) {
      const old = this.chunks[i];
      if (old) {
        device.copy(old.xb, 0, c.xb, 0, old.rows * rowBytes);
        device.copy(old.xnorm, 0, c.xnorm, 0, old.rows * 4);
      }
    }
    await device.flush();
    for (const [i, c] of grown) {
      const old = this.chunks[i];
      if (old) this.free(old);
      this.chunks[i] = c;
    }
    const padded = padRows(x, n, this.d, dpad);
    let src = 0;
    for (const p of plan) {
      const c = this.chunks[p.index];
      device.upload(c.xb, p.start * rowBytes, padded.subarray(src * dpad, (src + p.rows) * dpad));
      device.dispatch({ kernel: 'norms', x: c.xb, out: c.xnorm, n: p.rows, dpad, row0: p.start, out0: p.start });
      c.rows = p.start + p.rows;
      src += p.rows;
    }
    await device.flush();
  }

  rows(): Float32Array {
    if (!this.host) throw new Error('this store was made without a host copy (hostCopy: false)');
    return this.host.view();
  }

  reset(): void {
    for (const c of this.chunks) this.free(c);
    this.chunks = [];
    this.host?.clear();
  }

  dispose(): void {
    this.reset();
  }

  private free(c: Chunk): void {
    this.device.release(c.xb);
    this.device.release(c.xnorm);
  }
}
