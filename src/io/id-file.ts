/**
 * Id files: the ids a command takes (`build --ids`, `search --filter-ids`, `remove --ids`,
 * `range-search --filter-ids`), as a BigInt64Array (what `addWithIds`, `removeIds` and filters
 * take). Two forms, chosen by the file's name:
 *   - `.npy`: a 1-D array (n,), or a column (n, 1), of int64 (`<i8`), int32 (`<i4`) or uint32 (`<u4`);
 *   - `.jsonl`: a JSON Lines file of vectors, the `id` of each line (see readJsonlIds);
 *   - anything else (`.txt`, `.csv`, ...): text, one id per line in decimal; blank lines (and
 *     blanks around an id) are ignored.
 * Every id must be an integer in [0, MAX_ID] (2^53 - 1, see src/indexes/ids.ts); a bad one is refused with
 * the file, the line (text) or element (.npy) and the value. Text is read in blocks, so a file of
 * any length is held only as the ids themselves (8 bytes each).
 */
import { extname } from 'node:path';

import { openForReading, fileError } from './file-error.js';
import { bytesAfter, readNpyFields } from './npy.js';
import { jsonlIds } from './vector-reader.js';
import { MAX_ID } from '../types.js';
import { InvalidArgumentError } from '../errors.js';

/** Bytes read per block of a text id file. */
const TEXT_BLOCK_BYTES = 1 << 22;

/** The .npy dtypes an id file may hold, and how to read their values as numbers. */
const NPY_ID_DTYPES: Record<string, { bytes: number; values: (raw: Uint8Array) => ArrayLike<number | bigint> }> = {
  '<i8': { bytes: 8, values: (raw) => new BigInt64Array(raw.buffer, raw.byteOffset, raw.byteLength / 8) },
  '<i4': { bytes: 4, values: (raw) => new Int32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4) },
  '<u4': { bytes: 4, values: (raw) => new Uint32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4) },
};

export interface IdFileOptions {
  /** Refuse an id that appears twice, naming both places (build: each vector's id is its own). */
  unique?: boolean;
}

/** Reads the id file at `path` (see above). Throws a FileError if it cannot be read, an InvalidArgumentError if it is malformed. */
export async function readIdFile(path: string, options: IdFileOptions = {}): Promise<BigInt64Array> {
  if (extname(path).toLowerCase() === '.jsonl') {
    const ids = await readJsonlIds(path, options);
    if (!ids) throw new InvalidArgumentError(`${path}: no line has an 'id'; an id file of JSON Lines gives one on every line`);
    return ids;
  }
  const { handle, stat } = await openForReading(path);
  try {
    const read = async (buf: Uint8Array, position: number): Promise<number> => {
      try {
        return (await handle.read(buf, 0, buf.length, position)).bytesRead;
      } catch (err) {
        throw fileError(path, 'cannot read', err);
      }
    };
    const ids = new IdList(path, options.unique === true);
    if (extname(path).toLowerCase() === '.npy') await readNpyIds(path, stat.size, read, ids);
    else await readTextIds(stat.size, read, ids);
    return ids.result();
  } finally {
    await handle.close();
  }
}

/**
 * The `id` fields of a JSON Lines file of vectors, one per row (what `build` gives the rows of such
 * a file when no --ids is given): each an integer literal (digits only, as written: not `1e3`,
 * `4.0` or `-0`, which JSON.parse would round to an integer) or a string of decimal digits (as
 * writeVectors writes ids), in [0, MAX_ID]. Null when no line has an `id`; a file where some lines
 * have one and others not is refused, naming a line of each.
 */
export async function readJsonlIds(path: string, options: IdFileOptions = {}): Promise<BigInt64Array | null> {
  const ids = new IdList(path, options.unique === true);
  let first: { line: number; has: boolean } | null = null;
  for await (const { id, line, text } of jsonlIds(path)) {
    const has = id !== undefined;
    first ??= { line, has };
    if (has !== first.has) {
      const which = has ? `has an 'id', but line ${first.line} has none` : `has no 'id', but line ${first.line} has one`;
      throw new InvalidArgumentError(`${path}: line ${line} ${which}; give every line an id, or none (the ids are then the row numbers)`);
    }
    if (!has) continue;
    // A number as written, not as JSON.parse rounds it: 1e3, 4.0, -0 or 9007199254740990.6 (read
    // as 9007199254740991) are not integer literals. A string must be decimal digits.
    const digits = typeof id === 'number' ? text : typeof id === 'string' ? id : undefined;
    const value = digits !== undefined && /^\d+$/.test(digits) ? BigInt(digits) : NaN;
    ids.push(value, `line ${line}`, shown(typeof id === 'number' ? text! : JSON.stringify(id)));
  }
  return first?.has ? ids.result() : null;
}

