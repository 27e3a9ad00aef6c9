/**
 * The index file format (little-endian):
 *   bytes 0-7    magic "WGPUKNN" + 0
 *   u32 x 8      format version (1), index type (1 Flat, 2 IVF-Flat), metric (0 l2, 1 ip, 2 cosine),
 *                dim, ntotal, nlist (0 for Flat), nprobe, reserved (0)
 *   arrays       Flat: xb f32[ntotal * dim]
 *                IVF:  centroids f32[nlist * dim], offsets u32[nlist + 1], ids u32[ntotal],
 *                      xb f32[ntotal * dim] (vectors grouped by list, as the lists hold them)
 *   32 bytes     SHA-256 of everything before it
 * Vectors are stored as the index holds them (normalised for cosine). Files are written to a
 * temporary name and renamed, so a crash never leaves a half-written index.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Metric } from '../types.js';
import { InvalidArgumentError } from '../types.js';
import { writeAtomically } from './vectors.js';

export const INDEX_MAGIC = 'WGPUKNN\0';
export const INDEX_FORMAT_VERSION = 1;
const HEADER_BYTES = 8 + 8 * 4;
const METRIC_CODES: Metric[] = ['l2', 'ip', 'cosine'];

export interface IndexFileHeader {
  type: 'Flat' | 'IVF';
  metric: Metric;
  dim: number;
  ntotal: number;
  nlist: number;
  nprobe: number;
}

export interface IndexFileContents {
  header: IndexFileHeader;
  /** In file order (see above). */
  arrays: (Float32Array | Uint32Array)[];
}

export function writeIndexFile(path: string, header: IndexFileHeader, arrays: (Float32Array | Uint32Array)[]): void {
  const bodyBytes = arrays.reduce((a, x) => a + x.byteLength, 0);
  const out = new Uint8Array(HEADER_BYTES + bodyBytes + 32);
  const view = new DataView(out.buffer);
  out.set(new TextEncoder().encode(INDEX_MAGIC), 0);
  const fields = [INDEX_FORMAT_VERSION, header.type === 'Flat' ? 1 : 2, METRIC_CODES.indexOf(header.metric), header.dim, header.ntotal, header.nlist, header.nprobe, 0];
  fields.forEach((v, i) => view.setUint32(8 + 4 * i, v, true));
  let o = HEADER_BYTES;
  for (const a of arrays) {
    out.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), o);
    o += a.byteLength;
  }
  out.set(createHash('sha256').update(out.subarray(0, o)).digest(), o);
  writeAtomically(path, out);
}

export function readIndexFile(path: string): IndexFileContents {
  const buf = readFileSync(path);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  if (buf.byteLength < HEADER_BYTES || new TextDecoder().decode(buf.subarray(0, 8)) !== INDEX_MAGIC) {
    throw new InvalidArgumentError(`${path}: not a webgpu-knn index file (no "WGPUKNN" magic at byte 0)`);
  }
  const f = Array.from({ length: 8 }, (_, i) => view.getUint32(8 + 4 * i, true));
  const [version, type, metricCode, dim, ntotal, nlist, nprobe] = f;
  if (version !== INDEX_FORMAT_VERSION) {
    throw new InvalidArgumentError(`${path}: index format version ${version}; this build reads version ${INDEX_FORMAT_VERSION}`);
  }
  if ((type !== 1 && type !== 2) || metricCode > 2 || dim < 1) {
    throw new InvalidArgumentError(`${path}: bad header (type ${type}, metric ${metricCode}, dim ${dim})`);
  }
  const sizes = type === 1 ? [ntotal * dim] : [nlist * dim, nlist + 1, ntotal, ntotal * dim];
  const expected = HEADER_BYTES + sizes.reduce((a, s) => a + 4 * s, 0) + 32;
  if (buf.byteLength !== expected) {
    throw new InvalidArgumentError(
      `${path}: ${buf.byteLength < expected ? 'truncated' : 'has trailing bytes'}: the header describes ${expected} bytes; the file has ${buf.byteLength}`,
    );
  }
  const digest = createHash('sha256').update(buf.subarray(0, expected - 32)).digest();
  if (!digest.equals(buf.subarray(expected - 32))) {
    throw new InvalidArgumentError(`${path}: checksum mismatch: the file is corrupt`);
  }
  const arrays: (Float32Array | Uint32Array)[] = [];
  let o = HEADER_BYTES;
  sizes.forEach((s, i) => {
    const bytes = buf.subarray(o, o + 4 * s);
    const copy = new Uint8Array(bytes).buffer; // aligned copy
    const isU32 = type === 2 && (i === 1 || i === 2);
    arrays.push(isU32 ? new Uint32Array(copy) : new Float32Array(copy));
    o += 4 * s;
  });
  return { header: { type: type === 1 ? 'Flat' : 'IVF', metric: METRIC_CODES[metricCode], dim, ntotal, nlist, nprobe }, arrays };
}
