/**
 * NumPy .npy files (format 1.0 / 2.0 / 3.0): 2-D, C order; read float32, float64, float16, uint8,
 * int8 (and int32 for ids) into a Float32Array; write float32 or int32. Malformed files are
 * rejected with the byte offset of the problem.
 */
import { InvalidArgumentError } from '../types.js';

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY

const DTYPES: Record<string, { bytes: number; read: (v: DataView, o: number) => number }> = {
  '<f4': { bytes: 4, read: (v, o) => v.getFloat32(o, true) },
  '<f8': { bytes: 8, read: (v, o) => v.getFloat64(o, true) },
  '<f2': { bytes: 2, read: (v, o) => halfToFloat(v.getUint16(o, true)) },
  '|u1': { bytes: 1, read: (v, o) => v.getUint8(o) },
  '|i1': { bytes: 1, read: (v, o) => v.getInt8(o) },
  '<i4': { bytes: 4, read: (v, o) => v.getInt32(o, true) },
};

function halfToFloat(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * 2 ** -14 * (f / 1024);
  if (e === 31) return f ? NaN : s * Infinity;
  return s * 2 ** (e - 15) * (1 + f / 1024);
}

export interface NpyArray {
  data: Float32Array;
  n: number;
  d: number;
  dtype: string;
}

export function parseNpy(buf: Uint8Array, path: string): NpyArray {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  if (buf.byteLength < 10 || MAGIC.some((m, i) => buf[i] !== m)) {
    throw new InvalidArgumentError(`${path}: not a .npy file (bad magic at byte 0)`);
  }
  const major = buf[6];
  if (major < 1 || major > 3) throw new InvalidArgumentError(`${path}: unsupported .npy version ${major}.${buf[7]} at byte 6`);
  const headerLen = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const start = major === 1 ? 10 : 12;
  if (start + headerLen > buf.byteLength) throw new InvalidArgumentError(`${path}: truncated header (needs ${start + headerLen} bytes; file has ${buf.byteLength})`);
  const header = new TextDecoder().decode(buf.subarray(start, start + headerLen));
  const descr = /'descr':\s*'([^']+)'/.exec(header)?.[1];
  const fortran = /'fortran_order':\s*(True|False)/.exec(header)?.[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)?.[1];
  if (!descr || !fortran || shape === undefined) throw new InvalidArgumentError(`${path}: malformed header at byte ${start}: ${header.trim()}`);
  const type = DTYPES[descr];
  if (!type) throw new InvalidArgumentError(`${path}: dtype ${descr} is not supported; expected one of float32, float64, float16, uint8, int8, int32 (little-endian)`);
  if (fortran === 'True') throw new InvalidArgumentError(`${path}: Fortran-order arrays are not supported; save with C order`);
  const dims = shape.split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  if (dims.length !== 2 || dims.some((x) => !Number.isInteger(x) || x < 0)) {
    throw new InvalidArgumentError(`${path}: shape (${shape}) is not 2-D; expected (n, d)`);
  }
  const [n, d] = dims;
  const dataStart = start + headerLen;
  const need = dataStart + n * d * type.bytes;
  if (buf.byteLength < need) {
    throw new InvalidArgumentError(`${path}: truncated: ${n} x ${d} ${descr} needs ${need} bytes; the file ends at byte ${buf.byteLength}`);
  }
  const data = new Float32Array(n * d);
  if (descr === '<f4' && dataStart % 4 === 0 && buf.byteOffset % 4 === 0) {
    data.set(new Float32Array(buf.buffer, buf.byteOffset + dataStart, n * d));
  } else {
    for (let i = 0; i < n * d; i++) data[i] = type.read(view, dataStart + i * type.bytes);
  }
  return { data, n, d, dtype: descr };
}

/** The header of a .npy file of an `n x d` float32 or int32 array (the data follows it). */
export function npyHeader(kind: 'float' | 'int', n: number, d: number): Uint8Array {
  let header = `{'descr': '${kind === 'float' ? '<f4' : '<i4'}', 'fortran_order': False, 'shape': (${n}, ${d}), }`;
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

/** A .npy file of an `n x d` float32 or int32 array. */
export function formatNpy(data: Float32Array | Int32Array, n: number, d: number): Uint8Array {
  const header = npyHeader(data instanceof Float32Array ? 'float' : 'int', n, d);
  const out = new Uint8Array(header.length + n * d * 4);
  out.set(header, 0);
  out.set(new Uint8Array(data.buffer, data.byteOffset, n * d * 4), header.length);
  return out;
}
