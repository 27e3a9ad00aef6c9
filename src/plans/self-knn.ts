/**
 * Every stored row's k nearest stored rows (itself among them), each pair of rows scored once:
 * the exact kNN self-join a CAGRA build prunes (src/indexes/graph/intermediate.ts), written once
 * for every device. The rows fall into tiles of T rows (within a chunk); for each tile I, in row
 * order, and each tile J from I on:
 *
 *   gemm-scores -> scores[I x J]   (l2: ||x_j||^2 - 2 x_i.x_j; ip: -x_i.x_j)
 *   topk        -> I's rows over J's, each score plus ||x_i||^2 (l2: the full distance, the same
 *                  number for (i, j) and (j, i)), then topk-merge into I's running lists
 *   topk, transposed (J != I) -> J's rows over I's (the tile's columns), the same scores, then
 *                  topk-merge into J's running lists
 *   after I's last J: I's lists are final (every pair with I was scored), read back
 *
 * Half the multiply-adds of searching every row against every row (n^2 d / 2 plus the diagonal
 * tiles), and the same selection order, (score, id). Scores are full squared distances (l2) or
 * minus inner products (ip), rounded as float32 sums of the GEMM's score and the norm; the CPU runs
 * the kernels' twins. The running lists (two copies, 2 n k (score, id)) must each fit one binding
 * (selfKnnFits; the tile: selfKnnTile in the kit's tiling).
 */
import type { BaseStore } from '../contracts.js';
import type { Device, DeviceBuffer } from '../device.js';
import type { KernelMetric } from '../kernel-facts.js';
import { Scratch, type RunLists } from './kit/scratch.js';
import { selectSegments, selfKnnTile } from './kit/tiling.js';
import { InvalidArgumentError } from '../errors.js';

/** Whether selfKnn can join `base`'s rows for k: its running lists within one binding (selfKnnTile). */
export function selfKnnFits(device: Device, base: BaseStore, k: number): boolean {
  return selfKnnTile(device, base.ntotal, base.chunkRows, k) !== null;
}

interface Tile {
  chunk: number;
  /** First row within its chunk, and within all rows. */
  start: number;
  row0: number;
  rows: number;
}

/**
 * The k nearest of every one of `base`'s rows among them (row i's own id among its candidates), best
 * first by (score, id), padded with (+Infinity, -1): `labels` and `distances`, n * k.
 * `onRows(done)` hears, after each tile's lists are read back, how many rows (in order) are final.
 */
export async function selfKnn(
  device: Device,
  base: BaseStore,
  k: number,
  metric: KernelMetric,
  onRows: (rowsDone: number) => void = () => {},
): Promise<{ labels: Int32Array; distances: Float32Array }> {
  const n = base.ntotal;
  const labels = new Int32Array(n * k).fill(-1);
  const distances = new Float32Array(n * k).fill(Infinity);
  if (n === 0) return { labels, distances };
  const T = selfKnnTile(device, n, base.chunkRows, k);
  if (T === null) throw new InvalidArgumentError(`selfKnn: ${n} rows' lists of k = ${k} exceed one binding (${device.limits.maxBindingBytes} bytes); check selfKnnFits`);
  const tiles: Tile[] = [];
  const starts = base.chunkStarts();
  base.chunks.forEach((c, chunk) => {
    for (let start = 0; start < c.rows; start += T) tiles.push({ chunk, start, row0: starts[chunk] + start, rows: Math.min(T, c.rows - start) });
  });
  const nseg = selectSegments(device, T, T, k);
  const scratch = new Scratch(device);
  try {
    const scores = scratch.buffer('scores', T * T * 4);
    const partS = scratch.buffer('part_s', T * nseg * k * 4);
    const partI = scratch.buffer('part_i', T * nseg * k * 4);
    const lists: [RunLists, RunLists] = [scratch.lists(n * k), scratch.lists(n * k)];
    // Which copy holds each tile's running lists, and whether it has any yet.
    const current = new Uint8Array(tiles.length);
    const started = new Uint8Array(tiles.length);
    /** Selects the tile's rows (`into`) over `cols` candidates from id `id0` and merges them into its lists. */
    const select = (into: number, cols: number, id0: number, transposed: boolean, bias: { buf: DeviceBuffer; bias0: number } | null): void => {
      const t = tiles[into];
      const src = lists[current[into]];
      const dst = lists[1 - current[into]];
      const first = started[into] === 0;
      device.dispatch({
        kernel: 'topk', scores, outS: partS, outI: partI, rows: t.rows, cols, ldc: T, k, nseg, segLen: Math.ceil(cols / nseg), id0,
        bound: first ? null : { s: src.s, i: src.i, row0: t.row0 }, transposed, bias,
      });
      device.dispatch({ kernel: 'topk-merge', partS, partI, runInS: src.s, runInI: src.i, runOutS: dst.s, runOutI: dst.i, rows: t.rows, k, nseg, first, row0: t.row0 });
      current[into] = 1 - current[into];
      started[into] = 1;
    };
    for (let a = 0; a < tiles.length; a++) {
      const I = tiles[a];
      const A = base.chunks[I.chunk];
      const bias = metric === 'l2' ? { buf: A.xnorm, bias0: I.start } : null;
      for (let b = a; b < tiles.length; b++) {
        const J = tiles[b];
        const B = base.chunks[J.chunk];
        device.dispatch({ kernel: 'gemm-scores', metric, xq: A.xb, q0: I.start, rows: I.rows, xb: B.xb, xnorm: B.xnorm, col0: J.start, cols: J.rows, dpad: base.dpad, scores, ldc: T });
        select(a, J.rows, J.row0, false, bias);
        if (b !== a) select(b, I.rows, I.row0, true, bias);
      }
      const done = lists[current[a]];
      const at = I.row0 * k * 4;
      const bytes = I.rows * k * 4;
      const [s, i] = await device.read([
        { buffer: done.s, offset: at, bytes },
        { buffer: done.i, offset: at, bytes },
      ]);
      distances.set(new Float32Array(s), I.row0 * k);
      labels.set(new Int32Array(i), I.row0 * k);
      onRows(I.row0 + I.rows);
    }
  } catch (err) {
    device.discard();
    throw err;
  } finally {
    scratch.release();
  }
  return { labels, distances };
}
