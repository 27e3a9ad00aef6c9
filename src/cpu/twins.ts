/**
 * The CPU twins by kernel name: what the CPU device (src/cpu/cpu-device.ts) runs for each kernel
 * call, on the host memory of its buffers. Typed as a map over every name of KernelArgs
 * (src/device.ts), so a kernel added there does not compile until it has a twin here. The twins
 * themselves are the files beside this one; each entry only unpacks a call's arguments for its twin.
 */
import type { DeviceBuffer, KernelArgs, KernelName } from '../device.js';
import { PairList } from '../common/pairs.js';
import { cagraMerge } from './cagra-merge.js';
import { cagraOffsets } from './cagra-offsets.js';
import { cagraPrune } from './cagra-prune.js';
import { cagraReverse } from './cagra-reverse.js';
import { gemmScores } from './gemm-scores.js';
import { ivfScan } from './ivf-scan.js';
import { graphSearch } from './graph-search.js';
import { kmeansPartial, kmeansReduce } from './kmeans-update.js';
import { maskScores } from './mask-scores.js';
import { norms } from './norms.js';
import { gatherRows } from './gather-rows.js';
import { pairsThreshold } from './pairs-threshold.js';
import { selectRadix } from './select-radix.js';
import { sqScores } from './sq-scores.js';
import { pqScores } from './pq-scores.js';
import { hammingScores } from './hamming-scores.js';
import { pqTables } from './pq-tables.js';
import { topk } from './topk.js';
import { topkMerge } from './topk-merge.js';

/** A buffer's host memory as floats (`f`) or as u32 words (`u`); the device that owns it says how. */
export type F32Of = (b: DeviceBuffer) => Float32Array;
export type U32Of = (b: DeviceBuffer) => Uint32Array;

/** Runs kernel K's twin on the host memory of the call's buffers, at once. */
export type CpuTwin<K extends KernelName> = (c: KernelArgs[K], f: F32Of, u: U32Of) => void;

/** One twin for every kernel. */
export type CpuTwins = { readonly [K in KernelName]: CpuTwin<K> };

