/**
 * Exact k-NN against a code store, written once for every device:
 *
 *   for each batch of queries (each fits one binding):
 *     for each query tile (queryTile queries), for each chunk, for each column tile (tileCols rows):
 *       gemm-scores  -> scores[queryTile x tileCols]   (the nq x n matrix is never materialised)
 *       mask-scores  -> (a masked search) rows not allowed scored +Infinity
 *       k <= HEAP_MAX_K:
 *         topk         -> nseg partial lists per query row (a private heap per segment)
 *         topk-merge   -> the row's running list of the k best (ping-pong between two buffers)
 *       k > HEAP_MAX_K:
 *         select-radix -> the row's running list of the k best (ping-pong), unsorted
 *     one readback of the batch's lists (large k: each row then sorted on the host)
 *
 * The choice by k is the same on every device, so the CPU runs the plan the GPU runs. The parts
 * live in the plan kit (src/plans/kit): `flatLists` (score.ts) records the inner part for queries
 * already on the device; the IVF plan (coarse search) and the k-means step (assignment) use it too.
 */
import type { Device } from '../device.js';
import type { KernelMetric } from '../kernel-facts.js';
import type { BaseStore } from '../contracts.js';
import type { SlotResult, SearchTimings } from '../types.js';
import { queryBatch } from './kit/tiling.js';
import { queryRows } from './kit/queries.js';
import { flatLists } from './kit/score.js';
import { readLists, searchInBatches, withMasks } from './kit/batches.js';

/**
 * Exact k-NN of `nq` queries (`xq`, `nq * d`) against every vector in `base` (with `masks`, one
 * per chunk: every allowed vector). Returns distances (l2: squared Euclidean, clamped at 0; ip:
 * inner product) and labels, each `nq * k`, best first, padded with -1 and +-Infinity.
 */
export function searchFlat(
  device: Device,
  base: BaseStore,
  xq: Float32Array,
  nq: number,
  k: number,
  metric: KernelMetric,
  timings?: SearchTimings,
  masks: Uint32Array[] | null = null,
): Promise<SlotResult> {
  const batch = base.ntotal > 0 ? queryBatch(device, nq, base.dpad, k) : 0;
  return withMasks(device, masks, (maskBufs) =>
    searchInBatches(device, xq, nq, base.d, base.dpad, k, batch, metric, timings, (scratch, xqBuf, rows, queries) => {
      const q = queryRows(scratch, base.format, xqBuf, queries, rows, metric);
      return readLists(device, flatLists(scratch, base, q, 0, rows, k, metric, maskBufs), rows, k, timings);
    }),
  );
}
