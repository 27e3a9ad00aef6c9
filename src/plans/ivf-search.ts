/**
 * IVF search, written once for every device, with two strategies:
 *
 * scan (few queries per list; only for k <= HEAP_MAX_K: a private heap per (query, list, segment)):
 *   for each batch of queries (queries, running lists, and probes beside the lists' ranges each fit
 *   one binding):
 *     coarse: flatLists against the centroids, k = nprobe  -> probes[rows x nprobe] on the device
 *     the probes copied behind the lists' ranges (ivf-scan reads both from one binding)
 *     for each query tile (its partial lists fit one binding), for each chunk of the lists:
 *       ivf-scan    -> per (query, probe, segment) the k best of that list's rows in the chunk
 *                      (with `half`, scored on the chunk's float16 copy: src/stores/half-rows.ts)
 *       topk-merge  -> into the row's running list, MERGE_ROUND lists at a time
 *     one readback of the batch's lists
 *
 * gemm (many queries per list; Faiss's big-batch search does the same on the CPU):
 *   for each batch: the coarse search as above, its probes read back; on the host the (query,
 *   probe) pairs are grouped by list and the queries copied into one row per pair, list after list
 *   (`grouped`); then for each probed list, for each of its runs of rows in a chunk:
 *       gemm-scores -> the list's queries against the run, in score tiles, as a flat search
 *       topk, topk-merge or select-radix -> each pair's k best rows of the list (by row position;
 *         for k > HEAP_MAX_K by id where the ids do not increase with position)
 *   one readback; on the host each query's nprobe lists become its k best by (score, id).
 * A scan invocation scores one query against a list with one load per multiply-add; the GEMM
 * reuses every load across many queries and rows (16 x 2 on lavapipe), which wins as soon as lists have a few queries.
 */
import type { Device, DeviceBuffer } from '../device.js';
import { padRows } from '../device.js';
import { HEAP_MAX_K, type KernelMetric, MERGE_ROUND, PAD_ID } from '../kernel-facts.js';
import type { BaseStore, ListStore } from '../contracts.js';
import { type SlotResult, type SearchTimings } from '../types.js';

import type { RunLists, Scratch } from './kit/scratch.js';
import { checkResultRow, groupedBatch, queryBatch, scanBatch, scanTiles } from './kit/tiling.js';
import { floatQueries, queryRows } from './kit/queries.js';
import { type RowRun, flatLists, scoreRuns, scoreScratch } from './kit/score.js';
import { type HostLists, readLists, searchInBatches, withMasks } from './kit/batches.js';
import { groupProbes } from './kit/probes.js';
import { InvalidArgumentError } from '../errors.js';

export type IvfStrategy = 'scan' | 'gemm';

/**
 * The strategy for a batch of `rows` queries: GEMM once the probed lists have, on average, at
 * least `GEMM_MIN_QUERIES_PER_LIST` queries each (see the README for the measured crossover), and
 * always for k > HEAP_MAX_K, which the scan's heaps do not hold.
 */
export function chooseIvfStrategy(device: Device, rows: number, nprobe: number, nlist: number, k: number): IvfStrategy {
  if (k > HEAP_MAX_K) return 'gemm';
  const forced = device.tuning.ivfStrategy;
  if (forced !== 'auto') return forced;
  return (rows * nprobe) / nlist >= GEMM_MIN_QUERIES_PER_LIST ? 'gemm' : 'scan';
}

/**
 * Measured on lavapipe with scripts/ivf-crossover.mjs (clustered 200,000 x 128, IVF512, nprobe 16,
 * k = 10, the scan on half rows; queries/s, GEMM / scan): 0.40 - 0.61 at batches of 1 - 30 (up to
 * 0.9 queries per list), 0.85 at 100 (3.1), 1.05 at 200 (6.3), 1.81 at 1000 (31): the crossover
 * lies between 3 and 6 queries per list (README). (With the 8-query kernel it was about 3, on
 * Fashion-MNIST 20,000 x 784, IVF128.)
 */
export const GEMM_MIN_QUERIES_PER_LIST = 6;

