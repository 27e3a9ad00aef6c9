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
 * The choice by k is the same on every device, so the CPU runs the plan the GPU runs.
 * `flatLists` records the inner part for queries already on the device; the IVF plan (coarse
 * search) and the k-means step (assignment) use it too.
 */
import type { Device, DeviceBuffer } from '../device.js';
import { padRows } from '../device.js';
import { HEAP_MAX_K, type KernelMetric, PAD_ID } from '../kernel-facts.js';
import { finalizeResults, sortLists } from '../common/results.js';
import type { BaseStore } from '../contracts.js';

import type { SlotResult, SearchTimings } from '../types.js';
import { norms as hostNorms } from '../cpu/norms.js';
import { type RunLists, Scratch } from './kit/scratch.js';
import { checkResultRow, queryBatch, scoreTiles, selectSegments } from './kit/tiling.js';
import type { RowFormat } from '../contracts.js';

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
 * Queries on the device as a store's scoring reads them: rows of `dpad` floats (for codes,
 * transformed by the format), for sq-scores and pq-scores one bias per row, and for pq-scores the
 * codebook the tables are made from.
 */
export interface QueryRows {
  xq: DeviceBuffer;
  qbias: DeviceBuffer | null;
  codebook: DeviceBuffer | null;
}

/** Queries already on the device as float rows (for stores of float rows). */
export function floatQueries(xq: DeviceBuffer): QueryRows {
  return { xq, qbias: null, codebook: null };
}

/** Bytes of one query row's product-quantiser tables (0 for other formats). */
export function tableBytes(format: RowFormat): number {
  const s = format.scoring;
  return s.kernel === 'pq-scores' ? s.M * s.ksub * 4 : 0;
}

/**
 * Records what a tile of `rows` queries (rows q0 .. of `q`) needs before its rows are scored: for
 * product codes, their tables into `luts` (row r of the tile at row r); nothing for other formats.
 */
export function tileTables(device: Device, format: RowFormat, q: QueryRows, metric: KernelMetric, q0: number, rows: number, luts: DeviceBuffer | null): void {
  const s = format.scoring;
  if (s.kernel !== 'pq-scores') return;
  if (!q.codebook || !luts) throw new Error('pq-scores needs the codebook (queryRows) and a table buffer');
  device.dispatch({ kernel: 'pq-tables', metric, xq: q.xq, codebook: q.codebook, luts, q0, rows, M: s.M, ksub: s.ksub, dsub: s.dsub, dpad: format.dpad });
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
 * (see uploadMasks), or null.
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
): RunLists {
  const t = scoreScratch(scratch, k, nq, base.ntotal, base.chunkRows, nq, base.format);
  const starts = base.chunkStarts();
  const runs = base.chunks.map((c, i) => ({ xb: c.xb, xnorm: c.xnorm, start: 0, rows: c.rows, id0: starts[i], mask: masks?.[i] }));
  let tiles = 0;
  for (let r0 = 0; r0 < nq; r0 += t.queryTile) {
    tiles = scoreRuns(scratch.device, t, q, q0 + r0, Math.min(t.queryTile, nq - r0), r0, runs, k, base.format, metric);
  }
  return t.run[tiles % 2];
}

/**
 * Uploads per-chunk row masks (bit r of word r >> 5: whether the chunk's row r may be a result;
 * see src/indexes/ids.ts allowedRows) and runs `fn` with them (null without masks), then frees them.
 */
export async function withMasks<T>(device: Device, masks: Uint32Array[] | null, fn: (buffers: DeviceBuffer[] | null) => Promise<T>): Promise<T> {
  if (!masks) return fn(null);
  const buffers: DeviceBuffer[] = [];
  try {
    for (const m of masks) {
      const b = device.buffer('mask', m.byteLength);
      buffers.push(b);
      device.upload(b, 0, m);
    }
    return await fn(buffers);
  } finally {
    for (const b of buffers) device.release(b);
  }
}

/**
 * The queries as `format` scores them: for float rows `xqBuf`, the `nq` queries already uploaded
 * padded to `dpad`; for codes, `xq` (`nq * d`, as the index holds them) transformed (for residual
 * codes against `lists[i]`, row i's list) and uploaded with their biases, and for product codes
 * the codebook.
 */
