/** Dispatch of shaders/graph-search.wgsl (CPU twin: src/cpu/graph-search.ts). */
import { type GraphSearchArgs, checkGraphSearchArgs } from '../../device.js';
import { WebGpuUnavailableError } from '../../errors.js';
import { PAD_ID } from '../../kernel-facts.js';
import { STORAGE, createBuffer } from '../recorder.js';
import type { Kernels } from './kernels.js';

/** Invocations per workgroup (one workgroup per query). */
const WG = 64;

/** Bytes of workgroup memory the shader declares (its header itemises them). */
export const GRAPH_SEARCH_WORKGROUP_BYTES = 16_016;

/**
 * The kernel's one read_write binding (shaders/graph-search.wgsl `io`): the seeds, then the
 * results' scores and ids, then the iteration counts when asked for. One buffer per device, grown
 * as needed; calls in one submit reuse it in turn: each copies its seeds in and its results out
 * around its own dispatch, in recording order.
 */
const scratch = new WeakMap<GPUDevice, GPUBuffer>();

function scratchBuffer(device: GPUDevice, bytes: number, maxBytes: number): GPUBuffer {
  const had = scratch.get(device);
  if (had && had.size >= bytes) return had;
  // The old one may still be named by calls recorded before this one; it is freed once unreferenced.
  // Grown by doubling, never past what one binding holds (the plan's batch keeps `bytes` within it).
  const size = Math.max(bytes, Math.min(2 * (had?.size ?? 0), maxBytes - (maxBytes % 4)));
  const b = createBuffer(device, 'graph-search scratch', size, STORAGE());
  scratch.set(device, b);
  return b;
}

export function encodeGraphSearch(kernels: Kernels, a: GraphSearchArgs<GPUBuffer>): void {
  checkGraphSearchArgs(a);
  const limit = kernels.ctx.limits.maxComputeWorkgroupStorageSize;
  if (GRAPH_SEARCH_WORKGROUP_BYTES > limit) {
    throw new WebGpuUnavailableError(`graph-search needs ${GRAPH_SEARCH_WORKGROUP_BYTES} bytes of workgroup memory; this device allows ${limit}`);
  }
  if (a.rows === 0) return;
  const { recorder } = kernels;
  // io: seeds at [0, seeds), scores at [out0, out0 + results), ids after, counts at iter0.
  const seeds = a.rows * a.nseeds;
  const results = a.rows * a.k;
  const out0 = seeds;
  const iter0 = a.outWork ? out0 + 2 * results : PAD_ID;
  const io = scratchBuffer(kernels.ctx.device, 4 * (out0 + 2 * results + (a.outWork ? 2 * a.rows : 0)), kernels.ctx.limits.maxStorageBufferBindingSize);
  if (seeds > 0) recorder.copy(a.seeds, 0, io, 0, 4 * seeds);
  const split = a.xbHi ? a.rowSplit! : PAD_ID;
  recorder.dispatch(
    'graph-search',
    kernels.pipelines.get('graph-search', { WG, METRIC: a.metric === 'l2' ? 0 : 1, MASKED: a.mask ? 1 : 0, HALF: a.half ? 1 : 0, TEAM: a.team ?? 1 }),
    [a.rows, a.q0, a.dpad / 4, a.degree, a.nseeds, a.itopk, a.searchWidth, a.maxIterations, a.hashBits, a.k, a.maskBit0, iter0, out0, split],
    // With HALF xb holds the half rows (those before rowSplit). Unmasked, the shader reads nothing
    // from the mask binding, nor without xbHi from that one: any buffer satisfies the layout.
    [a.xq, a.xb, a.xnorm, a.graph, io, a.mask ?? a.graph, a.xbHi ?? a.xb],
    kernels.fold(a.rows * WG, WG),
  );
  recorder.copy(io, 4 * out0, a.outS, 0, 4 * results);
  recorder.copy(io, 4 * (out0 + results), a.outI, 0, 4 * results);
  if (a.outWork) recorder.copy(io, 4 * iter0, a.outWork, 0, 8 * a.rows);
}
