/**
 * Vector files in and out, chosen by extension (the package exports them from here):
 *   read:  .fvecs .bvecs .ivecs (TEXMEX), .npy, .jsonl, IDX: vector-reader.ts, as blocks of rows
 *          (`openVectors`) or, for files that fit in memory, all at once (`readVectors`);
 *   write: .fvecs .ivecs .npy .jsonl .csv: `writeVectors` below, through VectorStreamWriter
 *          (stream-writer.ts), the one writer, which writes to a temporary file renamed into place,
 *          so a failure never leaves half a file.
 */
import type { NpyWriteKind } from './npy.js';
import { type VectorBlockArray, VectorStreamWriter } from './stream-writer.js';
import { DEFAULT_BLOCK_BYTES } from './vector-reader.js';
import { InvalidArgumentError } from '../errors.js';

export { READ_FORMATS, openVectors, readIvecs, readVectors } from './vector-reader.js';
export type { BlockOptions, VectorBlock, VectorFile, VectorReader } from './vector-reader.js';
export { WRITE_FORMATS, writeAtomically } from './stream-writer.js';
export type { VectorBlockArray } from './stream-writer.js';

/** How writeVectors writes. */
export interface WriteVectorsOptions {
  /** .jsonl: each row's `id` (default: the row numbers). */
  ids?: string[];
  /**
   * `data` (a Float64Array) holds search labels (integers in [-1, 2^53 - 1], as SearchResult's
   * `labels`): .npy writes them as int64 ('<i8'), and every value is checked to be such an
   * integer. Without it a Float64Array is float64 values ('<f8' in .npy).
   */
  labels?: boolean;
}

/**
 * Writes `n x d` values (`data`) to `path`, in the format its extension names, exactly or not at
 * all: .npy keeps the array's type (Float32Array '<f4', Float64Array '<f8', or int64 '<i8' with
 * `{ labels: true }`, Int32Array '<i4', BigInt64Array '<i8'); .fvecs takes a Float32Array; .ivecs
 * an Int32Array, or integers of int32 range in a BigInt64Array or Float64Array (checked value by
 * value); .csv and .jsonl any (.jsonl rows are `{"id", "embedding"}`). Anything else is refused
 * with an error naming the array type and what the format holds, and no file is left behind.
 */
export function writeVectors(path: string, data: VectorBlockArray, n: number, d: number, { ids, labels = false }: WriteVectorsOptions = {}): void {
  const writer = new VectorStreamWriter(path, n, d, writeKind(data, labels), { jsonlField: 'embedding' });
  try {
    // Blocks of about 16 MiB of values, so the formatted copy stays small.
    const blockRows = Math.max(1, Math.floor(DEFAULT_BLOCK_BYTES / (data.BYTES_PER_ELEMENT * Math.max(d, 1))));
    for (let start = 0; start < n; start += blockRows) {
      const rows = Math.min(blockRows, n - start);
      writer.write(data.subarray(start * d, (start + rows) * d), rows, ids?.slice(start, start + rows));
    }
    writer.close();
  } catch (err) {
    writer.abort();
    throw err;
  }
}

/** The writer's kind for `data` (see npy.ts). */
function writeKind(data: VectorBlockArray, labels: boolean): NpyWriteKind {
  if (labels && !(data instanceof Float64Array)) throw new InvalidArgumentError(`labels: true takes search labels in a Float64Array; got a ${data.constructor.name}`);
  if (data instanceof Float64Array) return labels ? 'id' : 'float64';
  if (data instanceof Int32Array) return 'int';
  if (data instanceof BigInt64Array) return 'int64';
  if (data instanceof Float32Array) return 'float';
  throw new InvalidArgumentError(`writeVectors: data is a ${(data as object)?.constructor?.name ?? typeof data}; expected a Float32Array, Float64Array, Int32Array or BigInt64Array`);
}
