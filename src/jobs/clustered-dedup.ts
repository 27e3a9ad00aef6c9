/**
 * Clustered dedup: approximate near-duplicate detection after SemDeDup (NeMo Curator's semantic
 * dedup), with its loss measured rather than assumed.
 *
 *   k-means into C partitions (cosine: of the normalised rows)
 *   each row into its m nearest partitions (m = overlap)
 *   the exact self-join inside each partition (the dedup's own join, margin and preparation)
 *   the candidates of all partitions merged (a pair found in two partitions counted once), sorted
 *   the float64 confirmation and union-find of dedup
 *
 * Every pair reported is a true pair (precision 1), with dedup's exact score. A true pair is
 * missed when its two rows share none of their m partitions; `bench clustered-dedup` measures how
 * many are. With m = C every row is in every partition and the result is dedup's. The work is the
 * sum over partitions of size^2 / 2 instead of n^2 / 2: about m^2 / C of it for even partitions.
 */
import type { Backend } from '../backend/backend.js';
import { FlatIndex } from '../indexes/flat/flat-index.js';
import { KMeans } from '../codecs/kmeans.js';
import { normalizeRows } from '../types.js';
import { type VectorSource, checkedBlocks, copyRows, gatherRows } from '../common/vector-source.js';
import { type DedupOptions, type DedupResult, finishDedup, joinArgs, startDedup } from './dedup.js';
import { InvalidArgumentError } from '../errors.js';

export interface ClusteredDedupOptions extends DedupOptions {
  /** C: k-means partitions, an integer in [1, n]. */
  partitions: number;
  /** m: partitions each row goes into (its m nearest centroids), in [1, C] (default 1). */
  overlap?: number;
  /** k-means iterations (default 25) and seed (default 1234): the same partitions every run. */
  niter?: number;
  seed?: number;
  /** After each partition's join: partitions done, of C, and candidates so far (with repeats). */
  onPartition?: (done: number, total: number, candidates: number) => void;
}

export interface ClusteredDedupResult extends DedupResult {
  /** Rows in each partition (a row in m of them counts in each). */
  partitionRows: Uint32Array;
  /** Row pairs scored inside partitions, over the n (n - 1) / 2 of the exact dedup (pairs in two partitions count twice). */
  scoredFraction: number;
}

/** Pairs are merged as keys a * n + b, exact in a float64 while n^2 <= 2^53. */
const MAX_ROWS = Math.floor(Math.sqrt(2 ** 53));
/** Rows assigned to partitions per search, and candidates confirmed per block. */
const ASSIGN_ROWS = 16384;
const CONFIRM_PAIRS = 1 << 20;

