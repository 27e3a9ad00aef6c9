/** Dispatch of shaders/ivf-scan.wgsl (CPU twin: src/cpu/ivf-scan.ts). */
import type { IvfScanArgs } from '../../device.js';
import type { Kernels } from './kernels.js';
import { kBucket } from './topk.js';

const WG = 64;

export function encodeIvfScan(kernels: Kernels, a: IvfScanArgs<GPUBuffer>): void {
  kernels.recorder.dispatch(
    'ivf-scan',
    kernels.pipelines.get('ivf-scan', { WG, K_CAP: kBucket(a.k), METRIC: a.metric === 'l2' ? 0 : 1, MASKED: a.mask ? 1 : 0, HALF: a.xh ? 1 : 0 }),
    [a.rows, a.k, a.nprobe, a.nseg, a.dpad / 4, a.q0, a.probe0, a.maskBit0],
    // With HALF the rows' binding holds the half rows. Unmasked, the shader reads nothing from the
    // mask binding; any buffer satisfies the layout.
    [a.xq, a.lists, a.xh ?? a.xb, a.xnorm, a.ids, a.outS, a.outI, a.mask ?? a.ids],
    kernels.fold(a.rows * a.nprobe * a.nseg, WG),
  );
}
