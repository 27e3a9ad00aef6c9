/**
 * Range search's candidates, written once for every device: for each query, every stored row whose
 * float32 minimised score (l2: squared distance; ip: -dot) is at most `limit` plus the margin
 * `rel * (||q||^2 + ||x||^2)` (see shaders/pairs-threshold.wgsl): a superset of the exact results,
 * which rangeRescore (src/indexes/range.ts) then re-scores and cuts exactly. Masked rows (a bitmap over
 * storage positions, see MaskScoresArgs) are never candidates.
 *
 * flat (rangeFlat):
 *   for each batch of queries (the batch's queries fit one binding): upload, norms
 *     for each row tile of queries (src/plans/kit/pair-tiles.ts: re-run when its pairs overflow):
 *       for each chunk, each column tile:
 *         gemm-scores      -> scores[rows x tileCols]
 *         mask-scores      -> masked columns become +Infinity (with a mask)
 *         pairs-threshold  -> append every (query, position) that passes (all pairs)
 *   on the host: each batch's pairs sorted by (query, id) into the CSR (for a code store id = position)
 *
 * IVF (rangeIvf), as the IVF search's GEMM strategy (src/plans/ivf-search.ts):
 *   for each batch of queries (each query's nprobe copies fit one binding):
 *     coarse: flatLists against the centroids, k = nprobe; the probes read back
 *     on the host the (query, probe) pairs grouped by list (groupProbes), one row per pair, uploaded; norms
 *     for each row tile of pair rows (spanning lists; re-run when its pairs overflow):
 *       for each list in the tile, each run of its rows in a chunk, each column tile:
 *         gemm-scores, mask-scores, pairs-threshold  -> (pair row, position)
 *   on the host: (pair row, position) -> (its query, lists.idAt(position)), sorted by (query, id) into the CSR
 *
 * A query probes distinct lists and a row lies in one list, so no candidate comes twice.
 */
import type { Device, DeviceBuffer } from '../device.js';
import { padRows } from '../device.js';
import type { KernelMetric } from '../kernel-facts.js';
import { DEFAULT_MAX_CANDIDATES, sortTilePairs } from '../common/pairs.js';
import type { BaseStore, ListStore, RowFormat } from '../contracts.js';

import { PairTiles } from './kit/pair-tiles.js';
import { Scratch } from './kit/scratch.js';
import { groupedBatch, queryBatch, scoreTiles } from './kit/tiling.js';
import { type QueryRows, floatQueries, queryRows, tableBytes, tileTables, uploadQueries } from './kit/queries.js';
import { flatLists, scoreTile } from './kit/score.js';
import { withMasks } from './kit/batches.js';
import { groupProbes } from './kit/probes.js';
import { InvalidArgumentError } from '../errors.js';

/** Each query's candidates: query q's are `ids[lims[q] .. lims[q + 1])`, ascending, no duplicates. */
export interface RangeCandidates {
  /** nq + 1 offsets into `ids`. */
  lims: Float64Array;
  /** Internal ids: positions for a code store, the ids stored with the rows for inverted lists. */
  ids: Uint32Array;
}

/**
 * Candidates of `nq` queries (`xq`, `nq * d`, normalised by the caller for cosine) against every
 * row of `base` allowed by `masks` (one per chunk, bit r: the chunk's row r; see src/indexes/ids.ts
 * allowedRows; null: every row):
 * each row whose minimised score passes `limit` with the margin `rel` (see the file comment). More
 * than `maxCandidates` candidates in all (default DEFAULT_MAX_CANDIDATES, as the self-join) fail
 * with an InvalidArgumentError before more are held.
 */
export async function rangeFlat(
  device: Device,
  base: BaseStore,
  xq: Float32Array,
  nq: number,
  metric: KernelMetric,
  limit: number,
  rel: number,
  masks: Uint32Array[] | null,
  maxCandidates = DEFAULT_MAX_CANDIDATES,
): Promise<RangeCandidates> {
  checkRange(limit, rel);
  checkMasks(masks, base.chunks.length);
  const csr = new CandidateCsr(nq, maxCandidates);
  if (nq === 0 || base.ntotal === 0) return csr.finish();
  return withMasks(device, masks, (maskBufs) => flatCandidates(device, base, xq, nq, metric, limit, rel, maskBufs, csr));
}

