/**
 * Rows read block by block: what `addFrom` and `train` take, so that a corpus need never be one
 * array (a 31 GB file cannot be). A VectorReader (openVectors, src/io/vector-reader.ts) is one;
 * `arraySource` makes one of an array.
 */
import { type Metric, checkVectors, prepareOwnRows } from '../types.js';
import { InvalidArgumentError } from '../errors.js';

/** The default block: as many rows as fit in 16 MiB of float32. */
export const DEFAULT_BLOCK_BYTES = 16 * 1024 * 1024;

/**
 * `rows` rows of `dim` floats. `blocks()` may be called more than once (an IVF build reads its
 * source twice); each call starts again from the first row. A block's `data` is the caller's to
 * keep or change.
 */
export interface VectorSource {
  readonly rows: number;
  readonly dim: number;
  /** The file the rows come from, if any (a VectorReader's): messages about a row name it. */
  readonly path?: string;
  blocks(): AsyncIterable<{ data: Float32Array; rows: number }>;
}

/** Progress of a long operation: rows done of rows in all (and, where there are several, which phase). */
export type RowProgress = (rowsDone: number, rows: number, phase?: string) => void;

/** Checks that `source` is a VectorSource of rows of `dim` (`what` names it in messages). */
export function checkSource(source: VectorSource, dim: number, what = 'the source'): void {
  if (ArrayBuffer.isView(source) || Array.isArray(source)) {
    const got = (source as object).constructor?.name;
    throw new InvalidArgumentError(`${what} must be a Float32Array of n * ${dim} values or a VectorSource (see openVectors); got ${got}`);
  }
  if (!source || typeof source.blocks !== 'function' || !Number.isInteger(source.rows) || source.rows < 0) {
    const got = source === null || typeof source !== 'object' ? String(source) : `rows ${String(source.rows)}, blocks ${typeof source.blocks}`;
    throw new InvalidArgumentError(`${what} must be a Float32Array or a VectorSource (an integer rows >= 0 and a blocks() method; openVectors gives one); got ${got}`);
  }
  if (source.dim !== dim && source.rows > 0) throw new InvalidArgumentError(`${what} has dim ${source.dim}; expected dim ${dim}`);
}

/** The most ids an index holds: ids are int32 in results. */
export const MAX_IDS = 2 ** 31 - 1;

/** Checks that `n` more vectors fit beside `ntotal` (ids stay below 2^31, int32 in results). */
export function checkIdRoom(ntotal: number, n: number): void {
  if (ntotal + n > MAX_IDS) {
    throw new InvalidArgumentError(`${n} more vectors beside ${ntotal} would need ids beyond ${MAX_IDS}; an index holds at most ${MAX_IDS} (ids are int32)`);
  }
}

/**
 * `x` (`n * dim`) as a source of blocks of at most `blockRows` rows (by default as many as the file
 * readers' blocks hold); copies, so callers may keep them.
 */
export function arraySource(x: Float32Array, dim: number, blockRows = Math.max(1, Math.floor(DEFAULT_BLOCK_BYTES / (4 * dim)))): VectorSource {
  if (!(x instanceof Float32Array) || !Number.isInteger(dim) || dim < 1 || x.length % dim !== 0) {
    throw new InvalidArgumentError(`arraySource needs a Float32Array of n * dim values and an integer dim >= 1; got length ${(x as { length?: number })?.length} and dim ${dim}`);
  }
  const rows = x.length / dim;
  return {
    rows,
    dim,
    async *blocks() {
      for (let r0 = 0; r0 < rows; r0 += blockRows) {
        const n = Math.min(blockRows, rows - r0);
        yield { data: x.slice(r0 * dim, (r0 + n) * dim), rows: n };
      }
    },
  };
}

/**
 * `source` as an index holds its rows: each block validated (as `what`: finite values, and norms
 * unless cosine) and prepared for `metric` (normalised for cosine). For training on a file.
 */
export function preparedSource(source: VectorSource, metric: Metric, dim: number, what = 'xt'): VectorSource {
  return { rows: source.rows, dim, path: source.path, blocks: () => checkedBlocks(source, what, metric !== 'cosine', (b) => prepareOwnRows(metric, b, dim)) };
}

/**
 * Every block of `source`, validated (finite values; `checkNorms` as checkVectors; errors name the
 * source's file and row where it has a path, else `what` and the row) and passed through `prepare`
 * (the index's normalisation); checks the row count.
 */
export async function* checkedBlocks(
  source: VectorSource,
  what: string,
  checkNorms: boolean,
  prepare: (x: Float32Array) => Float32Array,
): AsyncGenerator<{ data: Float32Array; rows: number; start: number }> {
  let start = 0;
  for await (const block of source.blocks()) {
    const rows = checkVectors(block.data, source.dim, source.path === undefined ? what : `${source.path}:`, true, checkNorms, start);
    if (rows !== block.rows) throw new InvalidArgumentError(`${what}: a block of ${block.rows} rows holds ${block.data.length} values (${rows} rows of dim ${source.dim})`);
    if (start + rows > source.rows) throw new InvalidArgumentError(`${what}: the source said ${source.rows} rows and gave more`);
    yield { data: prepare(block.data), rows, start };
    start += rows;
  }
  if (start !== source.rows) throw new InvalidArgumentError(`${what}: the source said ${source.rows} rows and gave ${start}`);
}

/** The given rows of `x` (`d` floats each), in the given order, in one array. */
export function copyRows(x: Float32Array, d: number, rows: ArrayLike<number>): Float32Array {
  const out = new Float32Array(rows.length * d);
  for (let i = 0; i < rows.length; i++) out.set(x.subarray(rows[i] * d, (rows[i] + 1) * d), i * d);
  return out;
}

/** The rows `pick` (ascending) of `source` in one pass, or all of them (`pick` null), in one array. */
export async function gatherRows(
  blocks: AsyncIterable<{ data: Float32Array; rows: number; start: number }>,
  dim: number,
  rows: number,
  pick: ArrayLike<number> | null,
): Promise<Float32Array> {
  const out = new Float32Array((pick ? pick.length : rows) * dim);
  let p = 0;
  for await (const b of blocks) {
    if (!pick) {
      out.set(b.data.subarray(0, b.rows * dim), b.start * dim);
      continue;
    }
    for (; p < pick.length && pick[p] < b.start + b.rows; p++) {
      const r = pick[p] - b.start;
      out.set(b.data.subarray(r * dim, (r + 1) * dim), p * dim);
    }
  }
  return out;
}

/**
 * Each dimension's minimum and maximum over `x` (an array of rows, already prepared, or a source
 * read block by block, each block checked and prepared by `prepare`), as two rows [min; max] of
 * `dim` floats; null when there are no rows. What a min-max scalar quantiser trains on.
 */
export async function dimensionRange(
  x: Float32Array | VectorSource,
  dim: number,
  prepare: (x: Float32Array) => Float32Array,
  checkNorms: boolean,
): Promise<Float32Array | null> {
  const out = new Float32Array(2 * dim).fill(Infinity);
  out.fill(-Infinity, dim);
  let rows = 0;
  const take = (data: Float32Array): void => {
    for (let i = 0; i < data.length; i++) {
      const j = i % dim;
      if (data[i] < out[j]) out[j] = data[i];
      if (data[i] > out[dim + j]) out[dim + j] = data[i];
    }
    rows += data.length / dim;
  };
  if (x instanceof Float32Array) take(x);
  else for await (const b of checkedBlocks(x, 'xt', checkNorms, prepare)) take(b.data);
  return rows > 0 ? out : null;
}
