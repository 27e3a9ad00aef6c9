/**
 * Reading a store's rows on the host: the exact re-score reads each search's candidates, `save`
 * reads everything. A store keeps its rows in chunks of `rowWords` words a row (its RowFormat:
 * floats, or codes), one device buffer each; what the host reads is, per chunk, `host`:
 *   - the device buffer's own memory where the device's memory is the host's (the CPU device):
 *     no copy at all, rows are read in place;
 *   - else a host copy in the same layout, kept as rows are added (WebGPU, `hostCopy` true: no
 *     round trip for the re-score, no read-back for save);
 *   - else nothing, and rows are read back from the device when asked for (WebGPU, `hostCopy` false,
 *     the default on a CPU-emulated adapter: see DeviceTuning.hostCopy); the re-score's candidates
 *     are gathered on the device first (gather-rows) and come back in one read.
 * So a store holds at most one host copy of its rows, and none where the device's memory is the host's.
 * Rows come out as floats, decoded by the format where they are codes.
 */
import type { Device, DeviceBuffer } from '../device.js';
import type { RowAt, RowChunk, RowFormat } from '../contracts.js';

/** A run of rows to read: `rows` rows from row `start` of chunk `chunk`. */
export interface RowRun {
  chunk: number;
  start: number;
  rows: number;
}

/** Bytes read back from the device at a time when a store streams its rows out (save). */
const READ_BLOCK_BYTES = 16 << 20;

export class ChunkRows {
  private readonly rowWords: number;

  constructor(
    readonly device: Device,
    readonly format: RowFormat,
    /** Rows per chunk: position = chunk * chunkRows + row. */
    readonly chunkRows: number,
    /** Keep a host copy where the device's memory is not the host's. */
    readonly keepCopy: boolean,
  ) {
    this.rowWords = format.rowWords;
  }

  /** The host side of a new chunk whose buffer `xb` holds `capacity` rows. */
  hostFor(xb: DeviceBuffer, capacity: number): Float32Array | null {
    return this.device.hostView(xb) ?? (this.keepCopy ? new Float32Array(capacity * this.rowWords) : null);
  }

  /** Whether `chunk.host` is a copy the store must write itself (not the device's own memory). */
  isCopy(chunk: RowChunk): boolean {
    return chunk.host !== null && this.device.hostView(chunk.xb) === null;
  }

  /** Writes stored rows (`rowWords` words each) at `row` of the chunk's host copy, if it has one. */
  mirror(chunk: RowChunk, row: number, words: Float32Array): void {
    if (this.isCopy(chunk)) chunk.host!.set(words, row * this.rowWords);
  }

  /** Copies the first `rows` rows of `from`'s host copy into `to`'s (a chunk growing), if they are copies. */
  carry(from: RowChunk, to: RowChunk, rows: number): void {
    if (this.isCopy(from) && this.isCopy(to)) to.host!.set(from.host!.subarray(0, rows * this.rowWords));
  }

  /**
   * Rows by id, for the given ids (all that will be asked for; negative ones are ignored), each at
   * `position(id)` (by default the id itself): read in place or from the host copy, else gathered
   * and read back from the device in one round trip (more only when they exceed one binding).
   */
  async rowsAt(chunks: RowChunk[], ids: ArrayLike<number>, position: (id: number) => number = (id) => id): Promise<RowAt> {
    const { format, rowWords: w, chunkRows } = this;
    if (chunks.every((c) => c.host !== null)) {
      return (id) => {
        const p = position(id);
        const row = p % chunkRows;
        return format.row(chunks[(p - row) / chunkRows].host!, row * w);
      };
    }
    const wanted = new Set<number>();
    for (let i = 0; i < ids.length; i++) if (ids[i] >= 0) wanted.add(position(ids[i])); // -1: no candidate
    const positions = Uint32Array.from(wanted).sort();
    const at = new Map<number, Float32Array>();
    // Gathered on the device (gather-rows, one dispatch a chunk) and read back at once, in rounds
    // of one binding: a copy command a row would cost about 10 us each on lavapipe.
    const perRound = Math.max(1, Math.floor(this.device.limits.maxBindingBytes / (w * 4)));
    for (let r0 = 0; r0 < positions.length; r0 += perRound) {
      const round = positions.subarray(r0, Math.min(positions.length, r0 + perRound));
      const rows = await this.gather(chunks, round);
      for (let j = 0; j < round.length; j++) at.set(round[j], format.row(rows, j * w));
    }
    return (id) => at.get(position(id))!;
  }

