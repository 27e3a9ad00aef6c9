/**
 * The one reader of vector files, as blocks of rows.
 *
 * `openVectors(path)` reads only what says how many rows of what dim the file holds (a header and
 * the file size; for gzip'd IDX a decompressing pass that keeps nothing; for JSON Lines a fast pass
 * that counts the non-blank lines), and `blocks()` then
 * passes over the rows in file order, a block of at most `blockRows` rows at a time (16 MiB of
 * float32 by default), so that a corpus far larger than memory streams through with bounded memory.
 * Blocks are read with positioned reads whose offsets are plain numbers (exact up to 2^53), so files
 * over 2 and 4 GiB read like any other; gzip'd IDX is decompressed as a stream. `readVectors` is the
 * whole file in one array, built on the same blocks, for files that fit in memory.
 *
 * Formats, chosen by the file's name:
 *   .fvecs .ivecs .bvecs (TEXMEX: per row an int32 dim, then dim float32 / int32 / uint8 values);
 *   .npy (2-D, C order; float32/64/16, uint8, int8, int32, int64); .jsonl (one JSON object a line with an
 *   `embedding` (or `vector`) array and an optional `id`); IDX (`*-idx3-ubyte`, gzip'd as
 *   `*-idx3-ubyte.gz`: big-endian magic 0x0803, then n, rows, cols; unsigned bytes).
 * Every value becomes a float32. Binary values are read as typed arrays over the file's bytes, which
 * are little-endian: this assumes a little-endian host (x86, ARM as Node runs on them).
 * Malformed input is rejected with the file's path and the row, byte offset or line number; bytes
 * after the data a header declares (.npy, IDX, gzip'd or not) are refused, naming how many.
 *
 * A declared shape is never trusted: by the time `openVectors` resolves, `rows x dim` float32 is
 * bounded by what was read (at most the file's bytes x 4, the decompressed bytes x 4 for gzip, twice
 * the bytes for JSON Lines, whose rows must each be long enough to hold the first row's values), so
 * callers may size buffers from it (an index's reserve, an output's header).
 */
import type { FileHandle } from 'node:fs/promises';
import { extname } from 'node:path';
import { createGunzip } from 'node:zlib';

import { allocationError, bytesText, fileError, openForReading } from './file-error.js';
import { bytesAfter, npyTruncated, readNpyHeader } from './npy.js';
import { DEFAULT_BLOCK_BYTES } from '../common/vector-source.js';
import { InvalidArgumentError, FileError } from '../errors.js';

export { DEFAULT_BLOCK_BYTES };

export const READ_FORMATS = ['.fvecs', '.bvecs', '.ivecs', '.npy', '.jsonl', 'IDX (*-idx3-ubyte[.gz], as Fashion-MNIST ships)'];

export interface VectorBlock {
  /** Rows [start, start + rows) of the file: rows * dim floats, row-major; a fresh array the caller may keep. */
  data: Float32Array;
  start: number;
  rows: number;
  /** JSON Lines: the rows' ids as strings (the `id` field, or the row number when absent); else null. */
  ids: string[] | null;
}

export interface BlockOptions {
  /** Most rows per block (default: as many as fit DEFAULT_BLOCK_BYTES = 16 MiB of float32, at least 1). */
  blockRows?: number;
  /** Called after each block with bytes of the file consumed so far and the file's size (compressed size for .gz). */
  onProgress?: (bytesDone: number, bytesTotal: number) => void;
}

export interface VectorReader {
  readonly path: string;
  /** The format: '.fvecs', '.bvecs', '.ivecs', '.npy', '.jsonl', 'idx' or 'idx.gz'. */
  readonly format: string;
  /** Rows and dim, known once open resolves, for every format. */
  readonly rows: number;
  readonly dim: number;
  /** File size in bytes. */
  readonly bytes: number;
  /**
   * A fresh pass over the rows, in file order, in blocks of at most blockRows rows; each call reads
   * the file again from its first row. Errors in the data reject from the iterator. The file is
   * closed when the iteration ends, throws, or is abandoned (break / return).
   */
  blocks(options?: BlockOptions): AsyncIterableIterator<VectorBlock>;
}

export interface VectorFile {
  data: Float32Array;
  n: number;
  d: number;
  /** Ids from a .jsonl file (as strings), else null: row numbers are the ids. */
  ids: string[] | null;
}

