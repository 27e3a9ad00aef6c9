/**
 * The index file format (little-endian):
 *   bytes 0-7    magic "WGPUKNN" + 0
 *   u32 x 8      format version (2), index type, metric (0 l2, 1 ip, 2 cosine), dim, ntotal,
 *                nlist (0 for a Flat type), nprobe (0 for a Flat type), codec word
 *   index types  1 Flat, 2 IVF (IVF-Flat); codes (src/codecs/codec.ts): 3 SQ8, 4 SQ4, 5 SQfp16,
 *                6 PQ (Flat of codes); 7 IVF,SQ8, 8 IVF,SQ4, 9 IVF,SQfp16, 10 IVF,PQ (IVF lists
 *                of codes of residuals to their list's centroid, Faiss's by_residual); 11 LSH
 *                (Flat of binary codes)
 *   codec word   0 for types 1 - 2; otherwise bit 31: refine rows follow the codes (`,RFlat`:
 *                float32; with bit 30 too, `,Refine(SQfp16)`: SQfp16 codes), and for PQ types
 *                bits 0-15 M, bits 16-23 nbits; for LSH bit 0 the rotation (LSHr), bit 1 the
 *                thresholds (LSHt); every other bit 0
 *   arrays       Flat: xb f32[ntotal * dim]
 *                IVF:  centroids f32[nlist * dim], offsets u32[nlist + 1], ids u32[ntotal],
 *                      xb f32[ntotal * dim] (vectors grouped by list, as the lists hold them)
 *                codes, Flat: tables, codes u32[ntotal * rowWords], [refine rows]
 *                codes, IVF:  centroids f32[nlist * dim], tables, offsets u32[nlist + 1],
 *                      ids u32[ntotal], codes u32[ntotal * rowWords] (grouped by list),
 *                      [refine rows]
 *                refine rows, by id: f32[ntotal * dim], or SQfp16 codes u32[ntotal * W16]
 *                      (W16 = sqRowWords('SQfp16', dim))
 *                tables: SQ8, SQ4 f32[2 * dim] (each dimension's vmin, then each's vdiff, as
 *                      Faiss's ScalarQuantizer.trained); SQfp16 none; PQ f32[2^nbits * dim] (the
 *                      M sub-quantizers' 2^nbits centroids of dim / M floats, Faiss's layout);
 *                      LSH f32[dim] thresholds (zeros without LSHt), then with LSHr the
 *                      rotation f32[dim * dim] (row-major, y = R x)
 *                codes: each vector's Faiss code bytes, padded to rowWords words
 *                      (codecRowWords, src/codecs/codec.ts)
 *                then (version 2) the ids section: i64 next sequential id (-1 where the index
 *                holds caller ids), i64 labels[ntotal]: the id of each vector (Flat: by row;
 *                IVF: labels[s] for the row whose u32 id above is s); see src/indexes/ids.ts
 *   transforms   type 12 Transform,Flat: float32 rows of p dimensions, transformed
 *                (src/codecs/transforms.ts). Its codec word is the transform word: bits 0-16 p (1 .. dim),
 *                bits 24-25 the kind (1 Prefix, 2 PCA, 3 PCAR), bits 30-31 refine as above
 *                (bit 31: full-d refine rows follow: float32, with bit 30 SQfp16 codes); every
 *                other bit 0. Arrays: tables (PCA, PCAR: f32[p] eigenvalues, decreasing, then
 *                f32[p * dim] the matrix, rotation folded in; Prefix none), xb f32[ntotal * p]
 *                (cosine: unit norm or zero), [refine rows], ids section. In bytes:
 *                40 + 4 T + 4 ntotal p [+ 4 ntotal dim (RFlat)] + 8 (ntotal + 1) + 32, T = p + p dim
 *                for PCA and PCAR, 0 for Prefix.
 *   graphs       type 13 CAGRA (src/indexes/graph): nlist is the degree (1 .. 256), nprobe 0,
 *                codec word 0. Arrays: xb f32[ntotal * dim] (cosine: unit norm or zero), graph
 *                u32[ntotal * degree] (row r's out-edges, each a row below ntotal or 0xffffffff
 *                for none), ids section. In bytes: 40 + 4 ntotal (dim + degree) + 8 (ntotal + 1) + 32.
 *   32 bytes     SHA-256 of everything before it
 * Version 1 files (types 1 and 2, no ids section: sequential ids 0 .. ntotal - 1) still load.
 * Vectors are stored as the index holds them (normalised for cosine: each row has unit norm, or is
 * zero for a zero vector). Each IVF list holds its ids in increasing order as this library writes
 * them (other orders load, and are then searched by the scan strategy; lists of codes need the
 * order). Files are written and read block by block (bounded memory whatever their size), written to
 * a temporary name and renamed, so a crash never leaves a half-written index.
 *

 * Reading checks every field, not only the checksum (a file can be rewritten with a valid one):
 * the header (type, metric, 1 <= dim <= 65536; Flat types: nlist = nprobe = 0; IVF types: nlist >= 1
 * and 1 <= nprobe <= nlist; the codec word as above, M dividing dim), the size, offsets[0] = 0, non-decreasing offsets,
 * offsets[nlist] = ntotal, ids a permutation of 0 .. ntotal - 1, all floats finite, and for cosine
 * unit-norm (or zero) rows. And the values, against the one bound every vector a query is
 * compared with must keep (the bound `add` holds vectors to: a squared norm of at most
 * MAX_SQUARED_NORM, a quarter of float32's range, so that every distance stays finite): float
 * rows (xb, transformed rows, refine rows) and centroids each within it; a codec's tables such
 * that every code's reconstruction is (for IVF, each list's centroid plus it; Codec.checkBound);
 * codes with no bit set past their code (padding 0) and SQfp16 halves finite (badCodeRow); an
 * LSHr rotation or a PCA matrix with orthonormal rows (checkOrthonormalRows, so that a rotated or
 * projected query keeps its norm). Each refusal is one line naming the file, the section and the
 * field. The vectors are checked block by block as they are read; the checksum,
 * which covers the whole file, is checked at the end (`IndexFileReader.finish`): a loader must
 * drop what it built when that fails.
 */
