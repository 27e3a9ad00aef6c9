/**
 * The index file format (little-endian):
 *   bytes 0-7    magic "WGPUKNN" + 0
 *   u32 x 8      format version (1), index type (1 Flat, 2 IVF-Flat), metric (0 l2, 1 ip, 2 cosine),
 *                dim, ntotal, nlist (0 for Flat), nprobe, reserved (0)
 *   arrays       Flat: xb f32[ntotal * dim]
 *                IVF:  centroids f32[nlist * dim], offsets u32[nlist + 1], ids u32[ntotal],
 *                      xb f32[ntotal * dim] (vectors grouped by list, as the lists hold them)
 *   32 bytes     SHA-256 of everything before it
 * Vectors are stored as the index holds them (normalised for cosine: each row has unit norm, or is
 * zero for a zero vector). Files are written to a temporary name and renamed, so a crash never
 * leaves a half-written index.
 *
 * Reading checks every field, not only the checksum (a file can be rewritten with a valid one):
 * the header (type, metric, 1 <= dim <= 65536; Flat: nlist = nprobe = 0; IVF: nlist >= 1 and
 * 1 <= nprobe <= nlist; reserved = 0), the size, offsets[0] = 0, non-decreasing offsets,
 * offsets[nlist] = ntotal, ids a permutation of 0 .. ntotal - 1, all floats finite, and for cosine
 * unit-norm (or zero) rows.
 */
import { createHash } from 'node:crypto';
import { closeSync, openSync, readSync } from 'node:fs';
import type { Metric } from '../types.js';
import { InvalidArgumentError } from '../types.js';
import { fileError, readFileOrFail } from './file-error.js';
import { AtomicFile, commitOutputs } from './stream-writer.js';

export const INDEX_MAGIC = 'WGPUKNN\0';
export const INDEX_FORMAT_VERSION = 1;
const HEADER_BYTES = 8 + 8 * 4;
const METRIC_CODES: Metric[] = ['l2', 'ip', 'cosine'];
const MAX_DIM = 65536;
/** How far a stored cosine row's norm may be from 1 (float32 rounding of a normalised row). */
const UNIT_NORM_TOLERANCE = 1e-3;
/** Bytes hashed and written at a time, so that saving needs no second copy of the index. */
const WRITE_CHUNK = 1 << 24;

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
  const head = new Uint8Array(HEADER_BYTES);
  const view = new DataView(head.buffer);
  head.set(new TextEncoder().encode(INDEX_MAGIC), 0);
  const fields = [INDEX_FORMAT_VERSION, header.type === 'Flat' ? 1 : 2, METRIC_CODES.indexOf(header.metric), header.dim, header.ntotal, header.nlist, header.nprobe, 0];
  fields.forEach((v, i) => view.setUint32(8 + 4 * i, v, true));
  const hash = createHash('sha256');
  const file = new AtomicFile(path);
  const put = (bytes: Uint8Array): void => {
    hash.update(bytes);
    file.write(bytes);
  };
  put(head);
  for (const a of arrays) {
    const bytes = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    for (let o = 0; o < bytes.byteLength; o += WRITE_CHUNK) put(bytes.subarray(o, o + WRITE_CHUNK));
  }
  file.write(hash.digest());
  commitOutputs([file]);
}

/** The header of the index file at `path` (checked as `readIndexFile` checks it), reading only its first bytes. */
export function readIndexHeader(path: string): IndexFileHeader {
  const head = new Uint8Array(HEADER_BYTES);
  let got = 0;
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    throw fileError(path, 'cannot read', err);
  }
  try {
    got = readSync(fd, head, 0, HEADER_BYTES, 0);
  } catch (err) {
    throw fileError(path, 'cannot read', err);
  } finally {
    closeSync(fd);
  }
  return parseHeader(path, head.subarray(0, got));
}

