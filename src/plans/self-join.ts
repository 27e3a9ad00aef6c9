/**
 * The self-join's candidate pairs (see Backend.selfJoinCandidates), written once for every device:
 *
 *   for each chunk A, for each row tile of A (in row order; with a split, rows below it only):
 *     for each chunk B >= A, column tiles from the tile's first row on (and from the split):
 *       gemm-scores      -> scores[rows x tileCols]
 *       pairs-threshold  -> append (i, j) with i < j whose score passes, counted atomically
 *     read the count; if the pairs did not fit, re-run the tile with room for all of them (or, past
 *     one binding, with half the rows); else read the pairs, sort them, hand them on
 * (the tiles' re-runs: src/plans/kit/pair-tiles.ts, shared with range search).
 */
import { DEFAULT_MAX_CANDIDATES, sortTilePairs, tooManyCandidates } from '../common/pairs.js';

import type { Device } from '../device.js';
import type { KernelMetric } from '../kernel-facts.js';
import type { BaseStore } from '../contracts.js';

import { PairTiles } from './kit/pair-tiles.js';
import { scoreTiles } from './kit/tiling.js';
import type { SelfJoinOptions } from '../contracts.js';
import { InvalidArgumentError } from '../errors.js';

export async function selfJoinCandidates(
  device: Device,
  base: BaseStore,
  metric: KernelMetric,
  limit: number,
  rel: number,
  options: SelfJoinOptions,
): Promise<number> {
  const ntotal = base.ntotal;
  const split = options.split ?? 0;
  if (!Number.isInteger(split) || split < 0 || split > ntotal) throw new InvalidArgumentError(`split must be an integer in [0, ${ntotal}]; got ${split}`);
  const maxCandidates = options.maxCandidates ?? DEFAULT_MAX_CANDIDATES;
  const { tileCols, queryTile } = scoreTiles(device, ntotal, ntotal, base.chunkRows);
  const scores = device.buffer('scores', queryTile * tileCols * 4);
  const tiles = new PairTiles(device);
  let total = 0;
  let rowsDone = 0;
  try {
    const starts = base.chunkStarts();
    for (let a = 0; a < base.chunks.length; a++) {
      const A = base.chunks[a];
      // With a split, only the rows below it are joined (with the columns from it on).
      const rowsA = split > 0 ? Math.min(A.rows, split - starts[a]) : A.rows;
      if (rowsA <= 0) break;
      await tiles.run(rowsA, queryTile, {
        record: (r0, rows, count, pairs, capacity) => {
          const q0 = starts[a] + r0;
          for (let b = a; b < base.chunks.length; b++) {
            const B = base.chunks[b];
            // Columns from the first one right of this row tile's first row (and from the split):
            // column tiles start there, not at multiples of tileCols, so a row tile scores its
            // part of the triangle plus at most rows^2 / 2 below the diagonal, not up to rows x tileCols.
            for (let col0 = Math.max(0, split - starts[b], q0 + 1 - starts[b]); col0 < B.rows; col0 += tileCols) {
              const cols = Math.min(tileCols, B.rows - col0);
              device.dispatch({ kernel: 'gemm-scores', metric, xq: A.xb, xb: B.xb, xnorm: B.xnorm, scores, q0: r0, rows, col0, cols, dpad: base.dpad, ldc: tileCols });
              device.dispatch({
                kernel: 'pairs-threshold', metric, allPairs: false, scores, xnormQ: A.xnorm, xnormB: B.xnorm, count, pairs, rows, cols, ldc: tileCols,
                q0, id0: starts[b] + col0, limit, rel, capacity, qn0: r0, cn0: col0,
              });
            }
          }
        },
        // An explosion is reported before any buffer grows.
        check: (n, r0) => {
          if (total + n > maxCandidates) throw tooManyCandidates(maxCandidates, starts[a] + r0, ntotal);
        },
        onPairs: (block, r0, rows) => {
          total += block.length / 2;
          rowsDone += rows;
          // Appended in whatever order the invocations ran: sort this tile's pairs only.
          options.onPairs(sortTilePairs(block, starts[a] + r0, rows, false), rowsDone);
        },
        rowName: (r) => `row ${starts[a] + r}`,
      });
    }
  } catch (err) {
    device.discard();
    throw err;
  } finally {
    device.release(scores);
    tiles.release();
  }
  return total;
}
