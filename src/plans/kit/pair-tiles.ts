/**
 * Row tiles whose pairs pairs-threshold appends to one buffer (the self-join, range search):
 *
 *   for each row tile (at most maxRows rows, fewer after a dense one):
 *     record the tile's calls (gemm-scores, pairs-threshold, ...), counting its pairs
 *     read the count; if the pairs did not fit, re-run the tile with room for all of them (or, past
 *     one binding, with half the rows); else read the pairs and hand them on
 *
 * The count is exact even past the buffer's capacity (see shaders/pairs-threshold.wgsl), so no
 * pair is ever dropped, and a caller can refuse a tile before any buffer grows.
 */
import type { Device, DeviceBuffer } from '../../device.js';
import { InvalidArgumentError } from '../../errors.js';

/**
 * Records one tile: rows r0 .. r0 + rows - 1 (numbered from 0 within the run), its pairs-threshold
 * calls appending to `pairs` (room for `capacity`) and counting in `count`.
 */
export type RecordTile = (r0: number, rows: number, count: DeviceBuffer, pairs: DeviceBuffer, capacity: number) => void;

export interface TileHandlers {
  record: RecordTile;
  /** Called with a tile's pair count before its pairs are read; may throw to stop the run. */
  check?: (n: number, r0: number) => void;
  /** The tile's pairs [i0, j0, i1, j1, ...], in no particular order: a new array, the caller's to keep. */
  onPairs: (block: Uint32Array, r0: number, rows: number) => void;
  /** What row r is, for the error when it alone has more pairs than one binding holds (`row 12`). */
  rowName: (r: number) => string;
}

/** The count and pair buffers of a plan's row tiles: the pair buffer grows as tiles need, up to one binding. */
export class PairTiles {
  /** Pairs one tile may append: one binding's worth. */
  readonly maxTilePairs: number;
  private readonly count: DeviceBuffer;
  private pairs: DeviceBuffer;
  private capacity: number;

  constructor(private readonly device: Device) {
    this.maxTilePairs = Math.floor(device.limits.maxBindingBytes / 8);
    this.count = device.buffer('pair_count', 4);
    this.capacity = Math.min(this.maxTilePairs, Math.max(16, device.tuning.pairCapacity));
    this.pairs = device.buffer('pairs', this.capacity * 8);
  }

  /** Runs rows 0 .. total - 1 in tiles of at most `maxRows` rows, in row order (see the file comment). */
  async run(total: number, maxRows: number, h: TileHandlers): Promise<void> {
    const { device } = this;
    // Rows per tile: maxRows, halved while a tile has more pairs than one binding holds.
    let step = maxRows;
    for (let r0 = 0; r0 < total; ) {
      let rows: number;
      let block: Uint32Array;
      for (;;) {
        rows = Math.min(step, total - r0);
        device.clear(this.count);
        h.record(r0, rows, this.count, this.pairs, this.capacity);
        const n = new Uint32Array((await device.read([{ buffer: this.count, offset: 0, bytes: 4 }]))[0])[0];
        h.check?.(n, r0);
        if (n > this.maxTilePairs) {
          if (rows === 1) {
            throw new InvalidArgumentError(
              `${h.rowName(r0)} alone has ${n} candidate pairs, more than one binding holds (${this.maxTilePairs}); use a stricter threshold`,
            );
          }
          step = Math.max(1, Math.floor(rows / 2));
          continue;
        }
        if (n <= this.capacity) {
          block = n > 0 ? new Uint32Array((await device.read([{ buffer: this.pairs, offset: 0, bytes: n * 8 }]))[0]) : new Uint32Array(0);
          break;
        }
        device.release(this.pairs);
        this.capacity = n;
        this.pairs = device.buffer('pairs', this.capacity * 8);
      }
      h.onPairs(block, r0, rows);
      r0 += rows;
      step = Math.min(maxRows, 2 * step); // back towards full tiles after a dense region
    }
  }

  release(): void {
    this.device.release(this.count);
    this.device.release(this.pairs);
  }
}
