/**
 * kNN graph / batch candidates: for every vector of the index (excluding itself), or every query of
 * a second set, its k nearest, produced block by block so that memory stays bounded. Queries may
 * be an array or a source read block by block (a file of any size). Any VectorIndex; search
 * params (nprobe, a filter) apply to every block.
 */

import type { SearchParams, VectorIndex } from '../indexes/vector-index.js';
import { type VectorSource, arraySource, checkSource, checkedBlocks } from '../common/vector-source.js';
import { InvalidArgumentError } from '../errors.js';
import { dropSelf } from '../common/results.js';

export interface KnnGraphOptions {
  k: number;
  /** Queries; omitted: the index's own vectors `self` (then each row's own id is excluded). */
  queries?: Float32Array | VectorSource;
  /** With `self`: the vectors the index holds, in id order (row i has id i: sequential ids). */
  self?: Float32Array | VectorSource;
  /** Passed to every `index.search` (nprobe, filter, filterMode; `timings` hears of the last block). */
  params?: SearchParams;
  /** Queries per search (default 4096). */
  block?: number;
  /** Receives each block: rows [start, start + rows), `rows * k` labels (ids, -1 = none) and distances. */
  onBlock: (start: number, rows: number, labels: Float64Array, distances: Float32Array) => void | Promise<void>;
  onProgress?: (done: number, total: number) => void;
}

export async function knnGraph(index: VectorIndex, options: KnnGraphOptions): Promise<void> {
  const { k } = options;
  const d = index.dim;
  const excludeSelf = options.queries === undefined;
  const given = options.queries ?? options.self;
  if (!given) throw new InvalidArgumentError('knnGraph needs `queries`, or `self` (the indexed vectors) for a graph of the index itself');
  if (given instanceof Float32Array && given.length % d !== 0) {
    throw new InvalidArgumentError(`queries have length ${given.length}, which is not a multiple of dim ${d}`);
  }
  const source = given instanceof Float32Array ? arraySource(given, d) : given;
  checkSource(source, d, 'queries');
  const nq = source.rows;
  const kk = excludeSelf ? k + 1 : k;
  if (!Number.isInteger(k) || k < 1 || kk > index.backend.maxK) {
    throw new InvalidArgumentError(`k must be an integer in [1, ${index.backend.maxK - (excludeSelf ? 1 : 0)}]; got ${k}`);
  }
  const block = options.block ?? 4096;
  for await (const b of checkedBlocks(source, 'queries', false, (x) => x)) {
    for (let r0 = 0; r0 < b.rows; r0 += block) {
      const rows = Math.min(block, b.rows - r0);
      const start = b.start + r0;
      await searchBlock(b.data.subarray(r0 * d, (r0 + rows) * d), start, rows);
    }
  }

  async function searchBlock(xq: Float32Array, start: number, rows: number): Promise<void> {
    const r = await index.search(xq, kk, options.params);
    const { labels, distances } = excludeSelf ? dropSelf(r.labels, r.distances, rows, k, start) : r;
    await options.onBlock(start, rows, labels, distances);
    options.onProgress?.(start + rows, nq);
  }
}

