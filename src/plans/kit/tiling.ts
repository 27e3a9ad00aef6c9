/**
 * One place that sizes every buffer a plan makes against the device's limits and tuning. Each
 * function returns sizes whose buffers fit `limits.maxBindingBytes`, or throws an
 * InvalidArgumentError saying which single item cannot fit (one row, one list of k results), so a
 * lowered limit in a test drives exactly the splits that large data needs on a real device.
 */
import type { Device } from '../../device.js';
import { HEAP_MAX_K, MERGE_ROUND } from '../../kernel-facts.js';

import type { RowFormat } from '../../contracts.js';
import { rowsPerBinding } from '../../stores/chunking.js';
import { InvalidArgumentError } from '../../errors.js';

/**
 * Queries per batch of a search: the batch's queries (rows of dpad floats), its running lists (k
 * per query) and its probe lists (nprobe per query, IVF) each fit one binding.
 */
export function queryBatch(device: Device, nq: number, dpad: number, k: number, nprobe = 0): number {
  const perRow = Math.max(dpad, k, nprobe) * 4;
  return Math.min(Math.max(1, nq), rowsPerBinding(device, perRow, 'query with its k results', device.tuning.queryBatch));
}

/**
 * Queries per batch of the IVF scan strategy (at most `batch`): ivf-scan reads the lists' ranges
 * (2 words a list) and the batch's probes (nprobe a query) from one binding (so that it binds 8
 * storage buffers); throws where not even one query's probes fit beside the ranges.
 */
export function scanBatch(device: Device, batch: number, nlist: number, nprobe: number): number {
  const max = device.limits.maxBindingBytes;
  const fit = Math.floor((max - 8 * nlist) / (4 * nprobe));
  if (fit < 1) {
    throw new InvalidArgumentError(
      `IVF scan: the ranges of ${nlist} lists and one query's ${nprobe} probes take ${8 * nlist + 4 * nprobe} bytes in one binding; ` +
        `this device binds at most ${max} bytes at once (maxBindingBytes)`,
    );
  }
  return Math.min(batch, fit);
}

/**
 * Queries per batch of the IVF GEMM strategy (at most `batch`), which holds one copy of each query
 * per probe and k results per copy; 0 where even one query's copies exceed a binding.
 */
export function groupedBatch(device: Device, batch: number, dpad: number, k: number, nprobe: number): number {
  return Math.min(batch, Math.floor(device.limits.maxBindingBytes / (nprobe * Math.max(dpad, k) * 4)));
}

export interface ScoreTiles {
  /** Base vectors per score tile. */
  tileCols: number;
  /** Query rows per score tile. */
  queryTile: number;
}

/**
 * Score tiles against a base of `ntotal` rows stored `chunkRows` per chunk: `tileCols` columns by
 * `queryTile` rows within the score budget and one binding; no wider than the data, so a small base
 * (centroids) leaves room for more rows, and no wider than one gemm-scores call may score
 * (`limits.maxTileCols`: its dispatch's workgroup limit). At most 65535 rows: the pairs-threshold
 * dispatch has one workgroup row per query row. For product codes (`format`), a query tile's
 * lookup tables fit the budget as well.
 */
export function scoreTiles(device: Device, nq: number, ntotal: number, chunkRowsOfBase: number, format?: RowFormat): ScoreTiles {
  const { tuning, limits } = device;
  const budget = Math.min(limits.maxBindingBytes, tuning.scoreTileBytes);
  // Product codes: a query tile's tables (one row each) fit the budget too.
  const s = format?.scoring;
  const tableRows = s?.kernel === 'pq-scores' ? Math.max(1, Math.floor(budget / (s.M * s.ksub * 4))) : Infinity;
  const tileCols = Math.max(
    1,
    Math.min(tuning.tileCols, chunkRowsOfBase, Math.ceil(Math.max(1, ntotal) / 4) * 4, Math.floor(budget / 4), limits.maxTileCols),
  );
  return { tileCols, queryTile: Math.max(1, Math.min(nq, 65535, tableRows, Math.floor(budget / (tileCols * 4)))) };
}

/**
 * The kNN self-join's tile (src/plans/self-knn.ts): T rows against T rows, the largest square
 * score tile within the score budget (at most tileCols and a chunk wide); null where its running
 * lists (n rows of k (score, id)) exceed one binding or k exceeds the heaps' HEAP_MAX_K.
 */
export function selfKnnTile(device: Device, n: number, chunkRows: number, k: number): number | null {
  const { tuning, limits } = device;
  if (n * k * 4 > limits.maxBindingBytes || k > HEAP_MAX_K) return null;
  const budget = Math.min(limits.maxBindingBytes, tuning.scoreTileBytes);
  return Math.max(1, Math.min(Math.floor(Math.sqrt(budget / 4)), tuning.tileCols, limits.maxTileCols, 65535, chunkRows, Math.max(1, n)));
}

/**
 * Segments per query row of a score tile for the selection: enough parallel work in total
 * (`tuning.selectInvocations`), but each segment costs a heap of k, so no more than needed; few
 * enough for large k; and the partial lists (rows x nseg x k) within one binding.
 */
export function selectSegments(device: Device, queryTile: number, tileCols: number, k: number): number {
  const bySelect = Math.ceil(device.tuning.selectInvocations / queryTile);
  const byWidth = Math.floor(tileCols / Math.max(256, 4 * k));
  const byBinding = Math.floor(device.limits.maxBindingBytes / (queryTile * k * 4));
  return Math.max(1, Math.min(MERGE_ROUND, bySelect, byWidth, byBinding));
}

/** Bytes one query row's k results take; throws when even one row's list does not fit a binding. */
export function checkResultRow(device: Device, k: number): void {
  rowsPerBinding(device, k * 4, `list of k = ${k} results`);
}

/**
 * Query tiles of an IVF list scan: each tile's partial lists (rows x nprobe x nseg x k) within the
 * score budget and one binding. nseg segments per (query, probe): enough parallel work in total
 * (`tuning.selectInvocations`), and for lists of `meanList` rows up to `tuning.scanSegments`
 * segments of 8 rows or more anyway: adjacent invocations then scan one list against one query,
 * which SIMD lanes load together (on lavapipe 1.3 - 1.4x over one segment per list, on Fashion-MNIST
 * 20,000 x 784, IVF128, nprobe 4, batches of 100; at most 8 segments: the merge takes 32 lists a round).
 */
export function scanTiles(device: Device, nq: number, nprobe: number, k: number, meanList = 0): { rowsPerTile: number; nseg: number } {
  const budget = Math.min(device.limits.maxBindingBytes, device.tuning.scoreTileBytes);
  const perRow = nprobe * k * 4;
  rowsPerBinding(device, perRow, `query's ${nprobe} probed lists of k = ${k}`);
  const rowsPerTile = Math.max(1, Math.min(nq, Math.floor(budget / perRow)));
  const bySelect = Math.ceil(device.tuning.selectInvocations / (rowsPerTile * nprobe));
  const byLength = Math.min(device.tuning.scanSegments, Math.floor(meanList / 8));
  const nseg = Math.max(1, Math.min(8, Math.max(bySelect, byLength), Math.floor(budget / (rowsPerTile * perRow))));
  return { rowsPerTile, nseg };
}
