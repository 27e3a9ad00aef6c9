/**
 * Scoring tiles and keeping the best: the inner part of every k-NN plan, for queries already on the
 * device (see src/plans/flat-search.ts for the loop it runs):
 *
 *   for each query tile (queryTile queries), for each run of rows, for each column tile (tileCols rows):
 *     scores       -> scores[queryTile x tileCols]   (the format's kernel: gemm-, sq-, pq- or hamming-scores)
 *     mask-scores  -> (a masked search) rows not allowed scored +Infinity
 *     k <= HEAP_MAX_K:  topk, then topk-merge into the row's running list (ping-pong)
 *     k > HEAP_MAX_K:   select-radix into the row's running list (ping-pong), unsorted
 *
 * `flatLists` records it over a whole store; the flat plan, the IVF plan (coarse search and the
 * GEMM strategy), range search and the k-means step use it.
 */
import type { Device, DeviceBuffer } from '../../device.js';
import { HEAP_MAX_K, type KernelMetric } from '../../kernel-facts.js';
import type { BaseStore, RowFormat } from '../../contracts.js';
import { type RunLists, Scratch } from './scratch.js';
import { checkResultRow, scoreTiles, selectSegments } from './tiling.js';
import { type QueryRows, tableBytes, tileTables } from './queries.js';

/**
 * Rows a flat scan visits: rows [start, start + rows) of a chunk's buffers, the first with id
 * `id0`; or, with `ids` (only for k > HEAP_MAX_K: select-radix reads them), the row at position p
 * has id `ids[id0 + p - start]`.
 */
export interface RowRun {
  xb: DeviceBuffer;
  xnorm: DeviceBuffer;
  start: number;
  rows: number;
  id0: number;
  ids?: DeviceBuffer;
  /** The chunk's mask (bit p: whether buffer row p may be a result), or none: every row may. */
  mask?: DeviceBuffer;
}

/** One flat scan's score tile, selection buffers and two running lists (the ping-pong), with their sizes. */
export interface ScoreScratch {
  tileCols: number;
  queryTile: number;
  scores: DeviceBuffer;
  /**
   * The heaps' partial lists (k <= HEAP_MAX_K): nseg per query row, of segments segLen columns
   * long. Null for larger k: select-radix merges each tile row into the running list directly.
   */
  heap: { nseg: number; segLen: number; partS: DeviceBuffer; partI: DeviceBuffer } | null;
  run: [RunLists, RunLists];
  /** A query tile's product-quantiser tables (queryTile rows), or null for other formats. */
  luts: DeviceBuffer | null;
}

/**
 * Sizes and takes the buffers of a flat scan of up to `rows` queries at a time over rows stored
 * `chunkRows` to a chunk, `width` of them at most in one run; the running lists hold `runRows` rows.
 */
export function scoreScratch(scratch: Scratch, k: number, rows: number, width: number, chunkRows: number, runRows: number, format: RowFormat): ScoreScratch {
  const { device } = scratch;
  checkResultRow(device, k);
  const { tileCols, queryTile } = scoreTiles(device, rows, width, chunkRows, format);
  const perRow = tableBytes(format);
  let heap: ScoreScratch['heap'] = null;
  if (k <= HEAP_MAX_K) {
    const nseg = selectSegments(device, queryTile, tileCols, k);
    heap = {
      nseg,
      segLen: Math.ceil(tileCols / nseg),
      partS: scratch.buffer('part_s', queryTile * nseg * k * 4),
      partI: scratch.buffer('part_i', queryTile * nseg * k * 4),
    };
  }
  return {
    tileCols,
    queryTile,
    scores: scratch.buffer('scores', queryTile * tileCols * 4),
    heap,
    run: [scratch.lists(runRows * k), scratch.lists(runRows * k)],
    luts: perRow === 0 ? null : scratch.buffer('pq_luts', queryTile * perRow),
  };
}

/**
 * Records one score tile of `q` against rows `col0 ..` of a chunk stored in `format`: gemm-scores
 * for float rows, sq-scores for scalar-quantised codes (queries transformed, see RowScoring),
 * pq-scores for product codes (from the tables tileTables recorded into `luts` for these rows),
 * hamming-scores for binary codes (queries as codes).
 */
