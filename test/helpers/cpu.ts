/** The CPU backend for tests: the CPU device, optionally with a lowered binding limit or small tiles. */
import { Backend } from '../../src/backend/backend.js';
import { CpuDevice } from '../../src/cpu/cpu-device.js';
import type { DeviceOptions } from '../../src/device.js';

export function cpuBackend(options: DeviceOptions = {}): Backend {
  return new Backend(new CpuDevice(options));
}
