/**
 * NumPy .npy files (format 1.0 / 2.0 / 3.0), C order: the header, read (vectors: 2-D, every dtype
 * the reader converts to float32: float32, float64, float16, uint8, int8, int32, int64; ids: see
 * id-file.ts) and written (float32, float64, int32 or int64: the dtype of the array given, see
 * stream-writer.ts). The data itself is read block by block in
 * vector-reader.ts and written in stream-writer.ts. Malformed headers are rejected with the byte
 * offset of the problem.
 */
import { halfToFloat } from '../common/fp16.js';
import { InvalidArgumentError } from '../errors.js';

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY

/** A dtype the reader converts: its size, and `raw` values (aligned to their size) as numbers, read as little-endian (as the host is). */
export interface NpyDtype {
  bytes: number;
  values(raw: Uint8Array): ArrayLike<number>;
}

const DTYPES: Record<string, NpyDtype> = {
  '<f4': { bytes: 4, values: (raw) => new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4) },
  '<f8': { bytes: 8, values: (raw) => new Float64Array(raw.buffer, raw.byteOffset, raw.byteLength / 8) },
  '<f2': { bytes: 2, values: (raw) => Float32Array.from(new Uint16Array(raw.buffer, raw.byteOffset, raw.byteLength / 2), halfToFloat) },
  '|u1': { bytes: 1, values: (raw) => raw },
  '|i1': { bytes: 1, values: (raw) => new Int8Array(raw.buffer, raw.byteOffset, raw.byteLength) },
  '<i4': { bytes: 4, values: (raw) => new Int32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4) },
  // int64 (what the tool writes ids as): exact up to 2^24 once in float32, like int32.
  '<i8': { bytes: 8, values: (raw) => Float64Array.from(new BigInt64Array(raw.buffer, raw.byteOffset, raw.byteLength / 8), Number) },
};

/** What a .npy header says: an `n x d` array of `descr` values starting at byte `dataStart`. */
export interface NpyLayout {
  descr: string;
  dtype: NpyDtype;
  n: number;
  d: number;
  dataStart: number;
}

/** What any .npy header says: C-order values of type `descr` (not yet checked), of `shape`, from byte `dataStart`. */
export interface NpyHeader {
  descr: string;
  shape: number[];
  dataStart: number;
}

/**
 * Reads and checks the header of the .npy file at `path` (`bytes` long) through `take(length)`,
 * which returns the file's next `length` bytes (fewer at its end): magic, version, length, the
 * fields, C order, a shape of non-negative integers. The dtype and the number of dimensions are
 * for the caller to check.
 */
export async function readNpyFields(path: string, bytes: number, take: (length: number) => Promise<Uint8Array>): Promise<NpyHeader> {
  const head = await take(8);
  if (head.length < 8 || MAGIC.some((m, i) => head[i] !== m)) throw new InvalidArgumentError(`${path}: not a .npy file (bad magic at byte 0)`);
  const major = head[6];
  if (major < 1 || major > 3) throw new InvalidArgumentError(`${path}: unsupported .npy version ${major}.${head[7]} at byte 6`);
  const lengthField = await take(major === 1 ? 2 : 4);
  const start = 8 + (major === 1 ? 2 : 4);
  if (lengthField.length < start - 8) throw new InvalidArgumentError(`${path}: truncated header (needs ${start} bytes; file has ${bytes})`);
  const lengthView = new DataView(lengthField.buffer, lengthField.byteOffset, lengthField.byteLength);
  const headerLen = major === 1 ? lengthView.getUint16(0, true) : lengthView.getUint32(0, true);
  if (start + headerLen > bytes) throw new InvalidArgumentError(`${path}: truncated header (needs ${start + headerLen} bytes; file has ${bytes})`);
  const headerBytes = await take(headerLen);
  if (headerBytes.length < headerLen) throw new InvalidArgumentError(`${path}: truncated header (needs ${start + headerLen} bytes; file has ${bytes})`);
  const header = new TextDecoder().decode(headerBytes);
  const descr = /'descr':\s*'([^']+)'/.exec(header)?.[1];
  const fortran = /'fortran_order':\s*(True|False)/.exec(header)?.[1];
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)?.[1];
  if (!descr || !fortran || shapeText === undefined) throw new InvalidArgumentError(`${path}: malformed header at byte ${start}: ${header.trim()}`);
  if (fortran === 'True') throw new InvalidArgumentError(`${path}: Fortran-order arrays are not supported; save with C order`);
  const shape = shapeText.split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  if (shape.some((x) => !Number.isInteger(x) || x < 0)) throw new InvalidArgumentError(`${path}: shape (${shapeText}) is not a tuple of sizes`);
  return { descr, shape, dataStart: start + headerLen };
}

