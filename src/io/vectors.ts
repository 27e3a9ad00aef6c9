/**
 * Vector files in and out, chosen by extension (the package exports them from here):
 *   read:  .fvecs .bvecs .ivecs (TEXMEX), .npy, .jsonl, IDX: vector-reader.ts, as blocks of rows
 *          (`openVectors`) or, for files that fit in memory, all at once (`readVectors`);
 *   write: .fvecs .ivecs .npy .jsonl .csv: `writeVectors` below, through VectorStreamWriter
 *          (stream-writer.ts), the one writer, which writes to a temporary file renamed into place,
 *          so a failure never leaves half a file.
 */
import { extname } from 'node:path';
import { VectorStreamWriter } from './stream-writer.js';
import { DEFAULT_BLOCK_BYTES } from './vector-reader.js';

export { READ_FORMATS, openVectors, readIvecs, readVectors } from './vector-reader.js';
export type { BlockOptions, VectorBlock, VectorFile, VectorReader } from './vector-reader.js';
export { WRITE_FORMATS, writeAtomically } from './stream-writer.js';

/**
 * Writes `n x d` values (`data`) to `path`, in the format its extension names: .fvecs holds
 * float32, .ivecs int32, and .npy the type of `data`; .jsonl rows are `{"id", "embedding"}`, with
 * `ids` (default: the row numbers).
 */
export function writeVectors(path: string, data: Float32Array | Int32Array, n: number, d: number, ids?: string[]): void {
  const ext = extname(path).toLowerCase();
  const kind = ext === '.fvecs' ? 'float' : ext === '.ivecs' ? 'int' : data instanceof Int32Array ? 'int' : 'float';
  const writer = new VectorStreamWriter(path, n, d, kind, { jsonlField: 'embedding' });
  try {
    // Blocks of about 16 MiB of values, so the formatted copy stays small.
    const blockRows = Math.max(1, Math.floor(DEFAULT_BLOCK_BYTES / (4 * Math.max(d, 1))));
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
