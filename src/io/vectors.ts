/**
 * Vector files in and out, chosen by extension:
 *   read:  .fvecs .bvecs .ivecs (TEXMEX), .npy (2-D, C order; float32/64/16, uint8, int8, int32),
 *          .jsonl (one JSON object a line with an `embedding` (or `vector`) array and an optional `id`)
 *   write: .fvecs .ivecs .npy .jsonl .csv
 * Truncated or malformed input is rejected with the byte offset or line number.
 * Writes go to a temporary file that is renamed into place, so a failure never leaves half a file.
 */
import { gunzipSync } from 'node:zlib';
import { extname } from 'node:path';
import { InvalidArgumentError } from '../types.js';
import { readFileOrFail } from './file-error.js';
import { formatNpy, parseNpy } from './npy.js';
import { WRITE_FORMATS, writeAtomically } from './stream-writer.js';
import { readBvecs, readFvecs, readIvecs } from './texmex.js';

export interface VectorFile {
  data: Float32Array;
  n: number;
  d: number;
  /** Ids from a .jsonl file (as strings), else null: row numbers are the ids. */
  ids: string[] | null;
}

export const READ_FORMATS = ['.fvecs', '.bvecs', '.ivecs', '.npy', '.jsonl', 'IDX (*-idx3-ubyte[.gz], as Fashion-MNIST ships)'];
export { WRITE_FORMATS, writeAtomically };

export function readVectors(path: string): VectorFile {
  if (/-idx\d-ubyte(\.gz)?$/.test(path)) return readIdx(path);
  const ext = extname(path).toLowerCase();
  switch (ext) {
    case '.fvecs':
      return { ...readFvecs(path), ids: null };
    case '.bvecs':
      return { ...readBvecs(path), ids: null };
    case '.ivecs': {
      const v = readIvecs(path);
      return { data: Float32Array.from(v.data), n: v.n, d: v.d, ids: null };
    }
    case '.npy': {
      const a = parseNpy(readFileOrFail(path), path);
      return { data: a.data, n: a.n, d: a.d, ids: null };
    }
    case '.jsonl':
      return readJsonl(path);
    default:
      throw new InvalidArgumentError(`${path}: unknown vector file type '${ext}'; expected one of ${READ_FORMATS.join(', ')}`);
  }
}

/** IDX (MNIST's format): big-endian magic 0x0803 (unsigned bytes, 3-D), then n, rows, cols; gzip allowed. */
function readIdx(path: string): VectorFile {
  let buf: Uint8Array = readFileOrFail(path);
  if (path.endsWith('.gz')) {
    try {
      buf = gunzipSync(buf);
    } catch (err) {
      throw new InvalidArgumentError(`${path}: not a valid gzip file (${(err as Error).message})`);
    }
  }
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  if (buf.byteLength < 16 || view.getUint32(0) !== 0x0803) {
    throw new InvalidArgumentError(`${path}: not an IDX file of unsigned bytes with 3 dimensions (magic 0x00000803 at byte 0)`);
  }
  const n = view.getUint32(4);
  const d = view.getUint32(8) * view.getUint32(12);
  if (buf.byteLength < 16 + n * d) throw new InvalidArgumentError(`${path}: truncated: ${n} x ${d} bytes need ${16 + n * d}; the data ends at byte ${buf.byteLength}`);
  return { data: Float32Array.from(buf.subarray(16, 16 + n * d)), n, d, ids: null };
}

function readJsonl(path: string): VectorFile {
  const lines = readFileOrFail(path).toString('utf8').split('\n');
  const rows: number[][] = [];
  const ids: string[] = [];
  let d = -1;
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    let obj: { id?: unknown; embedding?: unknown; vector?: unknown };
    try {
      obj = JSON.parse(line);
    } catch (err) {
      throw new InvalidArgumentError(`${path}: line ${i + 1} is not valid JSON (${(err as Error).message})`);
    }
    const v = obj.embedding ?? obj.vector;
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'number')) {
      throw new InvalidArgumentError(`${path}: line ${i + 1} has no numeric 'embedding' (or 'vector') array`);
    }
    if (d === -1) d = v.length;
    if (v.length !== d || d === 0) throw new InvalidArgumentError(`${path}: line ${i + 1} has ${v.length} values; expected ${d} (as on the first line)`);
    rows.push(v as number[]);
    ids.push(obj.id === undefined ? String(rows.length - 1) : String(obj.id));
  });
  const data = new Float32Array(rows.length * Math.max(d, 0));
  rows.forEach((r, i) => data.set(r, i * d));
  return { data, n: rows.length, d: Math.max(d, 0), ids };
}

/** Writes `n x d` values (`data`) to `path`, in the format its extension names. */
export function writeVectors(path: string, data: Float32Array | Int32Array, n: number, d: number, ids?: string[]): void {
  const ext = extname(path).toLowerCase();
  let bytes: Uint8Array | string;
  switch (ext) {
    case '.fvecs':
    case '.ivecs': {
      const out = new DataView(new ArrayBuffer(n * (4 + 4 * d)));
      for (let i = 0; i < n; i++) {
        out.setInt32(i * (4 + 4 * d), d, true);
        for (let j = 0; j < d; j++) {
          const o = i * (4 + 4 * d) + 4 + 4 * j;
          if (ext === '.fvecs') out.setFloat32(o, data[i * d + j], true);
          else out.setInt32(o, data[i * d + j], true);
        }
      }
      bytes = new Uint8Array(out.buffer);
      break;
    }
    case '.npy':
      bytes = formatNpy(data, n, d);
      break;
    case '.jsonl': {
      const lines: string[] = [];
      for (let i = 0; i < n; i++) lines.push(JSON.stringify({ id: ids ? ids[i] : i, embedding: Array.from(data.subarray(i * d, (i + 1) * d)) }));
      bytes = lines.join('\n') + (n ? '\n' : '');
      break;
    }
    case '.csv': {
      const lines: string[] = [];
      for (let i = 0; i < n; i++) lines.push(Array.from(data.subarray(i * d, (i + 1) * d)).join(','));
      bytes = lines.join('\n') + (n ? '\n' : '');
      break;
    }
    default:
      throw new InvalidArgumentError(`${path}: unknown output type '${ext}'; expected one of ${WRITE_FORMATS.join(', ')}`);
  }
  writeAtomically(path, bytes);
}