export const TWINS: CpuTwins = {
  'norms': (c, f) => {
    norms(f(c.x).subarray(c.row0 * c.dpad), c.n, c.dpad, f(c.out).subarray(c.out0));
  },
  'gather-rows': (c, _f, u) => {
    gatherRows(u(c.x), u(c.rows), c.rows0, c.n, c.words, u(c.out), c.out0);
  },
  'gemm-scores': (c, f) => {
    gemmScores(c.metric, f(c.xq), c.q0, c.rows, f(c.xb), f(c.xnorm), c.col0, c.cols, c.dpad, f(c.scores), c.ldc);
  },
  'topk': (c, f, u) => {
    topk(f(c.scores), c.ldc, c.rows, c.cols, c.id0, c.k, c.nseg, c.segLen, f(c.outS), u(c.outI),
      c.bound ? { s: f(c.bound.s), i: u(c.bound.i), row0: c.bound.row0 } : null, c.transposed ?? false, c.bias ? { s: f(c.bias.buf), bias0: c.bias.bias0 } : null);
  },
  'topk-merge': (c, f, u) => {
    const at = c.row0 * c.k;
    const len = c.rows * c.k;
    topkMerge(f(c.partS), u(c.partI), c.rows, c.nseg, c.k,
      c.first ? null : f(c.runInS).subarray(at, at + len), c.first ? null : u(c.runInI).subarray(at, at + len),
      f(c.runOutS).subarray(at, at + len), u(c.runOutI).subarray(at, at + len), c.stride ?? c.nseg, c.seg0 ?? 0);
  },
  'select-radix': (c, f, u) => {
    const at = c.row0 * c.k;
    const len = c.rows * c.k;
    selectRadix(f(c.scores), c.ldc, c.rows, c.cols, c.id0, c.ids ? u(c.ids) : null, c.k,
      c.first ? null : f(c.runInS).subarray(at, at + len), c.first ? null : u(c.runInI).subarray(at, at + len),
      f(c.runOutS).subarray(at, at + len), u(c.runOutI).subarray(at, at + len));
  },
  'ivf-scan': (c, f, u) => {
    ivfScan(c.metric, f(c.xq), c.q0, c.rows, u(c.lists), c.probe0, c.nprobe, c.nseg, f(c.xb), c.xh ? u(c.xh) : null, f(c.xnorm), u(c.ids),
      c.mask ? u(c.mask) : null, c.maskBit0, c.dpad, c.k, f(c.outS), u(c.outI));
  },
  'graph-search': (c, f, u) => {
    graphSearch({
      ...c, xq: f(c.xq), xb: c.half ? u(c.xb) : f(c.xb), xbHi: c.xbHi ? u(c.xbHi) : null, xnorm: f(c.xnorm), graph: u(c.graph), seeds: u(c.seeds), mask: c.mask ? u(c.mask) : null,
      outS: f(c.outS), outI: u(c.outI), outWork: c.outWork ? u(c.outWork) : null,
    });
  },
  'pairs-threshold': (c, f, u) => {
    const found = new PairList();
    pairsThreshold(c.metric, c.allPairs, f(c.scores), c.ldc, c.rows, c.cols, c.q0, c.id0, f(c.xnormQ).subarray(c.qn0), f(c.xnormB).subarray(c.cn0),
      c.limit, c.rel, found);
    // As the shader: the count goes on past capacity; pairs beyond it are dropped.
    const count = u(c.count);
    const pairs = u(c.pairs);
    const list = found.view();
    for (let p = 0; p < found.length; p++, count[0]++) {
      if (count[0] < c.capacity) {
        pairs[2 * count[0]] = list[2 * p];
        pairs[2 * count[0] + 1] = list[2 * p + 1];
      }
    }
  },
  'sq-scores': (c, f, u) => {
    sqScores(c.metric, c.kind, f(c.xq), f(c.qbias), c.q0, c.rows, u(c.codes), f(c.xnorm), c.col0, c.cols, c.dpad, c.codeWords, f(c.scores), c.ldc);
  },
  'pq-tables': (c, f) => {
    pqTables(c.metric, f(c.xq), f(c.codebook), f(c.luts), c.q0, c.rows, c.M, c.ksub, c.dsub, c.dpad);
  },
  'pq-scores': (c, f, u) => {
    pqScores(f(c.luts), f(c.qbias), c.q0, c.rows, u(c.codes), c.col0, c.cols, c.M, c.nbits, c.codeWords, f(c.scores), c.ldc);
  },
  'hamming-scores': (c, f, u) => {
    hammingScores(u(c.xq), c.q0, c.rows, u(c.codes), c.col0, c.cols, c.codeWords, f(c.scores), c.ldc);
  },
  'mask-scores': (c, f, u) => {
    maskScores(f(c.scores), c.ldc, c.rows, c.cols, u(c.mask), c.bit0);
  },
  'kmeans-partial': (c, f, u) => {
    kmeansPartial(f(c.x), f(c.xnorm), f(c.score), u(c.label), c.n, c.p0, c.dpad, c.nc, c.block, f(c.sums), u(c.counts), f(c.obj));
  },
  'kmeans-reduce': (c, f, u) => {
    kmeansReduce(f(c.sums), u(c.counts), c.nc, c.dpad, c.nblocks, f(c.centroids), u(c.outCounts));
  },
  'cagra-prune': (c, _f, u) => {
    cagraPrune(u(c.a), c.a0, u(c.d), c.d0, c.drows, c.n, c.kin, c.degree, c.node0, c.nodes, c.first, c.last, u(c.detours), u(c.out), c.out0);
  },
  'cagra-reverse': (c, _f, u) => {
    cagraReverse(u(c.graph), c.n, c.degree, c.node0, c.nodes, c.scatter, u(c.counts), u(c.offsets), u(c.edges));
  },
  'cagra-offsets': (c, _f, u) => {
    cagraOffsets(u(c.counts), c.n, u(c.offsets));
  },
  'cagra-merge': (c, _f, u) => {
    cagraMerge(u(c.graph), u(c.offsets), u(c.edges), c.n, c.degree, c.node0, c.nodes, u(c.out), c.out0);
  },
};

/** Runs one call's twin from `twins` (TWINS, or a table that overrides some of them). */
export function runTwin<K extends KernelName>(twins: CpuTwins, c: { kernel: K } & KernelArgs[K], f: F32Of, u: U32Of): void {
  twins[c.kernel](c, f, u);
}