export function queryRows(scratch: Scratch, format: RowFormat, xqBuf: DeviceBuffer, xq: Float32Array, nq: number, metric: KernelMetric, lists?: Uint32Array): QueryRows {
  const s = format.scoring;
  if (s.kernel === 'gemm-scores') return floatQueries(xqBuf);
  if (s.kernel === 'hamming-scores') {
    const codes = s.encode(xq, nq);
    const buf = scratch.buffer('xq_codes', codes.byteLength);
    scratch.device.upload(buf, 0, codes);
    return { xq: buf, qbias: null, codebook: null };
  }
  const t = s.transform(xq, nq, metric, lists);
  const qbias = scratch.buffer('qbias', nq * 4);
  scratch.device.upload(qbias, 0, t.qbias);
  let codebook: DeviceBuffer | null = null;
  if (s.kernel === 'pq-scores') {
    codebook = scratch.buffer('pq_codebook', s.codebook.byteLength);
    scratch.device.upload(codebook, 0, s.codebook);
  }
  return { xq: uploadQueries(scratch, t.xq, nq, format.d, format.dpad), qbias, codebook };
}

/** Uploads `nq` queries (`nq * d`) padded to `dpad` into a scratch buffer. */
export function uploadQueries(scratch: Scratch, xq: Float32Array, nq: number, d: number, dpad: number): DeviceBuffer {
  const buf = scratch.buffer('xq', nq * dpad * 4);
  scratch.device.upload(buf, 0, padRows(xq, nq, d, dpad));
  return buf;
}

/**
 * Reads the first `rows` lists of k entries back (one submit, one readback), best first: above
 * HEAP_MAX_K select-radix leaves them unsorted, and they are sorted here.
 */
export async function readLists(device: Device, lists: RunLists, rows: number, k: number, timings?: SearchTimings): Promise<HostLists> {
  const bytes = rows * k * 4;
  const [s, i] = await device.read([{ buffer: lists.s, offset: 0, bytes }, { buffer: lists.i, offset: 0, bytes }], timings);
  const out = { s: new Float32Array(s), i: new Uint32Array(i) };
  if (k > HEAP_MAX_K) sortLists(out.s, out.i, rows, k);
  return out;
}

/** Each query's k best (score, id), best first, on the host: row r at `r * k`. */
export interface HostLists {
  s: Float32Array;
  i: Uint32Array;
}

/**
 * Runs a search in batches of at most `batch` queries: for each, uploads its queries (padded to
 * `dpad`) into scratch memory and lets `run` produce the batch's lists (`rows * k`; it also gets the
 * batch's queries on the host); finally turns
 * the (score, id) lists into distances and labels. `batch` 0 means there is nothing to search (an
 * empty index): every row is padding.
 */
export async function searchInBatches(
  device: Device,
  xq: Float32Array,
  nq: number,
  d: number,
  dpad: number,
  k: number,
  batch: number,
  metric: KernelMetric,
  timings: SearchTimings | undefined,
  run: (scratch: Scratch, xq: DeviceBuffer, rows: number, hostQueries: Float32Array) => Promise<HostLists>,
): Promise<SlotResult> {
  const runS = new Float32Array(nq * k).fill(Infinity);
  const runI = new Uint32Array(nq * k).fill(PAD_ID);
  for (let b0 = 0; batch > 0 && b0 < nq; b0 += batch) {
    const rows = Math.min(batch, nq - b0);
    const scratch = new Scratch(device);
    try {
      const queries = xq.subarray(b0 * d, (b0 + rows) * d);
      const t0 = performance.now();
      const xqBuf = uploadQueries(scratch, queries, rows, d, dpad);
      if (timings) {
        // Timed on its own only when asked: waiting for the upload costs a round trip.
        await device.flush();
        timings.uploadMs += performance.now() - t0;
      }
      const out = await run(scratch, xqBuf, rows, queries);
      runS.set(out.s.subarray(0, rows * k), b0 * k);
      runI.set(out.i.subarray(0, rows * k), b0 * k);
    } catch (err) {
      device.discard();
      throw err;
    } finally {
      scratch.release();
    }
  }
  return finalizeResults(metric, runS, runI, nq, k, metric === 'l2' ? hostNorms(xq, nq, d) : null);
}

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