/**
 * Reads and checks the header of a .npy file of vectors (see readNpyFields): 2-D, of a dtype the
 * reader converts; checks the file holds the data, and nothing after it (bytes the header does not
 * account for mean a file cut or joined wrongly, not rows to ignore).
 */
export async function readNpyHeader(path: string, bytes: number, take: (length: number) => Promise<Uint8Array>): Promise<NpyLayout> {
  const { descr, shape, dataStart } = await readNpyFields(path, bytes, take);
  const dtype = DTYPES[descr];
  if (!dtype) throw new InvalidArgumentError(`${path}: dtype ${descr} is not supported; expected one of float32, float64, float16, uint8, int8, int32, int64 (little-endian)`);
  if (shape.length !== 2) throw new InvalidArgumentError(`${path}: shape (${shape.join(', ')}${shape.length === 1 ? ',' : ''}) is not 2-D; expected (n, d)`);
  const [n, d] = shape;
  if (n > 0 && d === 0) throw new InvalidArgumentError(`${path}: shape (${n}, 0) holds rows of no values; expected (n, d) with d >= 1`);
  const layout = { descr, dtype, n, d, dataStart };
  const end = npyEnd(layout);
  if (bytes < end) throw new InvalidArgumentError(`${path}: ${npyTruncated(layout, bytes)}`);
  if (bytes > end) throw new InvalidArgumentError(`${path}: ${bytesAfter(bytes, end, `${n} x ${d} ${descr} ends`)}`);
  return layout;
}

/** The byte after the last value. */
function npyEnd(l: NpyLayout): number {
  return l.dataStart + l.n * l.d * l.dtype.bytes;
}

/**
 * The message for a file (its data once decompressed, with `decompressed`) of `have` bytes, longer
 * than what its header declares (`what`: "2 x 2 <f4 ends"), which ends at byte `end`. For every
 * reader of a format with a declared size (.npy, IDX, .npy ids).
 */
export function bytesAfter(have: number, end: number, what: string, decompressed = false): string {
  return `${have - end} byte${have - end === 1 ? '' : 's'} after the data${decompressed ? ' once decompressed' : ''}: ${what} at byte ${end}; the ${decompressed ? 'data' : 'file'} has ${have} bytes`;
}

/** The message for a file whose data ends at byte `end`, before the last value. */
export function npyTruncated(l: NpyLayout, end: number): string {
  return `truncated: ${l.n} x ${l.d} ${l.descr} needs ${npyEnd(l)} bytes; the file ends at byte ${end}`;
}

/**
 * What a writer is given, and so what a written .npy holds: `float` a Float32Array ('<f4'),
 * `float64` a Float64Array ('<f8'), `int` an Int32Array ('<i4'), `int64` a BigInt64Array ('<i8'),
 * `id` search labels, integers in a Float64Array, written as int64 ('<i8'; see stream-writer.ts).
 */
export type NpyWriteKind = 'float' | 'float64' | 'int' | 'int64' | 'id';

/** The .npy dtype each kind is written as. */
export const WRITE_DESCR: Record<NpyWriteKind, string> = { float: '<f4', float64: '<f8', int: '<i4', int64: '<i8', id: '<i8' };

/** The header of a .npy file of an `n x d` array of `kind` (the data follows it). */
export function npyHeader(kind: NpyWriteKind, n: number, d: number): Uint8Array {
  let header = `{'descr': '${WRITE_DESCR[kind]}', 'fortran_order': False, 'shape': (${n}, ${d}), }`;
  // Pad so that the data starts on a 64-byte boundary; the header ends with a newline.
  const total = Math.ceil((10 + header.length + 1) / 64) * 64;
  header = header.padEnd(total - 10 - 1, ' ') + '\n';
  const out = new Uint8Array(total);
  out.set(MAGIC, 0);
  out[6] = 1;
  out[7] = 0;
  new DataView(out.buffer).setUint16(8, header.length, true);
  out.set(new TextEncoder().encode(header), 10);
  return out;
}
