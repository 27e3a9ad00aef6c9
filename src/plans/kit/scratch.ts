/** Scratch buffers of one plan step, taken from the device and handed back together. */
import type { Device, DeviceBuffer } from '../../device.js';

/** Per-row lists of (score, id) on the device: `s` f32 and `i` u32, row r at `r * k`. */
export interface RunLists {
  s: DeviceBuffer;
  i: DeviceBuffer;
}

/** Buffers a recorded plan step uses; release them once its results are read. */
export class Scratch {
  private readonly held: DeviceBuffer[] = [];
  constructor(readonly device: Device) {}

  buffer(label: string, bytes: number): DeviceBuffer {
    const b = this.device.buffer(label, bytes);
    this.held.push(b);
    return b;
  }

  lists(len: number): RunLists {
    return { s: this.buffer('run_s', len * 4), i: this.buffer('run_i', len * 4) };
  }

  /** Hands every buffer back, last first, so that the next plan of the same shape gets the same buffers (and cached bind groups). */
  release(): void {
    for (const b of this.held.splice(0).reverse()) this.device.release(b);
  }
}