export function scoreTile(
  device: Device,
  format: RowFormat,
  q: QueryRows,
  metric: KernelMetric,
  a: { xb: DeviceBuffer; xnorm: DeviceBuffer; scores: DeviceBuffer; q0: number; rows: number; col0: number; cols: number; ldc: number },
  luts: DeviceBuffer | null = null,
): void {
  const s = format.scoring;
  if (s.kernel === 'gemm-scores') {
    device.dispatch({ kernel: 'gemm-scores', metric, xq: q.xq, dpad: format.dpad, ...a });
    return;
  }
  const { xb, xnorm, ...rest } = a;
  if (s.kernel === 'hamming-scores') {
    device.dispatch({ kernel: 'hamming-scores', xq: q.xq, codes: xb, codeWords: format.rowWords, ...rest });
    return;
  }
  if (!q.qbias) throw new Error(`${s.kernel} needs transformed queries with their biases (queryRows)`);
  if (s.kernel === 'sq-scores') {
    device.dispatch({ kernel: 'sq-scores', metric, kind: s.kind, xq: q.xq, qbias: q.qbias, codes: xb, xnorm, dpad: format.dpad, codeWords: format.rowWords, ...rest });
    return;
  }
  device.dispatch({ kernel: 'pq-scores', luts: luts!, qbias: q.qbias, codes: xb, M: s.M, nbits: s.nbits, codeWords: format.rowWords, ...rest });
}

/**
 * Records, for `rows` queries (rows q0 .. of `xq`, padded to `dpad`; at most `t.queryTile`), the
 * scan of `runs` in column tiles: gemm-scores, then topk and topk-merge (k <= HEAP_MAX_K) or
 * select-radix (larger k, lists unsorted) into running-list rows [row0, row0 + rows). Returns the
 * number of tiles: the final lists are in `t.run[tiles % 2]`.
 */
export function scoreRuns(
  device: Device,
  t: ScoreScratch,
  q: QueryRows,
  q0: number,
  rows: number,
  row0: number,
  runs: readonly RowRun[],
  k: number,
  format: RowFormat,
  metric: KernelMetric,
): number {
  const { tileCols, scores, heap, run } = t;
  tileTables(device, format, q, metric, q0, rows, t.luts);
  let tiles = 0;
  for (const r of runs) {
    if (heap && r.ids) throw new Error(`a run with ids needs select-radix (k > ${HEAP_MAX_K}); got k = ${k}`);
    for (let c0 = 0; c0 < r.rows; c0 += tileCols) {
      const cols = Math.min(tileCols, r.rows - c0);
      const [src, dst] = tiles % 2 === 0 ? [run[0], run[1]] : [run[1], run[0]];
      const first = tiles === 0;
      scoreTile(device, format, q, metric, { xb: r.xb, xnorm: r.xnorm, scores, q0, rows, col0: r.start + c0, cols, ldc: tileCols }, t.luts);
      if (r.mask) device.dispatch({ kernel: 'mask-scores', scores, mask: r.mask, rows, cols, ldc: tileCols, bit0: r.start + c0 });
      if (heap) {
        const { nseg, segLen, partS, partI } = heap;
        device.dispatch({
          kernel: 'topk', scores, outS: partS, outI: partI, rows, cols, ldc: tileCols, k, nseg, segLen, id0: r.id0 + c0,
          bound: first ? null : { s: src.s, i: src.i, row0 },
        });
        device.dispatch({
          kernel: 'topk-merge', partS, partI, runInS: src.s, runInI: src.i, runOutS: dst.s, runOutI: dst.i, rows, k, nseg, first, row0,
        });
      } else {
        device.dispatch({
          kernel: 'select-radix', scores, ids: r.ids ?? null, runInS: src.s, runInI: src.i, runOutS: dst.s, runOutI: dst.i,
          rows, cols, ldc: tileCols, k, id0: r.id0 + c0, first, row0,
        });
      }
      tiles++;
    }
  }
  return tiles;
}

/**
 * Records a flat search of `nq` queries (rows of `xq` from `q0`, padded to base.dpad) against
 * `base` and returns the lists holding each query's k best (score, id), `nq * k`: best first, or
 * for k > HEAP_MAX_K unsorted and then padding (readLists sorts them).
 * `nq * k` results must fit one binding (queryBatch sizes batches so). `masks`: one per chunk
 * (see uploadMasks), or null. `n`: only the first n rows of `base` are scored (default all).
 */
export function flatLists(
  scratch: Scratch,
  base: BaseStore,
  q: QueryRows,
  q0: number,
  nq: number,
  k: number,
  metric: KernelMetric,
  masks: DeviceBuffer[] | null = null,
  n = base.ntotal,
): RunLists {
  const t = scoreScratch(scratch, k, nq, n, base.chunkRows, nq, base.format);
  const starts = base.chunkStarts();
  const runs = base.chunks
    .map((c, i) => ({ xb: c.xb, xnorm: c.xnorm, start: 0, rows: Math.min(c.rows, n - starts[i]), id0: starts[i], mask: masks?.[i] }))
    .filter((r) => r.rows > 0);
  let tiles = 0;
  for (let r0 = 0; r0 < nq; r0 += t.queryTile) {
    tiles = scoreRuns(scratch.device, t, q, q0 + r0, Math.min(t.queryTile, nq - r0), r0, runs, k, base.format, metric);
  }
  return t.run[tiles % 2];
}