/** A bad value as shown in a message: at most 40 characters of it. */
const shown = (text: string): string => (text.length > 40 ? `${text.slice(0, 40)}...` : text);

/** The ids read so far, checked as they come (range, and with `unique` repeats). */
class IdList {
  private values = new Float64Array(1024);
  private n = 0;
  /** id -> where it was first seen, when checking for repeats. */
  private readonly seen: Map<number, string> | null;

  constructor(
    private readonly path: string,
    unique: boolean,
  ) {
    this.seen = unique ? new Map() : null;
  }

  /** Adds `id` (a number, or a bigint from int64), found at `where` ("line 3", "element 2"), showing `text` if it is bad. */
  push(id: number | bigint, where: string, text = String(id)): void {
    const ok = typeof id === 'bigint' ? id >= 0n && id <= BigInt(MAX_ID) : Number.isInteger(id) && id >= 0 && id <= MAX_ID;
    if (!ok) throw new InvalidArgumentError(`${this.path}: ${where}: ${text} is not an id; expected an integer in [0, ${MAX_ID}] (2^53 - 1)`);
    const v = Number(id);
    if (this.seen) {
      const first = this.seen.get(v);
      if (first !== undefined) throw new InvalidArgumentError(`${this.path}: ${where}: id ${v} appears twice (first at ${first}); each id may be given once`);
      this.seen.set(v, where);
    }
    if (this.n === this.values.length) {
      const grown = new Float64Array(2 * this.n);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.n++] = v;
  }

  result(): BigInt64Array {
    const out = new BigInt64Array(this.n);
    for (let i = 0; i < this.n; i++) out[i] = BigInt(this.values[i]);
    return out;
  }
}

type ReadAt = (buf: Uint8Array, position: number) => Promise<number>;

async function readNpyIds(path: string, bytes: number, read: ReadAt, ids: IdList): Promise<void> {
  let at = 0;
  const take = async (length: number): Promise<Uint8Array> => {
    const buf = new Uint8Array(length);
    const got = await read(buf, at);
    at += got;
    return buf.subarray(0, got);
  };
  const { descr, shape, dataStart } = await readNpyFields(path, bytes, take);
  const dtype = NPY_ID_DTYPES[descr];
  if (!dtype) throw new InvalidArgumentError(`${path}: dtype ${descr} is not supported for ids; expected int64 (<i8), int32 (<i4) or uint32 (<u4)`);
  if (!(shape.length === 1 || (shape.length === 2 && shape[1] === 1))) {
    throw new InvalidArgumentError(`${path}: shape (${shape.join(', ')}${shape.length === 1 ? ',' : ''}) is not a list of ids; expected (n,) or (n, 1)`);
  }
  const n = shape[0];
  const end = dataStart + n * dtype.bytes;
  if (bytes < end) throw new InvalidArgumentError(`${path}: truncated: ${n} ids of ${descr} need ${end} bytes; the file ends at byte ${bytes}`);
  if (bytes > end) throw new InvalidArgumentError(`${path}: ${bytesAfter(bytes, end, `${n} ids of ${descr} end`)}`);
  // Whole elements per block, each block in a fresh (aligned) buffer.
  const perBlock = Math.max(1, Math.floor(TEXT_BLOCK_BYTES / dtype.bytes));
  for (let i0 = 0; i0 < n; i0 += perBlock) {
    const count = Math.min(perBlock, n - i0);
    const buf = new Uint8Array(count * dtype.bytes);
    const got = await read(buf, dataStart + i0 * dtype.bytes);
    if (got < buf.length) throw new InvalidArgumentError(`${path}: the file changed while it was read (ends before byte ${end}); run again`);
    const values = dtype.values(buf);
    for (let i = 0; i < count; i++) ids.push(values[i], `element ${i0 + i}`);
  }
}

async function readTextIds(bytes: number, read: ReadAt, ids: IdList): Promise<void> {
  const decoder = new TextDecoder();
  const buf = new Uint8Array(Math.min(TEXT_BLOCK_BYTES, Math.max(1, bytes)));
  let rest = '';
  let line = 0;
  const take = (text: string): void => {
    line++;
    const t = text.trim();
    if (t === '') return;
    // Decimal digits only: Number() would also take "0x10", "1e3", " " or "Infinity".
    ids.push(/^\d+$/.test(t) ? Number(t) : NaN, `line ${line}`, JSON.stringify(shown(t)));
  };
  for (let position = 0; ; ) {
    const got = await read(buf, position);
    if (got === 0) break;
    position += got;
    const lines = (rest + decoder.decode(buf.subarray(0, got), { stream: true })).split('\n');
    rest = lines.pop()!;
    for (const l of lines) take(l);
  }
  rest += decoder.decode();
  if (rest !== '') take(rest);
}
