/** Dispatch of shaders/pq-tables.wgsl (CPU twin: src/cpu/pq-tables.ts): one invocation per table entry. */
import type { PqTablesArgs } from '../../device.js';
import type { Kernels } from './kernels.js';

const WG = 64;

export function encodePqTables(kernels: Kernels, a: PqTablesArgs<GPUBuffer>): void {
  kernels.recorder.dispatch(
    'pq-tables',
    kernels.pipelines.get('pq-tables', { WG, METRIC: a.metric === 'l2' ? 0 : 1 }),
    [a.rows, a.M, a.ksub, a.dsub, a.dpad, a.q0],
    [a.xq, a.codebook, a.luts],
    kernels.fold(a.rows * a.M * a.ksub, WG),
  );
}