async function flatCandidates(
  device: Device,
  base: BaseStore,
  xq: Float32Array,
  nq: number,
  metric: KernelMetric,
  limit: number,
  rel: number,
  masks: DeviceBuffer[] | null,
  csr: CandidateCsr,
): Promise<RangeCandidates> {
  const { d, dpad } = base;
  const batch = queryBatch(device, nq, dpad, 1);
  const { tileCols, queryTile } = scoreTiles(device, batch, base.ntotal, base.chunkRows, base.format);
  const starts = base.chunkStarts();
  const scratch = new Scratch(device);
  const tiles = new PairTiles(device);
  try {
    const xqBuf = scratch.buffer('xq', batch * dpad * 4);
    const xqNorm = scratch.buffer('xq_norm', batch * 4);
    const scores = scratch.buffer('scores', queryTile * tileCols * 4);
    for (let b0 = 0; b0 < nq; b0 += batch) {
      const rows = Math.min(batch, nq - b0);
      const queries = xq.subarray(b0 * d, (b0 + rows) * d);
      device.upload(xqBuf, 0, padRows(queries, rows, d, dpad));
      device.dispatch({ kernel: 'norms', x: xqBuf, out: xqNorm, n: rows, dpad, row0: 0, out0: 0 });
      // Codes score transformed queries (queryRows); the margin still takes the queries' own norms.
      const batchScratch = new Scratch(device);
      const q = queryRows(batchScratch, base.format, xqBuf, queries, rows, metric);
      const luts = tableBytes(base.format) === 0 ? null : batchScratch.buffer('pq_luts', queryTile * tableBytes(base.format));
      const s: TileScoring = { metric, limit, rel, format: base.format, tileCols, q, xqNorm, scores, masks, luts };
      const blocks: Uint32Array[] = [];
      await tiles.run(rows, queryTile, {
        record: (r0, n, count, pairs, capacity) => {
          // For a code store the position of a chunk's first row is its first id.
          base.chunks.forEach((c, b) => scoreRun(device, s, r0, n, c, b, 0, c.rows, starts[b], count, pairs, capacity));
        },
        onPairs: (block) => blocks.push(block),
        rowName: (r) => `query ${b0 + r}`,
      });
      batchScratch.release();
      csr.add(blocks, b0, rows);
    }
  } catch (err) {
    device.discard();
    throw err;
  } finally {
    tiles.release();
    scratch.release();
  }
  return csr.finish();
}

/**
 * Candidates of `nq` queries (`xq`, `nq * d`, normalised by the caller for cosine) in the `nprobe`
 * lists nearest each (a flat search of `coarse`, the centroids, with the same metric), among the
 * rows `masks` allow (one per chunk of `lists`, as for rangeFlat; null: every row); ids are those
 * stored with the rows. See rangeFlat and the file comment.
 */
