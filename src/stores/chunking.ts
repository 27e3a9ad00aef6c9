/**
 * How many rows a store puts in one chunk: every chunk is one device buffer, within one binding
 * (`limits.maxBindingBytes`), so a lowered limit in a test drives the chunking that large data needs
 * on a real device. The plans' tiling (src/plans/kit/tiling.ts) sizes its buffers the same way.
 */
import type { Device } from '../device.js';
import { InvalidArgumentError } from '../errors.js';

/** Rows of `rowBytes` that fit one binding, capped by `cap`; throws if not even one does. */
export function rowsPerBinding(device: Device, rowBytes: number, what: string, cap = Infinity): number {
  const fit = Math.floor(device.limits.maxBindingBytes / rowBytes);
  if (fit < 1) {
    throw new InvalidArgumentError(
      `one ${what} takes ${rowBytes} bytes; this device binds at most ${device.limits.maxBindingBytes} bytes at once (maxBindingBytes)`,
    );
  }
  return Math.max(1, Math.min(fit, cap));
}

/** Rows per chunk of a store with rows of `rowBytes` (vectors, ids, norms each in their own buffer). */
export function chunkRows(device: Device, rowBytes: number): number {
  return rowsPerBinding(device, rowBytes, 'stored row', device.tuning.chunkRows);
}
