/**
 * kNN graph / batch candidates: for every vector of the index (excluding itself), or every query of
 * a second set, its k nearest, produced block by block so that memory stays bounded.
 */
import { InvalidArgumentError } from '../types.js';
import type { Index } from '../factory.js';

export interface KnnGraphOptions {
  k: number;
  /** Queries; omitted: the index's own vectors `self` (then each row's own id is excluded). */
  queries?: Float32Array;
  /** With `self`: the vectors the index holds, in id order. */
  self?: Float32Array;
  /** Queries per search (default 4096). */
  block?: number;
  /** Receives each block: rows [start, start + rows), `rows * k` labels and distances. */
  onBlock: (start: number, rows: number, labels: Int32Array, distances: Float32Array) => void | Promise<void>;
  onProgress?: (done: number, total: number) => void;
}

export async function knnGraph(index: Index, options: KnnGraphOptions): Promise<void> {
  const { k } = options;
  const d = index.dim;
  const excludeSelf = options.queries === undefined;
  const xq = options.queries ?? options.self;
  if (!xq) throw new InvalidArgumentError('knnGraph needs `queries`, or `self` (the indexed vectors) for a graph of the index itself');
  if (xq.length % d !== 0) throw new InvalidArgumentError(`queries have length ${xq.length}, which is not a multiple of dim ${d}`);
  const nq = xq.length / d;
  const kk = excludeSelf ? k + 1 : k;
  if (!Number.isInteger(k) || k < 1 || kk > index.backend.maxK) {
    throw new InvalidArgumentError(`k must be an integer in [1, ${index.backend.maxK - (excludeSelf ? 1 : 0)}]; got ${k}`);
  }
  const block = options.block ?? 4096;
  for (let start = 0; start < nq; start += block) {
    const rows = Math.min(block, nq - start);
    const r = await index.search(xq.subarray(start * d, (start + rows) * d), kk);
    let labels = r.labels;
    let distances = r.distances;
    if (excludeSelf) {
      labels = new Int32Array(rows * k);
      distances = new Float32Array(rows * k);
      for (let i = 0; i < rows; i++) {
        // Skip the row's own id; if ties pushed it out of the k + 1, the last one is left out instead.
        let o = 0;
        for (let j = 0; j < kk && o < k; j++) {
          if (r.labels[i * kk + j] === start + i) continue;
          labels[i * k + o] = r.labels[i * kk + j];
          distances[i * k + o] = r.distances[i * kk + j];
          o++;
        }
      }
    }
    await options.onBlock(start, rows, labels, distances);
    options.onProgress?.(start + rows, nq);
  }
}