export async function rangeIvf(
  device: Device,
  coarse: BaseStore,
  lists: ListStore,
  xq: Float32Array,
  nq: number,
  nprobe: number,
  metric: KernelMetric,
  limit: number,
  rel: number,
  masks: Uint32Array[] | null,
  maxCandidates = DEFAULT_MAX_CANDIDATES,
): Promise<RangeCandidates> {
  checkRange(limit, rel);
  checkMasks(masks, lists.chunks.length);
  if (!(Number.isInteger(nprobe) && nprobe >= 1)) throw new InvalidArgumentError(`nprobe must be an integer >= 1; got ${nprobe}`);
  const csr = new CandidateCsr(nq, maxCandidates);
  if (nq === 0 || lists.ntotal === 0) return csr.finish();
  const { d, dpad } = coarse;
  // The batch's queries, probes and pair rows (nprobe copies of each query) each fit one binding.
  const batch = groupedBatch(device, queryBatch(device, nq, dpad, nprobe, nprobe), dpad, 1, nprobe);
  if (batch < 1) {
    throw new InvalidArgumentError(
      `IVF range search scores one copy of each query per probed list: nprobe = ${nprobe} copies of ${dpad * 4} bytes ` +
        `exceed one binding (${device.limits.maxBindingBytes} bytes, maxBindingBytes); use a smaller nprobe`,
    );
  }
  // The longest run of a list's rows in one chunk.
  let longest = 1;
  for (let l = 0; l < lists.nlist; l++) for (const e of lists.extentsOf(l)) longest = Math.max(longest, e.size);
  return withMasks(device, masks, async (maskBufs) => {
  const tiles = new PairTiles(device);
  try {
    for (let b0 = 0; b0 < nq; b0 += batch) {
      const rows = Math.min(batch, nq - b0);
      const scratch = new Scratch(device);
      try {
        const queries = xq.subarray(b0 * d, (b0 + rows) * d);
        const probes = flatLists(scratch, coarse, floatQueries(uploadQueries(scratch, queries, rows, d, dpad)), 0, rows, nprobe, metric).i;
        const [hostProbes] = await device.read([{ buffer: probes, offset: 0, bytes: rows * nprobe * 4 }]);
        const g = groupProbes(new Uint32Array(hostProbes), rows, nprobe, queries, d);
        const blocks: Uint32Array[] = [];
        if (g.npairs > 0) {
          const xg = uploadQueries(scratch, g.grouped, g.npairs, d, dpad);
          const xgNorm = scratch.buffer('xq_norm', g.npairs * 4);
          device.dispatch({ kernel: 'norms', x: xg, out: xgNorm, n: g.npairs, dpad, row0: 0, out0: 0 });
          const { tileCols, queryTile } = scoreTiles(device, g.npairs, longest, lists.chunkRows, lists.format);
          const perRow = tableBytes(lists.format);
          const s: TileScoring = {
            metric, limit, rel, format: lists.format, tileCols, q: queryRows(scratch, lists.format, xg, g.grouped, g.npairs, metric, g.listOf),
            xqNorm: xgNorm, masks: maskBufs, scores: scratch.buffer('scores', queryTile * tileCols * 4),
            luts: perRow === 0 ? null : scratch.buffer('pq_luts', queryTile * perRow),
          };
          await tiles.run(g.npairs, queryTile, {
            // A tile of pair rows spans lists: each list's part of it against that list's runs.
            record: (r0, n, count, pairs, capacity) => {
              for (const l of g.order) {
                const lo = Math.max(r0, g.first.get(l)!);
                const hi = Math.min(r0 + n, g.first.get(l)! + g.count.get(l)!);
                if (lo >= hi) continue;
                for (const e of lists.extentsOf(l)) {
                  scoreRun(device, s, lo, hi - lo, lists.chunks[e.chunk], e.chunk, e.start, e.size, lists.position(e.chunk, e.start), count, pairs, capacity);
                }
              }
            },
            onPairs: (block) => {
              for (let p = 0; p < block.length; p += 2) {
                block[p] = g.queryOf[block[p]];
                block[p + 1] = lists.idAt(block[p + 1]);
              }
              blocks.push(block);
            },
            rowName: (t) => `query ${b0 + g.queryOf[t]}`,
          });
        }
        csr.add(blocks, b0, rows);
      } catch (err) {
        device.discard();
        throw err;
      } finally {
        scratch.release();
      }
    }
  } finally {
    tiles.release();
  }
  return csr.finish();
  });
}

/** What every score tile of one range search shares. */
interface TileScoring {
  metric: KernelMetric;
  limit: number;
  rel: number;
  /** How the base rows are stored (and so scored). */
  format: RowFormat;
  /** The queries as the format scores them, and their squared norms (for the margin). */
  q: QueryRows;
  xqNorm: DeviceBuffer;
  /** The score tile, `tileCols` wide. */
  scores: DeviceBuffer;
  tileCols: number;
  /** One mask per chunk, or null. */
  masks: DeviceBuffer[] | null;
  /** A query tile's product-quantiser tables, or null for other formats. */
  luts: DeviceBuffer | null;
}

/**
 * Records query rows q0 .. q0 + rows - 1 against `size` rows of chunk number `c` from row `start`,
 * whose storage positions start at `pos0`, in column tiles: each pair that passes is appended as
 * (query row, position).
 */
