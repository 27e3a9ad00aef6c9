/**
 * `memoryBytes` (VectorIndex): what an index holds, counted from the objects themselves, never
 * from a formula. A MemoryTally is handed each array and buffer an index keeps; a device buffer
 * counts as host memory where the device's memory is the host's (the CPU device, and gpu.js's
 * stores, whose rows are read in place: Device.hostView), else as device memory (WebGPU), by its
 * size as the device made it (DeviceBuffer.size: the pool may round up). A host copy of a store's
 * rows (BaseStoreOptions.hostCopy) is host memory. Maps and small objects are not counted.
 */
import type { BaseStore, ListStore } from '../contracts.js';
import type { Device, DeviceBuffer } from '../device.js';

/** Bytes an index holds: `host` in typed arrays on the host, `device` in GPU buffers (0 on the CPU backend). */
export interface MemoryBytes {
  host: number;
  device: number;
}

export class MemoryTally {
  private host = 0;
  private onDevice = 0;

  constructor(private readonly device: Device) {}

  /** A buffer made by the device (null: none), where its memory is. */
  buffer(b: DeviceBuffer | null | undefined): void {
    if (!b) return;
    if (this.device.hostView(b) !== null) this.host += b.size;
    else this.onDevice += b.size;
  }

  /** An array on the host (null: none); never a view of a device buffer counted already. */
  array(a: ArrayBufferView | null | undefined): void {
    if (a) this.host += a.byteLength;
  }

  /** A chunk's rows: its buffer, and its host copy where it is one (not the device's own memory, counted with the buffer). */
  private rows(c: { xb: DeviceBuffer; host: Float32Array | null }): void {
    this.buffer(c.xb);
    if (c.host !== null && this.device.hostView(c.xb) === null) this.array(c.host);
  }

  /** Every chunk of a store: rows (and their host copy) and norms. */
  store(s: BaseStore | null | undefined): void {
    for (const c of s?.chunks ?? []) {
      this.rows(c);
      this.buffer(c.xnorm);
    }
  }

  /** Every chunk of inverted lists: rows (host copy, halves), norms, ids and list tables, with their host mirrors. */
  lists(l: ListStore): void {
    for (const c of l.chunks) {
      this.rows(c);
      for (const b of [c.xh, c.xnorm, c.ids, c.rangesBuf]) this.buffer(b);
      this.array(c.ranges);
      this.array(c.hostIds);
    }
  }

  get bytes(): MemoryBytes {
    return { host: this.host, device: this.onDevice };
  }
}