/** Opens `path` by its name (extension; IDX by the `-idx<N>-ubyte[.gz]` suffix), reading and checking only what says rows and dim. */
export function openVectors(path: string): Promise<VectorReader> {
  return openReader(path);
}

/** Every row of a vector file in one array: for files that fit in memory. */
export async function readVectors(path: string): Promise<VectorFile> {
  const reader = await openReader(path);
  const { data, ids } = await readAll(reader, Float32Array);
  return { data, n: reader.rows, d: reader.dim, ids };
}

/** Every row of an .ivecs file as exact int32 values (ground-truth ids, say). */
export async function readIvecs(path: string): Promise<{ data: Int32Array; n: number; d: number }> {
  if (formatOf(path) !== '.ivecs') throw new InvalidArgumentError(`${path}: expected an .ivecs file`);
  const reader = await openReader(path);
  const { data } = await readAll(reader, Int32Array);
  return { data, n: reader.rows, d: reader.dim };
}

type Values = Float32Array | Int32Array;
type ValuesType<T extends Values> = new (length: number) => T;
type Block<T extends Values> = Omit<VectorBlock, 'data'> & { data: T };

/** A format whose rows all take `rowBytes` bytes, from byte `dataStart` of its (decompressed) data on. */
interface RowLayout {
  gzip: boolean;
  dataStart: number;
  rowBytes: number;
  /** Converts `rows` rows from their bytes `raw` (the first is row `start`) into `out`; throws on a bad row. */
  decode(raw: Uint8Array, start: number, rows: number, out: Values): void;
  /** Why the data is incomplete when it ends at byte `end`. */
  truncated(end: number): string;
}

/** What opening a file finds: its shape, and its row layout (null for JSON Lines). */
interface Shape {
  rows: number;
  dim: number;
  layout: RowLayout | null;
}

class Reader implements VectorReader {
  readonly rows: number;
  readonly dim: number;
  private readonly layout: RowLayout | null;

  constructor(
    readonly path: string,
    readonly format: string,
    readonly bytes: number,
    /** The file's modification time when opened: a pass over a file changed since is refused. */
    private readonly modified: number,
    shape: Shape,
  ) {
    this.rows = shape.rows;
    this.dim = shape.dim;
    this.layout = shape.layout;
  }

  blocks(options?: BlockOptions): AsyncGenerator<VectorBlock> {
    return this.blocksOf(Float32Array, options);
  }

  /** As blocks(), with the values in arrays of `Type` (Int32Array: .ivecs values exactly). */
  blocksOf<T extends Values>(Type: ValuesType<T>, options: BlockOptions = {}): AsyncGenerator<Block<T>> {
    const blockRows = options.blockRows ?? Math.max(1, Math.floor(DEFAULT_BLOCK_BYTES / (4 * Math.max(this.dim, 1))));
    if (!Number.isInteger(blockRows) || blockRows < 1) throw new InvalidArgumentError(`blockRows must be an integer >= 1; got ${options.blockRows}`);
    return this.pass(Type, blockRows, options.onProgress);
  }

  private async *pass<T extends Values>(Type: ValuesType<T>, blockRows: number, onProgress: BlockOptions['onProgress']): AsyncGenerator<Block<T>> {
    const { source, bytes, modified } = await openSource(this.path, this.layout?.gzip ?? false);
    try {
      // Rows must be the rows counted at open (an IVF build reads its input twice, and keeps
      // what the first pass found).
      if (bytes !== this.bytes || modified !== this.modified) {
        throw new InvalidArgumentError(`${this.path}: the file changed since it was opened (${this.bytes} bytes then, ${bytes} now); run again`);
      }
      const progress = (bytesDone: number): void => onProgress?.(Math.min(bytesDone, this.bytes), this.bytes);
      if (this.layout) yield* rowBlocks(this, this.layout, source, Type, blockRows, progress);
      else yield* jsonlBlocks(this, source, Type, blockRows, progress);
    } finally {
      await source.close();
    }
  }
}

