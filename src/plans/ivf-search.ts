/**
 * IVF search, written once for every device:
 *
 *   for each batch of queries (queries, probes and running lists each fit one binding):
 *     coarse: flatLists against the centroids, k = nprobe  -> probes[rows x nprobe] on the device
 *     for each query tile (its partial lists fit one binding), for each chunk of the lists:
 *       ivf-scan    -> per (query, probe, segment) the k best of that list's rows in the chunk
 *       topk-merge  -> into the row's running list, MERGE_ROUND lists at a time
 *     one readback of the batch's lists
 */
import type { Device, DeviceBuffer } from '../device.js';
import { type KernelMetric, MERGE_ROUND } from '../kernel-facts.js';
import type { CodeStore } from '../stores/code-store.js';
import type { DeviceLists } from '../stores/inverted-lists.js';
import type { SearchResult, SearchTimings } from '../types.js';
import { flatLists, searchInBatches } from './flat-search.js';
import type { RunLists, Scratch } from './scratch.js';
import { queryBatch, scanTiles } from './tiling.js';

export function searchIvf(
  device: Device,
  coarse: CodeStore,
  lists: DeviceLists,
  xq: Float32Array,
  nq: number,
  k: number,
  nprobe: number,
  metric: KernelMetric,
  timings?: SearchTimings,
): Promise<SearchResult> {
  const batch = lists.ntotal > 0 ? queryBatch(device, nq, coarse.dpad, k, nprobe) : 0;
  return searchInBatches(device, xq, nq, coarse.d, coarse.dpad, k, batch, metric, timings, (scratch, xqBuf, rows) => {
    const probes = flatLists(scratch, coarse, xqBuf, 0, rows, nprobe, metric).i;
    return scanLists(scratch, lists, xqBuf, probes, rows, k, nprobe, metric);
  });
}

/** Records the list scans and merges of one batch; returns the running lists (`rows * k`). */
function scanLists(
  scratch: Scratch,
  lists: DeviceLists,
  xq: DeviceBuffer,
  probes: DeviceBuffer,
  nq: number,
  k: number,
  nprobe: number,
  metric: KernelMetric,
): RunLists {
  const { device } = scratch;
  const { rowsPerTile, nseg } = scanTiles(device, nq, nprobe, k);
  const nlists = nprobe * nseg;
  const partS = scratch.buffer('part_s', rowsPerTile * nlists * k * 4);
  const partI = scratch.buffer('part_i', rowsPerTile * nlists * k * 4);
  const run = [scratch.lists(nq * k), scratch.lists(nq * k)];
  let rounds = 0;
  for (let q0 = 0; q0 < nq; q0 += rowsPerTile) {
    const rows = Math.min(rowsPerTile, nq - q0);
    rounds = 0;
    for (const ch of lists.chunks) {
      device.dispatch({
        kernel: 'ivf-scan', metric, xq, probes, ranges: ch.rangesBuf, xb: ch.xb, xnorm: ch.xnorm, ids: ch.ids,
        outS: partS, outI: partI, rows, k, nprobe, nseg, dpad: lists.dpad, q0, row0: q0,
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