  /** The rows at `positions` (ascending, `rowWords` words each, within one binding) gathered on the device and read back. */
  private async gather(chunks: RowChunk[], positions: Uint32Array): Promise<Float32Array> {
    const { device, rowWords: w, chunkRows } = this;
    const inChunk = positions.map((p) => p % chunkRows);
    const index = device.buffer('gather-rows index', inChunk.byteLength);
    const out = device.buffer('gather-rows out', positions.length * w * 4);
    try {
      device.upload(index, 0, inChunk);
      // Ascending positions: each chunk's rows are one stretch of the list.
      for (let i0 = 0; i0 < positions.length; ) {
        const c = Math.floor(positions[i0] / chunkRows);
        let i1 = i0 + 1;
        while (i1 < positions.length && Math.floor(positions[i1] / chunkRows) === c) i1++;
        device.dispatch({ kernel: 'gather-rows', x: chunks[c].xb, rows: index, out, n: i1 - i0, words: w, rows0: i0, out0: i0 });
        i0 = i1;
      }
      const [bytes] = await device.read([{ buffer: out, offset: 0, bytes: positions.length * w * 4 }]);
      return new Float32Array(bytes);
    } finally {
      device.release(index);
      device.release(out);
    }
  }

  /**
   * The rows of `runs`, in order, in blocks of whole rows (`d` floats each, no padding; with
   * `stored`, the rows as stored: `rowWords` words each, codes left coded). A block may be a view
   * of the store's memory: valid until the next block is asked for; do not modify it. Rows with no
   * host side are read back in rounds of up to 16 MiB, however short the runs (an IVF index has
   * one per list and chunk).
   */
  async *read(chunks: RowChunk[], runs: RowRun[], stored = false): AsyncGenerator<Float32Array> {
    const { rowWords: w } = this;
    const out = (words: Float32Array, n: number): Float32Array => (stored ? words : this.format.rows(words, n));
    const blockRows = Math.max(1, Math.floor(READ_BLOCK_BYTES / (w * 4)));
    let pending: RowRun[] = [];
    let pendingRows = 0;
    const flush = async (): Promise<Float32Array[]> => {
      const got = await this.device.read(pending.map((p) => ({ buffer: chunks[p.chunk].xb, offset: p.start * w * 4, bytes: p.rows * w * 4 })));
      const blocks = pending.map((p, i) => out(new Float32Array(got[i]), p.rows));
      pending = [];
      pendingRows = 0;
      return blocks;
    };
    for (const run of runs) {
      const chunk = chunks[run.chunk];
      for (let r0 = 0; r0 < run.rows; r0 += blockRows) {
        const piece = { chunk: run.chunk, start: run.start + r0, rows: Math.min(blockRows, run.rows - r0) };
        if (chunk.host) {
          if (pending.length > 0) yield* await flush();
          yield out(chunk.host.subarray(piece.start * w, (piece.start + piece.rows) * w), piece.rows);
          continue;
        }
        if (pendingRows + piece.rows > blockRows) yield* await flush();
        pending.push(piece);
        pendingRows += piece.rows;
      }
    }
    if (pending.length > 0) yield* await flush();
  }
}

/** The rows `rowAt` gives for `slots`, in that order, as one array of `slots.length * d` (each row's first d values). */
export function gatherRows(rowAt: RowAt, slots: ArrayLike<number>, d: number): Float32Array {
  const out = new Float32Array(slots.length * d);
  for (let i = 0; i < slots.length; i++) out.set(rowAt(slots[i]).subarray(0, d), i * d);
  return out;
}