async function openReader(path: string): Promise<Reader> {
  const format = formatOf(path);
  const { source, bytes, modified } = await openSource(path, format === 'idx.gz');
  /** The next `length` bytes (fewer at the end of the data). */
  const take = async (length: number): Promise<Uint8Array> => {
    const buf = new Uint8Array(length);
    return buf.subarray(0, await source.read(buf));
  };
  /** Reads the rest of the data, keeping none of it; returns how many bytes there were. */
  const skipRest = async (): Promise<number> => {
    const buf = new Uint8Array(1 << 20);
    let total = 0;
    for (let got = await source.read(buf); got > 0; got = await source.read(buf)) total += got;
    return total;
  };
  try {
    let shape: Shape;
    if (format === '.jsonl') shape = await countJsonl(path, source);
    else if (format === '.npy') shape = await openNpy(path, bytes, take);
    else if (format === 'idx' || format === 'idx.gz') shape = await openIdx(path, format === 'idx.gz', bytes, take, skipRest);
    else shape = await openTexmex(path, format, bytes, take);
    return new Reader(path, format, bytes, modified, shape);
  } finally {
    await source.close();
  }
}

function formatOf(path: string): string {
  const idx = /-idx\d-ubyte(\.gz)?$/.exec(path);
  if (idx) return idx[1] ? 'idx.gz' : 'idx';
  const ext = extname(path).toLowerCase();
  if (!['.fvecs', '.bvecs', '.ivecs', '.npy', '.jsonl'].includes(ext)) {
    throw new InvalidArgumentError(`${path}: unknown vector file type '${ext}'; expected one of ${READ_FORMATS.join(', ')}`);
  }
  return ext;
}

/** Every block of `reader` in one array of `Type`, with the ids of a JSON Lines file. */
async function readAll<T extends Values>(reader: Reader, Type: ValuesType<T>): Promise<{ data: T; ids: string[] | null }> {
  const length = reader.rows * reader.dim;
  let data: T;
  try {
    data = new Type(length);
  } catch (err) {
    throw allocationError(err, `${reader.path}'s ${reader.rows} x ${reader.dim} values in one array (${bytesText(4 * length)})`);
  }
  const ids: string[] | null = reader.format === '.jsonl' ? [] : null;
  for await (const block of reader.blocksOf(Type)) {
    data.set(block.data, block.start * reader.dim);
    if (ids) for (const id of block.ids!) ids.push(id);
  }
  return { data, ids };
}

// ---- Bytes in order: from the file by positioned reads, or gunzipped as a stream --------------

interface ByteSource {
  /** Fills `into` with the next bytes; returns how many (fewer than asked only at the end of the data). */
  read(into: Uint8Array): Promise<number>;
  /** Bytes of the file consumed so far (compressed bytes for gzip). */
  readonly consumed: number;
  /** Closes the file. */
  close(): Promise<void>;
}

/** The most one read call asks for (fs.read takes at most 2 GiB - 1). */
const MAX_READ = 1 << 30;

/** The file at `path` from its first byte (gunzipped when `gzip`), its size and modification time. */
async function openSource(path: string, gzip: boolean): Promise<{ source: ByteSource; bytes: number; modified: number }> {
  const { handle, stat } = await openForReading(path);
  return { source: gzip ? gunzipSource(handle, path) : fileSource(handle, path), bytes: stat.size, modified: stat.mtimeMs };
}

function fileSource(handle: FileHandle, path: string): ByteSource {
  let position = 0;
  return {
    get consumed() {
      return position;
    },
    async read(into) {
      let filled = 0;
      while (filled < into.length) {
        let bytesRead: number;
        try {
          ({ bytesRead } = await handle.read(into, filled, Math.min(into.length - filled, MAX_READ), position));
        } catch (err) {
          throw fileError(path, 'cannot read', err);
        }
        if (bytesRead === 0) break;
        filled += bytesRead;
        position += bytesRead;
      }
      return filled;
    },
    close: () => handle.close(),
  };
}