export async function searchIvf(
  device: Device,
  coarse: BaseStore,
  lists: ListStore,
  xq: Float32Array,
  nq: number,
  k: number,
  nprobe: number,
  metric: KernelMetric,
  timings?: SearchTimings,
  masks: Uint32Array[] | null = null,
  half = false,
): Promise<SlotResult> {
  const { dpad } = coarse;
  const batch = lists.ntotal > 0 ? queryBatch(device, nq, dpad, k, nprobe) : 0;
  // Where even one query's copies exceed a binding, the scan does the batch. Where ids do not
  // increase with position, the GEMM's heaps would break ties by position: the scan does it, up to
  // HEAP_MAX_K (beyond, select-radix reads the ids).
  const grouped = groupedBatch(device, batch, dpad, k, nprobe);
  const gemmOrders = lists.idsInPositionOrder || k > HEAP_MAX_K;
  // ivf-scan reads float rows only: lists of codes always take the GEMM strategy's scoring.
  const coded = lists.format.scoring.kernel !== 'gemm-scores';
  if (coded && !(grouped >= 1 && gemmOrders)) {
    throw new InvalidArgumentError(
      `IVF search of coded lists scores (query, list) pairs: needs one query's ${nprobe} probed lists in one binding and ids in position order in every list (or k > ${HEAP_MAX_K})`,
    );
  }
  const strategy = coded ? 'gemm' : grouped >= 1 && gemmOrders ? chooseIvfStrategy(device, Math.min(nq, grouped), nprobe, lists.nlist, k) : 'scan';
  // Every size check before the first call is recorded (a check failing later would leave calls behind).
  let rowsPerBatch = strategy === 'gemm' ? grouped : batch;
  if (batch > 0) {
    if (strategy === 'gemm') checkResultRow(device, k);
    else if (k > HEAP_MAX_K) {
      throw new InvalidArgumentError(
        `IVF search with k = ${k}: above ${HEAP_MAX_K} only the GEMM strategy selects, and it needs one query's ${nprobe} probed lists ` +
          `of k (${nprobe * Math.max(dpad, k) * 4} bytes) in one binding; this device binds at most ${device.limits.maxBindingBytes} bytes at once (maxBindingBytes)`,
      );
    } else {
      rowsPerBatch = scanBatch(device, batch, lists.nlist, nprobe);
      scanTiles(device, Math.min(nq, rowsPerBatch), nprobe, k);
    }
  }
  // Half rows serve the scan only (the GEMM reuses each load across queries already).
  const halfScores = half && strategy === 'scan' && lists.half !== null;
  const result = await withMasks(device, masks, (maskBufs) =>
    searchInBatches(device, xq, nq, coarse.d, dpad, k, rowsPerBatch, metric, timings, async (scratch, xqBuf, rows, queries) => {
      const probes = flatLists(scratch, coarse, floatQueries(xqBuf), 0, rows, nprobe, metric).i;
      if (strategy === 'scan') return readLists(device, scanLists(scratch, lists, xqBuf, probes, rows, k, nprobe, metric, maskBufs, halfScores), rows, k, timings);
      const [hostProbes] = await device.read([{ buffer: probes, offset: 0, bytes: rows * nprobe * 4 }], timings);
      return gemmLists(scratch, lists, queries, coarse.d, new Uint32Array(hostProbes), rows, k, nprobe, metric, maskBufs, timings);
    }),
  );
  return halfScores ? { ...result, halfScores } : result;
}

/** Records the list scans and merges of one batch (on the half rows with `half`); returns the running lists (`rows * k`). */
function scanLists(
  scratch: Scratch,
  lists: ListStore,
  xq: DeviceBuffer,
  probes: DeviceBuffer,
  nq: number,
  k: number,
  nprobe: number,
  metric: KernelMetric,
  masks: DeviceBuffer[] | null,
  half: boolean,
): RunLists {
  const { device } = scratch;
  const { rowsPerTile, nseg } = scanTiles(device, nq, nprobe, k, lists.ntotal / lists.nlist);
  const nlists = nprobe * nseg;
  const partS = scratch.buffer('part_s', rowsPerTile * nlists * k * 4);
  const partI = scratch.buffer('part_i', rowsPerTile * nlists * k * 4);
  const run = [scratch.lists(nq * k), scratch.lists(nq * k)];
  // ivf-scan's lists binding: the scanned chunk's ranges (copied in before its scans), then the probes.
  const rangeBytes = 8 * lists.nlist;
  const scanned = scratch.buffer('scan_lists', rangeBytes + nq * nprobe * 4);
  device.copy(probes, 0, scanned, rangeBytes, nq * nprobe * 4);
  let rounds = 0;
  for (let q0 = 0; q0 < nq; q0 += rowsPerTile) {
    const rows = Math.min(rowsPerTile, nq - q0);
    rounds = 0;
    for (const [c, ch] of lists.chunks.entries()) {
      device.copy(ch.rangesBuf, 0, scanned, 0, rangeBytes);
      device.dispatch({
        kernel: 'ivf-scan', metric, mask: masks?.[c] ?? null, maskBit0: 0, xq, lists: scanned, probe0: rangeBytes / 4 + q0 * nprobe, xb: ch.xb, xh: half ? ch.xh : null,
        xnorm: ch.xnorm, ids: ch.ids, outS: partS, outI: partI, rows, k, nprobe, nseg, dpad: lists.dpad, q0,
      });
      for (let seg0 = 0; seg0 < nlists; seg0 += MERGE_ROUND, rounds++) {
        const [src, dst] = rounds % 2 === 0 ? [run[0], run[1]] : [run[1], run[0]];
        device.dispatch({
          kernel: 'topk-merge', partS, partI, runInS: src.s, runInI: src.i, runOutS: dst.s, runOutI: dst.i,
          rows, k, nseg: Math.min(MERGE_ROUND, nlists - seg0), first: rounds === 0, row0: q0, stride: nlists, seg0,
        });
      }
    }
  }
  return run[rounds % 2];
}