export async function clusteredDedup(backend: Backend, x: Float32Array | VectorSource, d: number, options: ClusteredDedupOptions): Promise<ClusteredDedupResult> {
  const { n, metric, threshold, maxCandidates, kept, exact } = startDedup(x, d, options);
  const C = options.partitions;
  if (!Number.isInteger(C) || C < 1 || C > Math.max(1, n)) throw new InvalidArgumentError(`partitions must be an integer in [1, ${Math.max(1, n)}] (the rows); got ${String(C)}`);
  const m = options.overlap ?? 1;
  if (!Number.isInteger(m) || m < 1 || m > C) throw new InvalidArgumentError(`overlap must be an integer in [1, ${C}] (the partitions); got ${String(m)}`);
  if (n > MAX_ROWS) throw new InvalidArgumentError(`clustered dedup takes at most ${MAX_ROWS} rows; got ${n}`);

  // The rows, held once for the joins and the exact check (as dedup holds them for its check).
  const rows = x instanceof Float32Array ? x : await gatherRows(checkedBlocks(x, 'vectors', metric !== 'cosine', (b) => b), d, n, null);
  exact.addRows(rows, n, 0);
  const prepared = metric === 'cosine' ? normalizeRows(rows, d) : rows;
  const members = n === 0 ? [] : await partition(backend, prepared, n, d, C, m, options);
  const partitionRows = Uint32Array.from(members, (p) => p.length);

  // Each partition's join, its candidates as keys in global rows (ascending lists keep a < b).
  const keys = new KeyChunks();
  let scored = 0;
  for (let c = 0; c < members.length; c++) {
    const ids = members[c];
    scored += (ids.length * (ids.length - 1)) / 2;
    if (ids.length >= 2) {
      const store = backend.createBaseStore(d, { hostCopy: false });
      try {
        await store.reserve(ids.length);
        await store.add(copyRows(prepared, d, ids), ids.length);
        await backend.selfJoinCandidates(store, ...joinArgs(metric, threshold, d), {
          onPairs: (block) => {
            for (let p = 0; p < block.length; p += 2) keys.push(ids[block[p]] * n + ids[block[p + 1]]);
          },
          maxCandidates: maxCandidates === Infinity ? Infinity : Math.max(0, maxCandidates - keys.length),
        });
      } finally {
        store.dispose();
      }
    }
    options.onPartition?.(c + 1, members.length, keys.length);
  }

  // Merged, in (i, j) order, each once; then confirmed block by block as dedup confirms.
  const sorted = keys.finish().sort();
  const block = new Uint32Array(2 * CONFIRM_PAIRS);
  let b = 0;
  const flush = () => {
    if (b > 0) exact.confirm(block.subarray(0, b), block[b - 2] + 1);
    b = 0;
  };
  for (let p = 0; p < sorted.length; p++) {
    if (p > 0 && sorted[p] === sorted[p - 1]) continue;
    block[b++] = Math.floor(sorted[p] / n);
    block[b++] = sorted[p] % n;
    if (b === block.length) flush();
  }
  flush();
  return { ...finishDedup(kept, exact), partitionRows, scoredFraction: n < 2 ? 0 : scored / ((n * (n - 1)) / 2) };
}

/** The rows of each of C k-means partitions, ascending: every row in the partitions of its m nearest centroids. */
async function partition(backend: Backend, x: Float32Array, n: number, d: number, C: number, m: number, options: ClusteredDedupOptions): Promise<Uint32Array[]> {
  const { centroids } = await new KMeans(backend, { dim: d }).train(x, { k: C, niter: options.niter, seed: options.seed });
  const index = new FlatIndex(backend, { dim: d, metric: 'l2' });
  // Row r's partitions are assigned[r * m .. r * m + m - 1].
  const assigned = new Uint32Array(n * m);
  try {
    await index.add(centroids);
    for (let r0 = 0; r0 < n; r0 += ASSIGN_ROWS) {
      const rows = Math.min(ASSIGN_ROWS, n - r0);
      const { labels } = await index.search(x.subarray(r0 * d, (r0 + rows) * d), m);
      assigned.set(labels, r0 * m);
    }
  } finally {
    await index.dispose();
  }
  // Each partition's rows, filled in row order: ascending.
  const sizes = new Uint32Array(C);
  for (const c of assigned) sizes[c]++;
  const lists = Array.from(sizes, (size) => new Uint32Array(size));
  const filled = new Uint32Array(C);
  assigned.forEach((c, p) => (lists[c][filled[c]++] = Math.floor(p / m)));
  return lists;
}

/** Pair keys in fixed-size chunks, joined once at the end. */
class KeyChunks {
  private static readonly CHUNK = 1 << 20;
  private chunks: Float64Array[] = [];
  length = 0;
  push(key: number): void {
    const o = this.length % KeyChunks.CHUNK;
    if (o === 0) this.chunks.push(new Float64Array(KeyChunks.CHUNK));
    this.chunks[this.chunks.length - 1][o] = key;
    this.length++;
  }
  finish(): Float64Array {
    const out = new Float64Array(this.length);
    this.chunks.forEach((c, k) => out.set(c.subarray(0, Math.min(KeyChunks.CHUNK, this.length - k * KeyChunks.CHUNK)), k * KeyChunks.CHUNK));
    this.chunks = [];
    return out;
  }
}