function gunzipSource(handle: FileHandle, path: string): ByteSource {
  const file = handle.createReadStream({ start: 0, autoClose: false });
  const gunzip = createGunzip();
  file.on('error', (err) => gunzip.destroy(fileError(path, 'cannot read', err)));
  file.pipe(gunzip);
  const chunks: AsyncIterator<Buffer> = gunzip[Symbol.asyncIterator]();
  let pending: Uint8Array = new Uint8Array(0);
  let ended = false;
  return {
    get consumed() {
      return file.bytesRead;
    },
    async read(into) {
      let filled = 0;
      while (filled < into.length) {
        if (pending.length === 0) {
          if (ended) break;
          let next: IteratorResult<Buffer>;
          try {
            next = await chunks.next();
          } catch (err) {
            throw err instanceof FileError ? err : new InvalidArgumentError(`${path}: not a valid gzip file (${(err as Error).message})`);
          }
          if (next.done) {
            ended = true;
            break;
          }
          pending = next.value;
        }
        const n = Math.min(pending.length, into.length - filled);
        into.set(pending.subarray(0, n), filled);
        pending = pending.subarray(n);
        filled += n;
      }
      return filled;
    },
    async close() {
      gunzip.destroy();
      // Destroying the stream closes the handle (autoClose or not) and emits 'close' once the
      // descriptor is closed; handle.close() would then resolve at once, before it is (seen as a
      // file still open after a pass, on a loaded machine).
      if (!file.closed) {
        const closed = new Promise<void>((resolve) => file.once('close', () => resolve()));
        file.destroy();
        await closed;
      }
      await handle.close();
    },
  };
}

// ---- Formats whose rows all have one size --------------------------------------------------

async function* rowBlocks<T extends Values>(
  reader: Reader,
  layout: RowLayout,
  source: ByteSource,
  Type: ValuesType<T>,
  blockRows: number,
  progress: (bytesDone: number) => void,
): AsyncGenerator<Block<T>> {
  const { path, dim } = reader;
  const { dataStart, rowBytes } = layout;
  const header = await source.read(new Uint8Array(dataStart)); // read and checked at open
  if (header < dataStart) throw new InvalidArgumentError(`${path}: ${layout.truncated(header)}`);
  const buffer = new Uint8Array(Math.min(blockRows, reader.rows) * rowBytes); // reused: each block is decoded into a fresh array
  for (let start = 0; start < reader.rows; start += blockRows) {
    const rows = Math.min(blockRows, reader.rows - start);
    const raw = buffer.subarray(0, rows * rowBytes);
    const got = await source.read(raw);
    if (got < raw.length) throw new InvalidArgumentError(`${path}: ${layout.truncated(dataStart + start * rowBytes + got)}`);
    const data = new Type(rows * dim);
    layout.decode(raw, start, rows, data);
    progress(source.consumed);
    yield { data, start, rows, ids: null };
  }
}

/** TEXMEX values of `length` elements from byte `offset` of `raw`. */
const TEXMEX: Record<string, { bytes: number; values(raw: Uint8Array, offset: number, length: number): ArrayLike<number> }> = {
  '.fvecs': { bytes: 4, values: (raw, offset, length) => new Float32Array(raw.buffer, raw.byteOffset + offset, length) },
  '.ivecs': { bytes: 4, values: (raw, offset, length) => new Int32Array(raw.buffer, raw.byteOffset + offset, length) },
  '.bvecs': { bytes: 1, values: (raw, offset, length) => raw.subarray(offset, offset + length) },
};

async function openTexmex(path: string, format: string, bytes: number, take: (length: number) => Promise<Uint8Array>): Promise<Shape> {
  const element = TEXMEX[format];
  let dim = 0;
  if (bytes > 0) {
    const head = await take(4);
    if (head.length < 4) throw new InvalidArgumentError(`${path}: truncated at byte 0: expected a 4-byte dim`);
    dim = new DataView(head.buffer, head.byteOffset, 4).getInt32(0, true);
    if (dim < 1 || dim > 1 << 20) throw new InvalidArgumentError(`${path}: bad dim ${dim} at byte 0; expected an integer in [1, 1048576]`);
  }
  // Rows of 4 + 4 * dim bytes keep the values of .fvecs / .ivecs 4-byte aligned in a block.
  const rowBytes = 4 + dim * element.bytes;
  if (bytes % rowBytes !== 0) {
    throw new InvalidArgumentError(
      `${path}: truncated: ${bytes} bytes is not a whole number of ${rowBytes}-byte rows (dim ${dim}); the incomplete last row starts at byte ${Math.floor(bytes / rowBytes) * rowBytes}`,
    );
  }
  const rows = bytes / rowBytes;
  const decode = (raw: Uint8Array, start: number, count: number, out: Values): void => {
    const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    for (let i = 0; i < count; i++) {
      const o = i * rowBytes;
      const rowDim = view.getInt32(o, true);
      if (rowDim !== dim) throw new InvalidArgumentError(`${path}: row ${start + i} at byte ${(start + i) * rowBytes} has dim ${rowDim}; expected ${dim}`);
      out.set(element.values(raw, o + 4, dim), i * dim);
    }
  };
  const truncated = (end: number): string => `truncated: ${rows} rows of ${rowBytes} bytes need ${rows * rowBytes}; the file ends at byte ${end}`;
  return { rows, dim, layout: { gzip: false, dataStart: 0, rowBytes, decode, truncated } };
}

