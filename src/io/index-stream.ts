/**
 * The index format (described in src/io/index-file.ts) read and written as a run of bytes,
 * wherever the bytes are: a file (src/io/index-file.ts, Node) or memory (src/io/index-bytes.ts:
 * serialize and deserializeIndex, also in a browser). One header codec, one writer
 * (`writeIndexStream`) and one reader (`IndexReader`) for both, so a serialized index is byte for
 * byte the file `save` writes. Nothing here imports Node: the bytes come from a `ByteSource`,
 * go to a `ByteSink`, and are hashed by a `Digest` (node:crypto's for files, src/io/sha256.ts for
 * bytes).
 */
import { type CodecSpec, badCodeRow, codecRowWords, codecTableFloats } from '../codecs/codec.js';
import { PQ_MAX_NBITS, PQ_MIN_NBITS } from '../device.js';
import { CAGRA_MAX_DEGREE } from '../kernel-facts.js';
import { type RefineKind, refineWords } from '../codecs/refine.js';
import { TRANSFORM_KINDS, type TransformSpec, transformTableFloats } from '../codecs/transforms.js';
import type { Metric } from '../types.js';
import { MAX_SQUARED_NORM, MAX_SQUARED_NORM_TEXT } from '../types.js';
import { GRAPH_FILE_TYPE, type IndexFileHeader, type IndexFileType, TRANSFORM_FILE_TYPE, TYPE_CODES } from './index-format.js';
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
/** The transform word's fields (see src/io/index-file.ts): p in bits 0-16, the kind in bits 24-25. */
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

/** The header's codec word (see src/io/index-file.ts). */
function codecWord(h: IndexFileHeader): number {
  if (!h.codec && !h.transform) return 0;
  const c = h.codec;
  const codec = c?.type === 'PQ' ? c.M | (c.nbits << 16) : c?.type === 'LSH' ? (c.rotate ? 1 : 0) | (c.thresholds ? 2 : 0) : 0;
  const transform = h.transform ? transformWord(h.transform) : 0;
  return (codec | transform | (h.refine ? REFINE_BIT : 0) | (h.refine === 'SQfp16' ? REFINE_FP16_BIT : 0)) >>> 0;
}

