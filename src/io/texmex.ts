/**
 * Readers for the TEXMEX vector formats (little-endian): `.fvecs` (per vector an int32 dim, then dim
 * float32), `.ivecs` (the same with int32 values), `.bvecs` (the same with uint8 values).
 * Malformed files are rejected with the byte offset of the problem.
 */
import { InvalidArgumentError } from '../types.js';
import { readFileOrFail } from './file-error.js';

export interface Vectors<T extends Float32Array | Int32Array> {
  data: T;
  n: number;
  d: number;
}

function parse(path: string, elemBytes: number): { view: DataView; n: number; d: number } {
  const buf = readFileOrFail(path);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  if (buf.byteLength === 0) return { view, n: 0, d: 0 };
  if (buf.byteLength < 4) throw new InvalidArgumentError(`${path}: truncated at byte 0: expected a 4-byte dim`);
  const d = view.getInt32(0, true);
  if (d < 1 || d > 1 << 20) throw new InvalidArgumentError(`${path}: bad dim ${d} at byte 0; expected an integer in [1, 1048576]`);
  const row = 4 + d * elemBytes;
  if (buf.byteLength % row !== 0) {
    const n = Math.floor(buf.byteLength / row);
    throw new InvalidArgumentError(
      `${path}: truncated: ${buf.byteLength} bytes is not a whole number of ${row}-byte rows (dim ${d}); the incomplete last row starts at byte ${n * row}`,
    );
  }
  const n = buf.byteLength / row;
  for (let i = 0; i < n; i++) {
    const di = view.getInt32(i * row, true);
    if (di !== d) throw new InvalidArgumentError(`${path}: row ${i} at byte ${i * row} has dim ${di}; expected ${d}`);
  }
  return { view, n, d };
}

export function readFvecs(path: string): Vectors<Float32Array> {
  const { view, n, d } = parse(path, 4);
  const data = new Float32Array(n * d);
  for (let i = 0; i < n; i++) for (let j = 0; j < d; j++) data[i * d + j] = view.getFloat32(i * (4 + 4 * d) + 4 + 4 * j, true);
  return { data, n, d };
}

export function readIvecs(path: string): Vectors<Int32Array> {
  const { view, n, d } = parse(path, 4);
  const data = new Int32Array(n * d);
  for (let i = 0; i < n; i++) for (let j = 0; j < d; j++) data[i * d + j] = view.getInt32(i * (4 + 4 * d) + 4 + 4 * j, true);
  return { data, n, d };
}

export function readBvecs(path: string): Vectors<Float32Array> {
  const { view, n, d } = parse(path, 1);
  const data = new Float32Array(n * d);
  for (let i = 0; i < n; i++) for (let j = 0; j < d; j++) data[i * d + j] = view.getUint8(i * (4 + d) + 4 + j);
  return { data, n, d };
}