async function openNpy(path: string, bytes: number, take: (length: number) => Promise<Uint8Array>): Promise<Shape> {
  const npy = await readNpyHeader(path, bytes, take);
  const layout: RowLayout = {
    gzip: false,
    dataStart: npy.dataStart,
    rowBytes: npy.d * npy.dtype.bytes,
    decode: (raw, _start, _rows, out) => out.set(npy.dtype.values(raw)),
    truncated: (end) => npyTruncated(npy, end),
  };
  return { rows: npy.n, dim: npy.d, layout };
}

/**
 * IDX (MNIST's format): big-endian magic 0x0803 (unsigned bytes, 3-D), then n, rows, cols; gzip
 * allowed. `skipRest` reads the rest of the (decompressed) data and says how long it was.
 */
async function openIdx(path: string, gzip: boolean, bytes: number, take: (length: number) => Promise<Uint8Array>, skipRest: () => Promise<number>): Promise<Shape> {
  const head = await take(16);
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
  if (head.length < 16 || view.getUint32(0) !== 0x0803) {
    throw new InvalidArgumentError(`${path}: not an IDX file of unsigned bytes with 3 dimensions (magic 0x00000803 at byte 0)`);
  }
  const rows = view.getUint32(4);
  const dim = view.getUint32(8) * view.getUint32(12);
  if (rows > 0 && dim === 0) {
    throw new InvalidArgumentError(`${path}: ${rows} images of ${view.getUint32(8)} x ${view.getUint32(12)} bytes hold no values; expected rows and columns >= 1`);
  }
  const end = 16 + rows * dim;
  const truncated = (at: number): string => `truncated: ${rows} x ${dim} bytes need ${end}; the data ends at byte ${at}`;
  // Bytes after the declared images are refused, as for .npy: the header's count is the file's.
  const extra = (have: number): string => `${path}: ${bytesAfter(have, end, `${rows} x ${dim} bytes end`, gzip)}`;
  if (!gzip) {
    // The file's size says whether every row is there.
    if (bytes < end) throw new InvalidArgumentError(`${path}: ${truncated(bytes)}`);
    if (bytes > end) throw new InvalidArgumentError(extra(bytes));
  } else {
    // A gzip'd file's size says nothing of what it holds (deflate expands up to about 1000 times,
    // so 1 KB may declare 2e9 rows): its data is counted by decompressing it once, keeping none of
    // it, before anything is sized from the header. A broken stream is found here too.
    const have = await skipRest();
    if (have < rows * dim) {
      throw new InvalidArgumentError(
        `${path}: declares ${rows} x ${dim} (${bytesText(4 * rows * dim)} of float32) but holds ${have} bytes of data once decompressed (${rows * dim} needed)`,
      );
    }
    if (have > rows * dim) throw new InvalidArgumentError(extra(16 + have));
  }
  return { rows, dim, layout: { gzip, dataStart: 16, rowBytes: dim, decode: (raw, _start, _rows, out) => out.set(raw), truncated } };
}

// ---- JSON Lines ------------------------------------------------------------------------------

/** How much of a JSON Lines file is read at a time. */
const LINE_CHUNK_BYTES = 4 * 1024 * 1024;

interface LineBatch {
  /** Lines without their '\n'. */
  lines: Buffer[];
  /** The 1-based number of lines[0], and its byte offset. */
  firstLine: number;
  firstByte: number;
}