/** The header in the first bytes of an index (`what` starts every error message), every field checked. */
export function parseHeader(what: string, buf: Uint8Array): IndexFileHeader {
  if (buf.byteLength < 8 || new TextDecoder().decode(buf.subarray(0, 8)) !== INDEX_MAGIC) {
    throw new InvalidArgumentError(`${what}: not a webgpu-knn index file (no "WGPUKNN" magic at byte 0)`);
  }
  if (buf.byteLength < HEADER_BYTES) throw new InvalidArgumentError(`${what}: truncated: ${buf.byteLength} bytes, fewer than the header's ${HEADER_BYTES}`);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const [version, type, metricCode, dim, ntotal, nlist, nprobe, reserved] = Array.from({ length: 8 }, (_, i) => view.getUint32(8 + 4 * i, true));
  const bad = (field: string, value: number, expected: string): InvalidArgumentError =>
    new InvalidArgumentError(`${what}: bad header: ${field} is ${value}; expected ${expected}`);
  if (!READ_VERSIONS.includes(version)) {
    throw new InvalidArgumentError(`${what}: index format version ${version}; this build reads versions ${READ_VERSIONS.join(' and ')}`);
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

/** Where a reader's bytes come from: a file (Node) or an array in memory. */
export interface ByteSource {
  /** What holds the bytes, in messages: "the file", "the bytes". */
  readonly noun: string;
  /** Bytes in all. */
  readonly size: number;
  /** Fills `into` with the bytes from `offset` (throws, naming the source, where they cannot be read or run out). */
  read(into: Uint8Array, offset: number): Promise<void>;
  close(): Promise<void>;
}

/** Where a writer's bytes go, in order: a file written to a temporary name (Node), or an array. */
export interface ByteSink {
  write(bytes: Uint8Array): void;
}

/** A SHA-256 fed piece by piece (node:crypto's Hash, or Sha256 of src/io/sha256.ts). */
export interface Digest {
  update(bytes: Uint8Array): unknown;
  digest(): Uint8Array;
}

/** The 40 bytes of `header` (magic, version INDEX_FORMAT_VERSION, the 8 fields). */
export function headerBytes(header: IndexFileHeader): Uint8Array {
  const head = new Uint8Array(HEADER_BYTES);
  const view = new DataView(head.buffer);
  head.set(new TextEncoder().encode(INDEX_MAGIC), 0);
  const fields = [INDEX_FORMAT_VERSION, TYPE_CODES.indexOf(header.type) + 1, METRIC_CODES.indexOf(header.metric), header.dim, header.ntotal, header.nlist, header.nprobe, codecWord(header)];
  fields.forEach((v, i) => view.setUint32(8 + 4 * i, v, true));
  return head;
}

/**
 * Writes an index (see src/io/index-file.ts) to `sink`: the header, `parts` (the arrays in file
 * order, in as many pieces as the caller likes, so that no piece need hold a whole array), then
 * the checksum (`hash`, fed every byte before it). Checks that the parts add up to what the
 * header describes (`name` names the output in that error); the caller drops the output when it
 * throws.
 */
export async function writeIndexStream(
  name: string,
  header: IndexFileHeader,
  parts: AsyncIterable<Float32Array | Uint32Array | Float64Array | BigInt64Array>,
  sink: ByteSink,
  hash: Digest,
  onProgress?: (bytesDone: number, bytesTotal: number) => void,
): Promise<void> {
  const total = indexFileBytes({ ...header, version: INDEX_FORMAT_VERSION });
  let written = 0;
  const put = (bytes: Uint8Array): void => {
    hash.update(bytes);
    sink.write(bytes);
    written += bytes.byteLength;
  };
  put(headerBytes(header));
  for await (const a of parts) {
    const bytes = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    for (let o = 0; o < bytes.byteLength; o += IO_BLOCK) put(bytes.subarray(o, o + IO_BLOCK));
    onProgress?.(written, total);
  }
  const expected = total - 32;
  if (written !== expected) throw new Error(`${name}: ${written} bytes of index written; the header describes ${expected}`);
  sink.write(hash.digest());
  onProgress?.(total, total);
}

/**
 * An index read front to back from a ByteSource: `open` checks the header and the size; the
 * arrays follow in file order (`floats`, `uints` for whole small arrays, `vectorBlocks` for the
 * vectors), each checked, every byte hashed; `finish` checks the checksum and closes. `name` (a
 * file's path, or what holds the bytes) starts every error message; `onProgress` hears of the
 * bytes read.
 */
export class IndexReader {
  private offset = HEADER_BYTES;

  private constructor(
    readonly name: string,
    private readonly source: ByteSource,
    readonly header: IndexFileHeader,
    readonly bytes: number,
    private readonly hash: Digest,
    private readonly onProgress?: (bytesDone: number, bytesTotal: number) => void,
  ) {}

  /** Reads and checks the header (the size included); `hash` is fresh. Does not close `source` when it throws. */
  static async open(name: string, source: ByteSource, hash: Digest, onProgress?: (bytesDone: number, bytesTotal: number) => void): Promise<IndexReader> {
    const head = new Uint8Array(Math.min(HEADER_BYTES, source.size));
    await source.read(head, 0);
    const header = parseHeader(name, head);
    const expected = indexFileBytes(header);
    if (source.size !== expected) {
      throw new InvalidArgumentError(`${name}: ${source.size < expected ? 'truncated' : 'has trailing bytes'}: the header describes ${expected} bytes; ${source.noun} has ${source.size}`);
    }
    hash.update(head);
    return new IndexReader(name, source, header, source.size, hash, onProgress);
  }

  /** The next `bytes` bytes, hashed (a new array: its buffer is its own). */
  private async next(bytes: number): Promise<Uint8Array> {
    const out = new Uint8Array(bytes);
    await this.source.read(out, this.offset);
    this.offset += bytes;
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
    checkVectors(this.name, field, x, 0, dim, bounded ? 'bounded' : 'finite');
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
      checkVectors(this.name, field, x, r0, dim, unit ? 'unit' : 'bounded');
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
      if (v < -1n || v > BigInt(Number.MAX_SAFE_INTEGER)) throw new InvalidArgumentError(`${this.name}: ${what} is ${v}; expected an integer in [-1, ${Number.MAX_SAFE_INTEGER}]`);
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
      if (bad) throw new InvalidArgumentError(`${this.name}: ${field} row ${r0 + bad.row} ${bad.problem}`);
      yield new Float32Array(bytes.buffer);
    }
  }

  /** Checks the checksum (everything has been read) and closes the source. */
  async finish(): Promise<void> {
    const digest = this.hash.digest();
    const stored = new Uint8Array(32);
    try {
      await this.source.read(stored, this.offset);
    } finally {
      await this.close();
    }
    if (!stored.every((b, i) => b === digest[i])) throw new InvalidArgumentError(`${this.name}: checksum mismatch: ${this.source.noun} is corrupt`);
    this.onProgress?.(this.bytes, this.bytes);
  }

  async close(): Promise<void> {
    await this.source.close().catch(() => undefined);
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
