/**
 * The self-join's candidate pairs (see Backend.selfJoinCandidates), written once for every device:
 *
 *   for each chunk A, for each row tile of A (in row order):
 *     for each chunk B >= A, each column tile right of the diagonal:
 *       gemm-scores      -> scores[rows x tileCols]
 *       pairs-threshold  -> append (i, j) with i < j whose score passes, counted atomically
 *     read the count; if the pairs did not fit, re-run the tile with room for all of them (or, past
 *     one binding, with half the rows); else read the pairs, sort them, hand them on
 */
import { DEFAULT_MAX_CANDIDATES, sortTilePairs, tooManyCandidates } from '../pairs.js';
import type { SelfJoinOptions } from '../backend.js';
import type { Device, DeviceBuffer } from '../device.js';
import type { KernelMetric } from '../kernel-facts.js';
import type { CodeStore } from '../stores/code-store.js';
import { InvalidArgumentError } from '../types.js';
import { scoreTiles } from './tiling.js';

export async function selfJoinCandidates(
  device: Device,
  base: CodeStore,
  metric: KernelMetric,
  limit: number,
  rel: number,
  options: SelfJoinOptions,
): Promise<number> {
  const ntotal = base.ntotal;
  const maxCandidates = options.maxCandidates ?? DEFAULT_MAX_CANDIDATES;
  // Pairs a tile may append: one binding's worth.
  const maxTilePairs = Math.floor(device.limits.maxBindingBytes / 8);
  const { tileCols, queryTile } = scoreTiles(device, ntotal, ntotal, base.chunkRows);
  const scores = device.buffer('scores', queryTile * tileCols * 4);
  const count = device.buffer('pair_count', 4);
  let capacity = Math.min(maxTilePairs, Math.max(16, device.tuning.pairCapacity));
  let pairs: DeviceBuffer = device.buffer('pairs', capacity * 8);
  let total = 0;
  let rowsDone = 0;
  try {
    const starts = base.chunkStarts();
    for (let a = 0; a < base.chunks.length; a++) {
      const A = base.chunks[a];
      // Rows per tile: queryTile, halved while a tile has more pairs than one binding holds.
      let step = queryTile;
      for (let r0 = 0; r0 < A.rows; ) {
        let rows: number;
        const q0 = starts[a] + r0;
        let block: Uint32Array;
        for (;;) {
          rows = Math.min(step, A.rows - r0);
          device.clear(count);
          for (let b = a; b < base.chunks.length; b++) {
            const B = base.chunks[b];
            for (let col0 = 0; col0 < B.rows; col0 += tileCols) {
              const cols = Math.min(tileCols, B.rows - col0);
              if (starts[b] + col0 + cols <= q0 + 1) continue; // entirely left of the diagonal
              device.dispatch({ kernel: 'gemm-scores', metric, xq: A.xb, xb: B.xb, xnorm: B.xnorm, scores, q0: r0, rows, col0, cols, dpad: base.dpad, ldc: tileCols });
              device.dispatch({
                kernel: 'pairs-threshold', metric, allPairs: false, scores, xnormQ: A.xnorm, xnormB: B.xnorm, count, pairs, rows, cols, ldc: tileCols,
                q0, id0: starts[b] + col0, limit, rel, capacity, qn0: r0, cn0: col0,
              });
            }
          }
          const n = new Uint32Array((await device.read([{ buffer: count, offset: 0, bytes: 4 }]))[0])[0];
          // The count is exact even past capacity: an explosion is reported before any buffer grows.
          if (total + n > maxCandidates) throw tooManyCandidates(maxCandidates, q0, ntotal);
          if (n > maxTilePairs) {
            if (rows === 1) {
              throw new InvalidArgumentError(
                `row ${q0} alone has ${n} candidate pairs, more than one binding holds (${maxTilePairs}); use a stricter threshold`,
              );
            }
            step = Math.max(1, Math.floor(rows / 2));
            continue;
          }
          if (n <= capacity) {
            block = n > 0 ? new Uint32Array((await device.read([{ buffer: pairs, offset: 0, bytes: n * 8 }]))[0]) : new Uint32Array(0);
            total += n;
            break;
          }
          device.release(pairs);
          capacity = n;
          pairs = device.buffer('pairs', capacity * 8);
        }
        rowsDone += rows;
        r0 += rows;
        step = Math.min(queryTile, 2 * step); // back towards full tiles after a dense region
        // Appended in whatever order the invocations ran: sort this tile's pairs only.
        options.onPairs(sortTilePairs(block, q0, rows, false), rowsDone);
      }
    }
  } catch (err) {
    device.discard();
    throw err;
  } finally {
    device.release(scores);
    device.release(count);
    device.release(pairs);
  }
  return total;
}