function parseHeader(path: string, buf: Uint8Array): IndexFileHeader {
  if (buf.byteLength < HEADER_BYTES || new TextDecoder().decode(buf.subarray(0, 8)) !== INDEX_MAGIC) {
    throw new InvalidArgumentError(`${path}: not a webgpu-knn index file (no "WGPUKNN" magic at byte 0)`);
  }
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const [version, type, metricCode, dim, ntotal, nlist, nprobe, reserved] = Array.from({ length: 8 }, (_, i) => view.getUint32(8 + 4 * i, true));
  const bad = (field: string, value: number, expected: string): InvalidArgumentError =>
    new InvalidArgumentError(`${path}: bad header: ${field} is ${value}; expected ${expected}`);
  if (version !== INDEX_FORMAT_VERSION) {
    throw new InvalidArgumentError(`${path}: index format version ${version}; this build reads version ${INDEX_FORMAT_VERSION}`);
  }
  if (type !== 1 && type !== 2) throw bad('type', type, '1 (Flat) or 2 (IVF)');
  if (metricCode > 2) throw bad('metric', metricCode, '0 (l2), 1 (ip) or 2 (cosine)');
  if (dim < 1 || dim > MAX_DIM) throw bad('dim', dim, `an integer in [1, ${MAX_DIM}]`);
  if (type === 1 && nlist !== 0) throw bad('nlist', nlist, '0 for a Flat index');
  if (type === 1 && nprobe !== 0) throw bad('nprobe', nprobe, '0 for a Flat index');
  if (type === 2 && nlist < 1) throw bad('nlist', nlist, 'an integer >= 1 for an IVF index');
  if (type === 2 && (nprobe < 1 || nprobe > nlist)) throw bad('nprobe', nprobe, `an integer in [1, ${nlist}] (nlist)`);
  if (reserved !== 0) throw bad('reserved', reserved, '0');
  return { type: type === 1 ? 'Flat' : 'IVF', metric: METRIC_CODES[metricCode], dim, ntotal, nlist, nprobe };
}

export function readIndexFile(path: string): IndexFileContents {
  const buf = readFileOrFail(path);
  const header = parseHeader(path, buf);
  const { type, dim, ntotal, nlist } = header;
  const sizes = type === 'Flat' ? [ntotal * dim] : [nlist * dim, nlist + 1, ntotal, ntotal * dim];
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
    const copy = new Uint8Array(buf.subarray(o, o + 4 * s)).buffer; // aligned copy
    const isU32 = type === 'IVF' && (i === 1 || i === 2);
    arrays.push(isU32 ? new Uint32Array(copy) : new Float32Array(copy));
    o += 4 * s;
  });
  if (type === 'Flat') {
    checkVectorsField(path, 'xb', arrays[0] as Float32Array, dim, header.metric === 'cosine');
  } else {
    checkVectorsField(path, 'centroids', arrays[0] as Float32Array, dim, false);
    checkLists(path, arrays[1] as Uint32Array, arrays[2] as Uint32Array, ntotal);
    checkVectorsField(path, 'xb', arrays[3] as Float32Array, dim, header.metric === 'cosine');
  }
  return { header, arrays };
}

/** All values finite; for cosine, each row of unit norm (or zero: a zero vector stays zero). */
function checkVectorsField(path: string, field: string, x: Float32Array, dim: number, unit: boolean): void {
  for (let r = 0; r < x.length / dim; r++) {
    let s = 0;
    for (let j = 0; j < dim; j++) {
      const v = x[r * dim + j];
      if (!Number.isFinite(v)) throw new InvalidArgumentError(`${path}: ${field} row ${r} column ${j} is ${v}; expected a finite value`);
      s += v * v;
    }
    if (unit && s !== 0 && Math.abs(Math.sqrt(s) - 1) > UNIT_NORM_TOLERANCE) {
      throw new InvalidArgumentError(`${path}: ${field} row ${r} has norm ${Math.sqrt(s)}; a cosine index stores unit-norm (or zero) rows`);
    }
  }
}

/** offsets: 0 first, non-decreasing, ntotal last; ids: each of 0 .. ntotal - 1 exactly once. */
function checkLists(path: string, offsets: Uint32Array, ids: Uint32Array, ntotal: number): void {
  const nlist = offsets.length - 1;
  if (offsets[0] !== 0) throw new InvalidArgumentError(`${path}: offsets[0] is ${offsets[0]}; expected 0`);
  for (let l = 0; l < nlist; l++) {
    if (offsets[l + 1] < offsets[l]) {
      throw new InvalidArgumentError(`${path}: offsets[${l + 1}] = ${offsets[l + 1]} is less than offsets[${l}] = ${offsets[l]}; offsets must be non-decreasing`);
    }
  }
  if (offsets[nlist] !== ntotal) throw new InvalidArgumentError(`${path}: offsets[${nlist}] (nlist) is ${offsets[nlist]}; expected ntotal = ${ntotal}`);
  const seen = new Uint8Array(ntotal);
  for (let p = 0; p < ids.length; p++) {
    const id = ids[p];
    if (id >= ntotal) throw new InvalidArgumentError(`${path}: ids[${p}] is ${id}; expected an id in [0, ${ntotal - 1}] (ntotal ${ntotal})`);
    if (seen[id]) throw new InvalidArgumentError(`${path}: ids[${p}]: id ${id} appears twice; each id must appear exactly once`);
    seen[id] = 1;
  }
}