import { createHash, type Hash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { type CodecSpec, badCodeRow, codecRowWords, codecTableFloats } from '../codecs/codec.js';
import { PQ_MAX_NBITS, PQ_MIN_NBITS } from '../device.js';
import { CAGRA_MAX_DEGREE } from '../kernel-facts.js';
import { type RefineKind, refineWords } from '../codecs/refine.js';
import { TRANSFORM_KINDS, type TransformSpec, transformTableFloats } from '../codecs/transforms.js';
import type { Metric } from '../types.js';
import { MAX_SQUARED_NORM, MAX_SQUARED_NORM_TEXT } from '../types.js';
import { fileError, openForReading } from './file-error.js';
import { GRAPH_FILE_TYPE, type IndexFileHeader, type IndexFileType, TRANSFORM_FILE_TYPE, TYPE_CODES } from './index-format.js';
import { AtomicFile, commitOutputs } from './stream-writer.js';

export { type IndexFileHeader, type IndexFileType, TRANSFORM_FILE_TYPE, checkLists, codecFileType, idSection } from './index-format.js';
import { InvalidArgumentError } from '../errors.js';

export const INDEX_MAGIC = 'WGPUKNN\0';
export const INDEX_FORMAT_VERSION = 2;
/** Versions this build reads. */
const READ_VERSIONS = [1, 2];
const HEADER_BYTES = 8 + 8 * 4;
const METRIC_CODES: Metric[] = ['l2', 'ip', 'cosine'];
const MAX_DIM = 65536;
/** How far a stored cosine row's norm may be from 1 (float32 rounding of a normalised row). */
const UNIT_NORM_TOLERANCE = 1e-3;
/** Bytes hashed and written, or read, at a time. */
const IO_BLOCK = 1 << 24;

// Transforms before Flat: their type code and header word.
/** The transform word's fields (see above): p in bits 0-16, the kind in bits 24-25. */
const TRANSFORM_P_MASK = 0x1ffff;
const TRANSFORM_KIND_SHIFT = 24;
/** Bits of a transform word that are neither p, the kind, nor refine: always 0. */
const TRANSFORM_SPARE_BITS = 0x3cfe0000;

/** The transform word of a header (p, kind; the refine bits are added by codecWord). */
function transformWord(t: TransformSpec): number {
  return t.p | ((TRANSFORM_KINDS.indexOf(t.kind) + 1) << TRANSFORM_KIND_SHIFT);
}

/** The transform a transform word names, checked against `dim`; throws `bad` otherwise. */
function parseTransformWord(word: number, dim: number, bad: (field: string, value: number, expected: string) => InvalidArgumentError): TransformSpec {
  const p = word & TRANSFORM_P_MASK;
  const kind = TRANSFORM_KINDS[((word >>> TRANSFORM_KIND_SHIFT) & 3) - 1];
  if (p < 1 || p > dim || kind === undefined || (word & TRANSFORM_SPARE_BITS) !== 0) {
    throw bad('transform word', word, `p (bits 0-16) in [1, ${dim}] (dim), kind (bits 24-25) 1 Prefix, 2 PCA or 3 PCAR, refine (bits 30-31), every other bit 0`);
  }
  return { kind, p };
}

const REFINE_BIT = 0x80000000;
/** With REFINE_BIT: the refine rows are SQfp16 codes, not float32. */
const REFINE_FP16_BIT = 0x40000000;

/** Whether a file type is of IVF lists (IVF-Flat or codes). */
export function isIvfType(type: IndexFileType): boolean {
  return type.startsWith('IVF');
}

/** Bytes of the whole file the header describes (header, arrays, checksum). */
export function indexFileBytes(h: IndexFileHeader): number {
  const ivf = isIvfType(h.type);
  const lists = ivf ? h.nlist * h.dim + h.nlist + 1 + h.ntotal : h.type === GRAPH_FILE_TYPE ? h.ntotal * h.nlist : 0;
  const refine = h.refine ? h.ntotal * refineWords(h.refine, h.dim) : 0;
  const words = h.codec
    ? lists + codecTableFloats(h.codec, h.dim) + h.ntotal * codecRowWords(h.codec, h.dim) + refine
    : h.transform
      ? transformTableFloats(h.transform, h.dim) + h.ntotal * h.transform.p + refine
      : lists + h.ntotal * h.dim;
  const idBytes = (h.version ?? INDEX_FORMAT_VERSION) >= 2 ? 8 * (h.ntotal + 1) : 0;
  return HEADER_BYTES + 4 * words + idBytes + 32;
}

/** The header's codec word (see above). */
function codecWord(h: IndexFileHeader): number {
  if (!h.codec && !h.transform) return 0;
  const c = h.codec;
  const codec = c?.type === 'PQ' ? c.M | (c.nbits << 16) : c?.type === 'LSH' ? (c.rotate ? 1 : 0) | (c.thresholds ? 2 : 0) : 0;
  const transform = h.transform ? transformWord(h.transform) : 0;
  return (codec | transform | (h.refine ? REFINE_BIT : 0) | (h.refine === 'SQfp16' ? REFINE_FP16_BIT : 0)) >>> 0;
}

/**
 * Writes an index file from `parts`, the arrays in file order (see above) in as many pieces as the
 * caller likes, so that no piece need hold a whole array. Checks that they add up to what the
 * header describes; on any failure nothing is left behind (an old file at `path` stays).
 */
export async function writeIndexFile(
  path: string,
  header: IndexFileHeader,
  parts: AsyncIterable<Float32Array | Uint32Array | Float64Array | BigInt64Array>,
  onProgress?: (bytesDone: number, bytesTotal: number) => void,
): Promise<void> {
  const total = indexFileBytes({ ...header, version: INDEX_FORMAT_VERSION });
  const head = new Uint8Array(HEADER_BYTES);
  const view = new DataView(head.buffer);
  head.set(new TextEncoder().encode(INDEX_MAGIC), 0);
  const fields = [INDEX_FORMAT_VERSION, TYPE_CODES.indexOf(header.type) + 1, METRIC_CODES.indexOf(header.metric), header.dim, header.ntotal, header.nlist, header.nprobe, codecWord(header)];
  fields.forEach((v, i) => view.setUint32(8 + 4 * i, v, true));
  const hash = createHash('sha256');
  const file = new AtomicFile(path);
  let written = 0;
  const put = (bytes: Uint8Array): void => {
    hash.update(bytes);
    file.write(bytes);
    written += bytes.byteLength;
  };
  try {
    put(head);
    for await (const a of parts) {
      const bytes = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
      for (let o = 0; o < bytes.byteLength; o += IO_BLOCK) put(bytes.subarray(o, o + IO_BLOCK));
      onProgress?.(written, total);
    }
    const expected = total - 32;
    if (written !== expected) throw new Error(`${path}: ${written} bytes of index written; the header describes ${expected}`);
    file.write(hash.digest());
    onProgress?.(total, total);
  } catch (err) {
    file.abort();
    throw err;
  }
  commitOutputs([file]);
}

/** The header of the index file at `path` (checked as IndexFileReader checks it), reading only its first bytes. */
export async function readIndexHeader(path: string): Promise<IndexFileHeader> {
  const reader = await IndexFileReader.open(path);
  await reader.close();
  return reader.header;
}

function parseHeader(path: string, buf: Uint8Array): IndexFileHeader {
  if (buf.byteLength < HEADER_BYTES || new TextDecoder().decode(buf.subarray(0, 8)) !== INDEX_MAGIC) {
    throw new InvalidArgumentError(`${path}: not a webgpu-knn index file (no "WGPUKNN" magic at byte 0)`);
  }
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const [version, type, metricCode, dim, ntotal, nlist, nprobe, reserved] = Array.from({ length: 8 }, (_, i) => view.getUint32(8 + 4 * i, true));
  const bad = (field: string, value: number, expected: string): InvalidArgumentError =>
    new InvalidArgumentError(`${path}: bad header: ${field} is ${value}; expected ${expected}`);
  if (!READ_VERSIONS.includes(version)) {
    throw new InvalidArgumentError(`${path}: index format version ${version}; this build reads versions ${READ_VERSIONS.join(' and ')}`);
  }
  if (type < 1 || type > TYPE_CODES.length || (version < 2 && type > 2)) {
    throw bad('type', type, version < 2 ? '1 (Flat) or 2 (IVF)' : `an integer in [1, ${TYPE_CODES.length}] (${TYPE_CODES.map((t, i) => `${i + 1} ${t}`).join(', ')})`);
  }
  const name = TYPE_CODES[type - 1];
  const ivf = isIvfType(name);
  if (metricCode > 2) throw bad('metric', metricCode, '0 (l2), 1 (ip) or 2 (cosine)');
  if (dim < 1 || dim > MAX_DIM) throw bad('dim', dim, `an integer in [1, ${MAX_DIM}]`);
  const graph = name === GRAPH_FILE_TYPE;
  if (graph && (nlist < 1 || nlist > CAGRA_MAX_DEGREE)) throw bad('nlist', nlist, `the degree, an integer in [1, ${CAGRA_MAX_DEGREE}], for a CAGRA type`);
  if (!ivf && !graph && nlist !== 0) throw bad('nlist', nlist, '0 for a Flat type');
  if (!ivf && nprobe !== 0) throw bad('nprobe', nprobe, graph ? '0 for a CAGRA type' : '0 for a Flat type');
  if (ivf && nlist < 1) throw bad('nlist', nlist, 'an integer >= 1 for an IVF type');
  if (ivf && (nprobe < 1 || nprobe > nlist)) throw bad('nprobe', nprobe, `an integer in [1, ${nlist}] (nlist)`);
  const kind = name.replace('IVF,', '');
  let codec: CodecSpec | null = null;
  let transform: TransformSpec | null = null;
  if (name === TRANSFORM_FILE_TYPE) {
    transform = parseTransformWord(reserved, dim, bad);
  } else if (kind === 'PQ') {
    const M = reserved & 0xffff;
    const nbits = (reserved >>> 16) & 0xff;
    if (M < 1 || dim % M !== 0 || nbits < PQ_MIN_NBITS || nbits > PQ_MAX_NBITS || (reserved & 0x3f000000) !== 0) {
      throw bad('codec word', reserved, `M (bits 0-15) dividing dim = ${dim}, nbits (bits 16-23) in [${PQ_MIN_NBITS}, ${PQ_MAX_NBITS}], refine (bits 30-31)`);
    }
    codec = { type: 'PQ', M, nbits };
  } else if (kind === 'LSH') {
    if ((reserved & 0x3ffffffc) !== 0) throw bad('codec word', reserved, 'bit 0 (rotation), bit 1 (thresholds) and refine (bits 30-31) only for LSH');
    codec = { type: 'LSH', rotate: (reserved & 1) !== 0, thresholds: (reserved & 2) !== 0 };
  } else if (kind === 'SQ8' || kind === 'SQ4' || kind === 'SQfp16') {
    if ((reserved & 0x3fffffff) !== 0) throw bad('codec word', reserved, `refine bits (30-31) only for ${name}`);
    codec = { type: 'SQ', kind };
  } else if (reserved !== 0) throw bad('codec word', reserved, `0 for ${name}`);
  const refineBits = reserved >>> 30;
  if (refineBits === 1) throw bad('codec word', reserved, 'bit 30 (SQfp16 refine rows) only with bit 31 (refine)');
  const refine: RefineKind | null = (codec === null && transform === null) || refineBits === 0 ? null : refineBits === 3 ? 'SQfp16' : 'Flat';
  return { version, type: name, metric: METRIC_CODES[metricCode], dim, ntotal, nlist, nprobe, codec, refine, transform };
}

/**
 * An index file read front to back: `open` checks the header and the size; the arrays follow in
 * file order (`floats`, `uints` for whole small arrays, `vectorBlocks` for the vectors), each
 * checked, every byte hashed; `finish` checks the checksum and closes. `onProgress` hears of the
 * bytes read.
 */
export class IndexFileReader {
  private offset = HEADER_BYTES;
  private readonly hash: Hash;

  private constructor(
    readonly path: string,
    private readonly fh: FileHandle,
    readonly header: IndexFileHeader,
    readonly bytes: number,
    head: Uint8Array,
    private readonly onProgress?: (bytesDone: number, bytesTotal: number) => void,
  ) {
    this.hash = createHash('sha256').update(head);
  }

  static async open(path: string, onProgress?: (bytesDone: number, bytesTotal: number) => void): Promise<IndexFileReader> {
    const { handle: fh, stat: st } = await openForReading(path);
    try {
      const head = new Uint8Array(HEADER_BYTES);
      const got = (await fh.read(head, 0, HEADER_BYTES, 0)).bytesRead;
      const header = parseHeader(path, head.subarray(0, got));
      const expected = indexFileBytes(header);
      if (st.size !== expected) {
        throw new InvalidArgumentError(
          `${path}: ${st.size < expected ? 'truncated' : 'has trailing bytes'}: the header describes ${expected} bytes; the file has ${st.size}`,
        );
      }
      return new IndexFileReader(path, fh, header, st.size, head, onProgress);
    } catch (err) {
      await fh.close();
      throw err instanceof InvalidArgumentError ? err : fileError(path, 'cannot read', err);
    }
  }

  /** The next `bytes` bytes of the file, hashed. */
  private async next(bytes: number): Promise<Uint8Array> {
    const out = new Uint8Array(bytes);
    for (let o = 0; o < bytes; ) {
      let got: number;
      try {
        got = (await this.fh.read(out, o, Math.min(bytes - o, 1 << 30), this.offset)).bytesRead; // fs reads take < 2 GiB
      } catch (err) {
        throw fileError(this.path, 'cannot read', err);
      }
      if (got === 0) throw new InvalidArgumentError(`${this.path}: truncated at byte ${this.offset}`);
      o += got;
      this.offset += got;
    }
    this.hash.update(out);
    this.onProgress?.(this.offset, this.bytes);
    return out;
  }

  /**
   * The next `count` float32 values (rows of `dim`, by default the header's), each finite (`field`
   * names them in errors); with `bounded`, vectors queries are compared with (IVF centroids), each
   * row's squared norm at most MAX_SQUARED_NORM.
   */
  async floats(field: string, count: number, dim = this.header.dim, bounded = false): Promise<Float32Array> {
    const x = new Float32Array((await this.next(4 * count)).buffer);
    checkVectors(this.path, field, x, 0, dim, bounded ? 'bounded' : 'finite');
    return x;
  }

  /** The next `count` uint32 values. */
  async uints(count: number): Promise<Uint32Array> {
    return new Uint32Array((await this.next(4 * count)).buffer);
  }

  /**
   * The next `rows` vectors of `dim` floats (by default the header's dim), in blocks of whole
   * rows, each block checked: finite, and unit norm or zero where `unit`, else a squared norm of
   * at most MAX_SQUARED_NORM (the bound `add` puts on vectors).
   */
  async *vectorBlocks(field: string, rows: number, unit: boolean, dim = this.header.dim): AsyncGenerator<Float32Array> {
    const blockRows = Math.max(1, Math.floor(IO_BLOCK / (4 * dim)));
    for (let r0 = 0; r0 < rows; r0 += blockRows) {
      const n = Math.min(blockRows, rows - r0);
      const x = new Float32Array((await this.next(4 * n * dim)).buffer);
      checkVectors(this.path, field, x, r0, dim, unit ? 'unit' : 'bounded');
      yield x;
    }
  }

  /**
   * The ids section (version 2; for version 1, sequential ids 0 .. ntotal - 1): each vector's id
   * and the next sequential id (-1: caller ids). The values are checked by IdMap.restore.
   */
  async ids(): Promise<{ ids: Float64Array; nextId: number }> {
    const n = this.header.ntotal;
    if ((this.header.version ?? INDEX_FORMAT_VERSION) < 2) return { ids: Float64Array.from({ length: n }, (_, i) => i), nextId: n };
    const words = new BigInt64Array((await this.next(8 * (n + 1))).buffer);
    const num = (v: bigint, what: string): number => {
      if (v < -1n || v > BigInt(Number.MAX_SAFE_INTEGER)) throw new InvalidArgumentError(`${this.path}: ${what} is ${v}; expected an integer in [-1, ${Number.MAX_SAFE_INTEGER}]`);
      return Number(v);
    };
    return { nextId: num(words[0], 'the next sequential id'), ids: Float64Array.from(words.subarray(1), (v, s) => num(v, `the id of vector ${s}`)) };
  }

  /**
   * The next `rows` rows of `codec` codes (codecRowWords words each), in blocks of whole rows, each
   * block checked by badCodeRow (padding bits zero, SQfp16 halves finite); `field` names them in
   * errors.
   */
  async *codeBlocks(field: string, rows: number, codec: CodecSpec): AsyncGenerator<Float32Array> {
    const rowWords = codecRowWords(codec, this.header.dim);
    const blockRows = Math.max(1, Math.floor(IO_BLOCK / (4 * rowWords)));
    for (let r0 = 0; r0 < rows; r0 += blockRows) {
      const n = Math.min(blockRows, rows - r0);
      const bytes = await this.next(4 * n * rowWords);
      const bad = badCodeRow(codec, this.header.dim, new Uint32Array(bytes.buffer), n);
      if (bad) throw new InvalidArgumentError(`${this.path}: ${field} row ${r0 + bad.row} ${bad.problem}`);
      yield new Float32Array(bytes.buffer);
    }
  }

  /** Checks the checksum (everything has been read) and closes the file. */
  async finish(): Promise<void> {
    const digest = this.hash.digest();
    const stored = new Uint8Array(32);
    try {
      stored.set((await this.fh.read(new Uint8Array(32), 0, 32, this.offset)).buffer);
    } finally {
      await this.close();
    }
    if (!Buffer.from(stored).equals(digest)) throw new InvalidArgumentError(`${this.path}: checksum mismatch: the file is corrupt`);
    this.onProgress?.(this.bytes, this.bytes);
  }

  async close(): Promise<void> {
    await this.fh.close().catch(() => undefined);
  }
}

/**
 * All values finite; rows `unit`: each of unit norm (or zero: a zero vector stays zero);
 * `bounded`: each of squared norm at most MAX_SQUARED_NORM (a vector queries are compared with,
 * held to the bound `add` holds vectors to). Rows are numbered from `row0` in messages.
 */
function checkVectors(path: string, field: string, x: Float32Array, row0: number, dim: number, rows: 'finite' | 'unit' | 'bounded'): void {
  for (let r = 0; r < x.length / dim; r++) {
    let s = 0;
    for (let j = 0; j < dim; j++) {
      const v = x[r * dim + j];
      if (!Number.isFinite(v)) throw new InvalidArgumentError(`${path}: ${field} row ${row0 + r} column ${j} is ${v}; expected a finite value`);
      s += v * v;
    }
    if (rows === 'unit' && s !== 0 && Math.abs(Math.sqrt(s) - 1) > UNIT_NORM_TOLERANCE) {
      throw new InvalidArgumentError(`${path}: ${field} row ${row0 + r} has norm ${Math.sqrt(s)}; a cosine index stores unit-norm (or zero) rows`);
    }
    if (rows === 'bounded' && s > MAX_SQUARED_NORM) {
      throw new InvalidArgumentError(
        `${path}: ${field} row ${row0 + r} has a squared norm of ${s.toExponential(3)}; ${MAX_SQUARED_NORM_TEXT}`,
      );
    }
  }
}