/** The lines of the file, a chunk's worth at a time. */
async function* lineBatches(source: ByteSource): AsyncGenerator<LineBatch> {
  let rest = Buffer.alloc(0); // a line begun in the previous chunk
  let firstLine = 1;
  let firstByte = 0;
  for (;;) {
    const buf = Buffer.allocUnsafe(rest.length + LINE_CHUNK_BYTES);
    rest.copy(buf);
    const got = await source.read(buf.subarray(rest.length));
    const data = buf.subarray(0, rest.length + got);
    const lines: Buffer[] = [];
    let from = 0;
    for (let nl = data.indexOf(10); nl !== -1; nl = data.indexOf(10, from)) {
      lines.push(data.subarray(from, nl));
      from = nl + 1;
    }
    if (got === 0 && from < data.length) {
      lines.push(data.subarray(from)); // the last line, without a '\n'
      from = data.length;
    }
    if (lines.length > 0) yield { lines, firstLine, firstByte };
    if (got === 0) return;
    rest = data.subarray(from);
    firstLine += lines.length;
    firstByte += from;
  }
}

/** A line of only spaces, tabs and carriage returns (or nothing) holds no row. */
function isBlank(line: Uint8Array): boolean {
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d && c !== 0x0b && c !== 0x0c) return false;
  }
  return true;
}

/** The row on line `lineNo`: its values (`dim` of them; null: as many as it has, the first row) and id. */
function parseJsonRow(path: string, line: string, lineNo: number, dim: number | null): { values: number[]; id: unknown } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch (err) {
    throw new InvalidArgumentError(`${path}: line ${lineNo} is not valid JSON (${(err as Error).message})`);
  }
  const row = (parsed ?? {}) as { id?: unknown; embedding?: unknown; vector?: unknown };
  const values = row.embedding ?? row.vector;
  if (!Array.isArray(values) || values.some((x) => typeof x !== 'number')) {
    throw new InvalidArgumentError(`${path}: line ${lineNo} has no numeric 'embedding' (or 'vector') array`);
  }
  const want = dim ?? values.length;
  if (values.length !== want || want === 0) throw new InvalidArgumentError(`${path}: line ${lineNo} has ${values.length} values; expected ${want} (as on the first line)`);
  return { values, id: row.id };
}

/**
 * Rows: the non-blank lines, found without parsing JSON; dim: the first row's. A line shorter than
 * `dim` values can be (a digit each, and the commas between them) is refused here, so that rows x
 * dim floats stay within twice the file's bytes however the lines after the first are made.
 */
async function countJsonl(path: string, source: ByteSource): Promise<Shape> {
  let rows = 0;
  let dim = 0;
  for await (const { lines, firstLine } of lineBatches(source)) {
    for (let k = 0; k < lines.length; k++) {
      if (isBlank(lines[k])) continue;
      if (rows === 0) dim = parseJsonRow(path, lines[k].toString('utf8'), firstLine + k, null).values.length;
      else if (lines[k].length < 2 * dim - 1) {
        throw new InvalidArgumentError(
          `${path}: line ${firstLine + k} (${lines[k].length} bytes) is too short to hold ${dim} values (as on the first line); a row of ${dim} values takes at least ${2 * dim - 1} bytes`,
        );
      }
      rows++;
    }
  }
  return { rows, dim, layout: null };
}

async function* jsonlBlocks<T extends Values>(
  reader: Reader,
  source: ByteSource,
  Type: ValuesType<T>,
  blockRows: number,
  progress: (bytesDone: number) => void,
): AsyncGenerator<Block<T>> {
  const { path, dim } = reader;
  if (reader.rows === 0) return;
  const changed = (): InvalidArgumentError => new InvalidArgumentError(`${path}: the file changed while it was read (it had ${reader.rows} rows when opened)`);
  let start = 0; // the first row of the block being filled
  let data = new Type(Math.min(blockRows, reader.rows) * dim);
  let ids: string[] = [];
  let row = 0;
  for await (const { lines, firstLine, firstByte } of lineBatches(source)) {
    let byte = firstByte; // where the next line starts
    for (let k = 0; k < lines.length; k++) {
      byte += lines[k].length + 1;
      if (isBlank(lines[k])) continue;
      if (row === reader.rows) throw changed();
      const { values, id } = parseJsonRow(path, lines[k].toString('utf8'), firstLine + k, dim);
      data.set(values, (row - start) * dim);
      ids.push(id === undefined ? String(row) : String(id));
      row++;
      if (row - start === data.length / dim) {
        progress(byte);
        yield { data, start, rows: row - start, ids };
        start = row;
        data = new Type(Math.min(blockRows, reader.rows - start) * dim);
        ids = [];
      }
    }
  }
  if (row !== reader.rows) throw changed();
}

