/**
 * The WGSL encoders by kernel name: what the GPU device (src/gpu/gpu-device.ts) records for each
 * kernel call. Typed as a map over every name of KernelArgs (src/device.ts), so a kernel added
 * there does not compile until it has an encoder here. Each entry swaps the call's device buffers
 * for their GPUBuffers and hands it to its kernel's file beside this one; the device reaches the
 * kernel files only through this module.
 */
import type { DeviceBuffer, KernelArgs, KernelName } from '../../device.js';
import { encodeCagraMerge } from './cagra-merge.js';
import { encodeCagraOffsets } from './cagra-offsets.js';
import { encodeCagraPrune } from './cagra-prune.js';
import { encodeCagraReverse } from './cagra-reverse.js';
import { encodeGemmScores } from './gemm-scores.js';
import { encodeIvfScan } from './ivf-scan.js';
import { encodeGraphSearch } from './graph-search.js';
import type { Kernels } from './kernels.js';
import { encodeKmeansPartial, encodeKmeansReduce } from './kmeans-update.js';
import { encodeMaskScores } from './mask-scores.js';
import { encodeNorms } from './norms.js';
import { encodeGatherRows } from './gather-rows.js';
import { encodePairsThreshold } from './pairs-threshold.js';
import { encodeSelectRadix } from './select-radix.js';
import { encodeSqScores } from './sq-scores.js';
import { encodePqScores } from './pq-scores.js';
import { encodeHammingScores } from './hamming-scores.js';
import { encodePqTables } from './pq-tables.js';
import { encodeTopk } from './topk.js';
import { encodeTopkMerge } from './topk-merge.js';

// What the device needs of the kernel files besides their encoders: its limits, its gemm-scores
// variants and the check of the option that names one.
export { GPU_MAX_K } from './select-radix.js';
export { gemmVariants, workgroupTile } from './gemm-scores.js';
export { type GemmVariantOption, checkGemmVariantOption } from './gemm-variant.js';

/** The GPUBuffer of a device buffer (the device that owns it says how). */
export type GpuBufferOf = (buffer: DeviceBuffer) => GPUBuffer;

/** Records one call of kernel K. */
export type GpuEncoder<K extends KernelName> = (k: Kernels, call: KernelArgs[K], b: GpuBufferOf) => void;

/** One encoder for every kernel. */
export type GpuEncoders = { readonly [K in KernelName]: GpuEncoder<K> };

export const ENCODERS: GpuEncoders = {
  'norms': (k, call, b) => encodeNorms(k, { ...call, x: b(call.x), out: b(call.out) }),
  'gather-rows': (k, call, b) => encodeGatherRows(k, { ...call, x: b(call.x), rows: b(call.rows), out: b(call.out) }),
  'gemm-scores': (k, call, b) => encodeGemmScores(k, { ...call, xq: b(call.xq), xb: b(call.xb), xnorm: b(call.xnorm), scores: b(call.scores) }),
  'topk': (k, call, b) =>
    encodeTopk(k, {
      ...call, scores: b(call.scores), outS: b(call.outS), outI: b(call.outI),
      bound: call.bound ? { s: b(call.bound.s), i: b(call.bound.i), row0: call.bound.row0 } : null,
      bias: call.bias ? { buf: b(call.bias.buf), bias0: call.bias.bias0 } : null,
    }),
  'topk-merge': (k, call, b) =>
    encodeTopkMerge(k, {
      ...call, partS: b(call.partS), partI: b(call.partI), runInS: b(call.runInS), runInI: b(call.runInI),
      runOutS: b(call.runOutS), runOutI: b(call.runOutI),
    }),
  'select-radix': (k, call, b) =>
    encodeSelectRadix(k, {
      ...call, scores: b(call.scores), ids: call.ids ? b(call.ids) : null, runInS: b(call.runInS), runInI: b(call.runInI), runOutS: b(call.runOutS), runOutI: b(call.runOutI),
    }),
  'ivf-scan': (k, call, b) =>
    encodeIvfScan(k, {
      ...call, xq: b(call.xq), lists: b(call.lists), xb: b(call.xb), xnorm: b(call.xnorm),
      ids: b(call.ids), outS: b(call.outS), outI: b(call.outI), mask: call.mask ? b(call.mask) : null, xh: call.xh ? b(call.xh) : null,
    }),
  'graph-search': (k, call, b) =>
    encodeGraphSearch(k, {
      ...call, xq: b(call.xq), xb: b(call.xb), xbHi: call.xbHi ? b(call.xbHi) : null, xnorm: b(call.xnorm), graph: b(call.graph), seeds: b(call.seeds), mask: call.mask ? b(call.mask) : null,
      outS: b(call.outS), outI: b(call.outI), outWork: call.outWork ? b(call.outWork) : null,
    }),
  'pairs-threshold': (k, call, b) =>
    encodePairsThreshold(k, {
      ...call, scores: b(call.scores), xnormQ: b(call.xnormQ), xnormB: b(call.xnormB), count: b(call.count), pairs: b(call.pairs),
    }),
  'sq-scores': (k, call, b) => encodeSqScores(k, { ...call, xq: b(call.xq), qbias: b(call.qbias), codes: b(call.codes), xnorm: b(call.xnorm), scores: b(call.scores) }),
  'pq-tables': (k, call, b) => encodePqTables(k, { ...call, xq: b(call.xq), codebook: b(call.codebook), luts: b(call.luts) }),
  'pq-scores': (k, call, b) => encodePqScores(k, { ...call, luts: b(call.luts), qbias: b(call.qbias), codes: b(call.codes), scores: b(call.scores) }),
  'hamming-scores': (k, call, b) => encodeHammingScores(k, { ...call, xq: b(call.xq), codes: b(call.codes), scores: b(call.scores) }),
  'mask-scores': (k, call, b) => encodeMaskScores(k, { ...call, scores: b(call.scores), mask: b(call.mask) }),
  'kmeans-partial': (k, call, b) =>
    encodeKmeansPartial(k, {
      ...call, x: b(call.x), xnorm: b(call.xnorm), score: b(call.score), label: b(call.label), sums: b(call.sums),
      counts: b(call.counts), obj: b(call.obj),
    }),
  'kmeans-reduce': (k, call, b) => encodeKmeansReduce(k, { ...call, sums: b(call.sums), counts: b(call.counts), centroids: b(call.centroids), outCounts: b(call.outCounts) }),
  'cagra-prune': (k, call, b) => encodeCagraPrune(k, { ...call, a: b(call.a), d: b(call.d), detours: b(call.detours), out: b(call.out) }),
  'cagra-reverse': (k, call, b) => encodeCagraReverse(k, { ...call, graph: b(call.graph), counts: b(call.counts), offsets: b(call.offsets), edges: b(call.edges) }),
  'cagra-offsets': (k, call, b) => encodeCagraOffsets(k, { ...call, counts: b(call.counts), offsets: b(call.offsets) }),
  'cagra-merge': (k, call, b) => encodeCagraMerge(k, { ...call, graph: b(call.graph), offsets: b(call.offsets), edges: b(call.edges), out: b(call.out) }),
};

/** Records one call with its kernel's encoder. */
export function encode<K extends KernelName>(k: Kernels, call: { kernel: K } & KernelArgs[K], b: GpuBufferOf): void {
  ENCODERS[call.kernel](k, call, b);
}