/**
 * The GEMM strategy for one batch (see the file comment): `probes` (`rows * nprobe`, on the host)
 * say which lists each query probes; `queries` (`rows * d`) are the batch's queries. Returns each
 * query's k best (score, id), best first.
 */
async function gemmLists(
  scratch: Scratch,
  lists: ListStore,
  queries: Float32Array,
  d: number,
  probes: Uint32Array,
  rows: number,
  k: number,
  nprobe: number,
  metric: KernelMetric,
  masks: DeviceBuffer[] | null,
  timings?: SearchTimings,
): Promise<HostLists> {
  const { device } = scratch;
  const { dpad } = lists;
  checkResultRow(device, k);
  const { order, first, count, npairs, widest, pairOf, grouped, listOf } = groupProbes(probes, rows, nprobe, queries, d);
  const out: HostLists = { s: new Float32Array(rows * k).fill(Infinity), i: new Uint32Array(rows * k).fill(PAD_ID) };
  if (npairs === 0) return out;
  const xg = scratch.buffer('xq_grouped', npairs * dpad * 4);
  device.upload(xg, 0, padRows(grouped, npairs, d, dpad));
  // Codes score each pair's query transformed (for residual codes, against the pair's list).
  const q = queryRows(scratch, lists.format, xg, grouped, npairs, metric, listOf);
  // Tiles as wide as the longest run of rows probed (lists are short: no empty segments to select).
  // Selected by position, mapped to ids on the host; where ids do not increase with position
  // (only here for k > HEAP_MAX_K), select-radix reads the chunks' ids, to break ties on them.
  const byId = !lists.idsInPositionOrder;
  const runsOf = new Map<number, RowRun[]>();
  let longest = 1;
  for (const l of order) {
    const runs = lists.extentsOf(l).map((e) => {
      const ch = lists.chunks[e.chunk];
      longest = Math.max(longest, e.size);
      const ids = byId ? { id0: e.start, ids: ch.ids } : { id0: lists.position(e.chunk, e.start) };
      return { xb: ch.xb, xnorm: ch.xnorm, start: e.start, rows: e.size, mask: masks?.[e.chunk], ...ids };
    });
    runsOf.set(l, runs);
  }
  const t = scoreScratch(scratch, k, widest, longest, lists.chunkRows, npairs, lists.format);
  const { run } = t;
  // Which of the two running buffers holds each list's final lists (the ping-pong's parity).
  const final = new Map<number, number>();
  for (const l of order) {
    const o = first.get(l)!;
    const cnt = count.get(l)!;
    let tiles = 0;
    for (let r0 = 0; r0 < cnt; r0 += t.queryTile) {
      tiles = scoreRuns(device, t, q, o + r0, Math.min(t.queryTile, cnt - r0), o + r0, runsOf.get(l)!, k, lists.format, metric);
    }
    if (tiles > 0) final.set(l, tiles % 2);
  }
  const bytes = npairs * k * 4;
  const [s0, i0, s1, i1] = await device.read(
    [run[0].s, run[0].i, run[1].s, run[1].i].map((buffer) => ({ buffer, offset: 0, bytes })),
    timings,
  );
  const host = [
    { s: new Float32Array(s0), i: new Uint32Array(i0) },
    { s: new Float32Array(s1), i: new Uint32Array(i1) },
  ];
  // Each query's nprobe lists (rows by position) become its k best by (score, id).
  const candS = new Float32Array(nprobe * k);
  const candI = new Uint32Array(nprobe * k);
  for (let q = 0; q < rows; q++) {
    let m = 0;
    for (let p = 0; p < nprobe; p++) {
      const t = pairOf[q * nprobe + p];
      const which = t < 0 ? undefined : final.get(probes[q * nprobe + p]);
      if (which === undefined) continue;
      const src = host[which];
      for (let j = t * k; j < (t + 1) * k && src.i[j] !== PAD_ID; j++) {
        candS[m] = src.s[j];
        candI[m] = byId ? src.i[j] : lists.idAt(src.i[j]);
        m++;
      }
    }
    selectBest(candS, candI, m, k, out.s.subarray(q * k, (q + 1) * k), out.i.subarray(q * k, (q + 1) * k));
  }
  return out;
}

/**
 * Writes the min(k, m) best of the `m` candidates (s, id) by (score, id), best first, into outS /
 * outI. The k-th score comes from a native sort of the scores; only candidates at or below it are
 * ordered with a comparison.
 */
function selectBest(s: Float32Array, ids: Uint32Array, m: number, k: number, outS: Float32Array, outI: Uint32Array): void {
  if (m === 0) return;
  const kth = m <= k ? Infinity : s.slice(0, m).sort()[k - 1];
  const keep: number[] = [];
  for (let j = 0; j < m; j++) if (s[j] <= kth) keep.push(j);
  keep.sort((a, b) => s[a] - s[b] || ids[a] - ids[b]);
  for (let j = 0; j < Math.min(k, keep.length); j++) {
    outS[j] = s[keep[j]];
    outI[j] = ids[keep[j]];
  }
}