/** A row's `id` field as JSON.parse gives it (undefined where the line has none), its 1-based line, and for a number the literal as written. */
export interface JsonlId {
  id: unknown;
  line: number;
  /** When `id` is a number: its text in the line (`1e3`, `4.0`, `-0`: JSON.parse's value is a rounding of it). */
  text?: string;
}

/**
 * The `id` field of each row of the JSON Lines file at `path`, in order (see JsonlId). For
 * id-file.ts, which checks the ids; the rows themselves are checked by the pass that reads them. A
 * line in which the bytes `"id"` do not occur (and no escape, which could spell the key otherwise)
 * has no `id` and is not parsed, so that a file without ids costs a byte search; a line that may
 * have one is parsed, and where its id is a number, scanned for the number's text.
 */
export async function* jsonlIds(path: string): AsyncGenerator<JsonlId> {
  const { source } = await openSource(path, false);
  try {
    for await (const { lines, firstLine } of lineBatches(source)) {
      for (let k = 0; k < lines.length; k++) {
        if (isBlank(lines[k])) continue;
        const line = firstLine + k;
        const mayHaveId = lines[k].includes('"id"') || lines[k].includes(0x5c); // 0x5c: a backslash
        if (!mayHaveId) {
          yield { id: undefined, line };
          continue;
        }
        const text = lines[k].toString('utf8');
        const { id } = parseJsonRow(path, text, line, null);
        yield typeof id === 'number' ? { id, line, text: memberText(text, 'id') } : { id, line };
      }
    }
  } finally {
    await source.close();
  }
}

/**
 * The text of the value of the member `key` of the JSON object `json` (valid JSON in which
 * JSON.parse found that member): the last such member, as JSON.parse keeps the last of repeated
 * keys. Only the object's own members count: strings and nested values are skipped whole.
 */
function memberText(json: string, key: string): string | undefined {
  const quoted = JSON.stringify(key);
  let i = json.indexOf(quoted);
  // Without a backslash no string can hold a quote, so each occurrence of `"key"` is a whole string;
  // if there is one, it is the member's key: the value follows its colon (a byte search, where the
  // scan below reads every character of the row's values).
  const once = i !== -1 && json.indexOf(quoted, i + 1) === -1 && !json.includes('\\');
  i = once ? i + quoted.length : 0;
  const space = (): void => {
    for (let c = json.charCodeAt(i); c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d; c = json.charCodeAt(++i));
  };
  const skipString = (): void => {
    // At the opening quote; a backslash escapes the character after it.
    for (i++; json.charCodeAt(i) !== 0x22; i++) if (json.charCodeAt(i) === 0x5c) i++;
    i++;
  };
  const skipValue = (): void => {
    const c = json.charCodeAt(i);
    if (c === 0x22) return skipString();
    if (c === 0x7b || c === 0x5b) {
      // An object or array: to its matching bracket, strings skipped whole.
      for (let depth = 0; ; ) {
        const d = json.charCodeAt(i);
        if (d === 0x22) {
          skipString();
          continue;
        }
        i++;
        if (d === 0x7b || d === 0x5b) depth++;
        else if ((d === 0x7d || d === 0x5d) && --depth === 0) return;
      }
    }
    // A number, true, false or null: up to the next separator.
    for (let d = json.charCodeAt(i); i < json.length && d !== 0x2c && d !== 0x7d && d !== 0x5d && d !== 0x20 && d !== 0x09 && d !== 0x0a && d !== 0x0d; d = json.charCodeAt(++i));
  };
  if (once) {
    space();
    i++; // ':'
    space();
    const v0 = i;
    skipValue();
    return json.slice(v0, i);
  }
  let found: string | undefined;
  space();
  i++; // the object's '{'
  for (space(); json.charCodeAt(i) === 0x22; space()) {
    const k0 = i;
    skipString();
    const name = json.slice(k0, i);
    space();
    i++; // ':'
    space();
    const v0 = i;
    skipValue();
    if (name === JSON.stringify(key) || (name.includes('\\') && JSON.parse(name) === key)) found = json.slice(v0, i);
    space();
    if (json.charCodeAt(i) === 0x2c) i++;
  }
  return found;
}
