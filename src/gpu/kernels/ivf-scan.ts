/** Dispatch of shaders/ivf-scan.wgsl (CPU twin: src/cpu/ivf-scan.ts). */
import type { KernelMetric } from '../../kernel-facts.js';
import type { Kernels } from './kernels.js';
import { kBucket } from './topk.js';

const WG = 64;

export interface IvfScanArgs {
  metric: KernelMetric;
  xq: GPUBuffer;
  probes: GPUBuffer;
  offsets: GPUBuffer;
  xb: GPUBuffer;
  xnorm: GPUBuffer;
  ids: GPUBuffer;
  outS: GPUBuffer;
  outI: GPUBuffer;
  rows: number;
  k: number;
  nprobe: number;
  nseg: number;
  dpad: number;
  q0: number;
  row0: number;
}

export function encodeIvfScan(kernels: Kernels, a: IvfScanArgs): void {
  kernels.recorder.dispatch(
    'ivf-scan',
    kernels.pipelines.get('ivf-scan', { WG, K_CAP: kBucket(a.k), METRIC: a.metric === 'l2' ? 0 : 1 }),
    [a.rows, a.k, a.nprobe, a.nseg, a.dpad / 4, a.q0, a.row0],
    [a.xq, a.probes, a.offsets, a.xb, a.xnorm, a.ids, a.outS, a.outI],
    kernels.fold(a.rows * a.nprobe * a.nseg, WG),
  );
}