function scoreRun(
  device: Device,
  s: TileScoring,
  q0: number,
  rows: number,
  chunk: { xb: DeviceBuffer; xnorm: DeviceBuffer },
  c: number,
  start: number,
  size: number,
  pos0: number,
  count: DeviceBuffer,
  pairs: DeviceBuffer,
  capacity: number,
): void {
  const { metric, scores, tileCols: ldc } = s;
  tileTables(device, s.format, s.q, metric, q0, rows, s.luts);
  for (let c0 = 0; c0 < size; c0 += ldc) {
    const cols = Math.min(ldc, size - c0);
    const col0 = start + c0;
    scoreTile(device, s.format, s.q, metric, { xb: chunk.xb, xnorm: chunk.xnorm, scores, q0, rows, col0, cols, ldc }, s.luts);
    const mask = s.masks?.[c];
    if (mask) device.dispatch({ kernel: 'mask-scores', scores, mask, rows, cols, ldc, bit0: col0 });
    device.dispatch({
      kernel: 'pairs-threshold', metric, allPairs: true, scores, xnormQ: s.xqNorm, xnormB: chunk.xnorm, count, pairs, rows, cols, ldc,
      q0, id0: pos0 + c0, limit: s.limit, rel: s.rel, capacity, qn0: q0, cn0: col0,
    });
  }
}

/** Masks, where given, are one per chunk of the store. */
function checkMasks(masks: Uint32Array[] | null, chunks: number): void {
  if (masks && masks.length !== chunks) throw new InvalidArgumentError(`masks: one per chunk of the store (${chunks}); got ${masks.length}`);
}

/**
 * The limit travels to the kernel as a float32: it must be finite there, or a masked score
 * (+Infinity) would pass it.
 */
function checkRange(limit: number, rel: number): void {
  if (!Number.isFinite(Math.fround(limit))) throw new InvalidArgumentError(`limit must be a finite float32; got ${limit}`);
  if (!(Number.isFinite(rel) && rel >= 0)) throw new InvalidArgumentError(`rel must be a finite number >= 0; got ${rel}`);
}

/** Gathers each batch's (query, id) pairs into one CSR, batch after batch. */
class CandidateCsr {
  private readonly lims: Float64Array;
  private readonly ids: Uint32Array[] = [];
  private total = 0;

  /** At most `maxCandidates` in all (see rangeFlat), else the range search fails before holding more. */
  constructor(
    nq: number,
    private readonly maxCandidates: number,
  ) {
    if (!(maxCandidates >= 0)) throw new InvalidArgumentError(`maxCandidates must be a number >= 0; got ${maxCandidates}`);
    this.lims = new Float64Array(nq + 1);
  }

  /** The pairs [q, id, ...] of queries b0 + q, q < rows, in blocks, in any order. */
  add(blocks: Uint32Array[], b0: number, rows: number): void {
    const pairs = blocks.reduce((a, b) => a + b.length / 2, 0);
    if (this.total + pairs > this.maxCandidates) {
      throw new InvalidArgumentError(
        `the radius lets through more than ${this.maxCandidates} candidates (by query ${b0 + rows - 1} of ${this.lims.length - 1}); ` +
          'use a smaller radius or fewer queries per call, or raise maxCandidates',
      );
    }
    this.total += pairs;
    const sorted = sortTilePairs(concat(blocks), 0, rows, false);
    const ids = new Uint32Array(sorted.length / 2);
    for (let p = 0; p < ids.length; p++) {
      this.lims[b0 + sorted[2 * p] + 1]++;
      ids[p] = sorted[2 * p + 1];
    }
    this.ids.push(ids);
  }

  finish(): RangeCandidates {
    for (let q = 1; q < this.lims.length; q++) this.lims[q] += this.lims[q - 1];
    return { lims: this.lims, ids: concat(this.ids) };
  }
}

function concat(blocks: Uint32Array[]): Uint32Array {
  if (blocks.length === 1) return blocks[0];
  const out = new Uint32Array(blocks.reduce((a, b) => a + b.length, 0));
  let o = 0;
  for (const b of blocks) {
    out.set(b, o);
    o += b.length;
  }
  return out;
}
