/**
 * Every file the tool writes goes through `AtomicFile`: bytes go to a registered temporary file
 * beside the output (see temp-files.ts), every write is checked (a short write is continued, a
 * failed one such as ENOSPC is an error naming the output), and the file is renamed into place only
 * when complete. `commitOutputs` completes several outputs together: all are written and closed
 * first, then every file they replace is kept aside (a hard link, or a copy, named
 * `.NAME.webgpu-knn-old-HOST-PID-RAND`), then all are renamed; if a rename fails, those already renamed
 * are put back, so a command that fails leaves none of its outputs behind and every old file as it
 * was. Only a process killed in the middle of the renames can leave a `-old-` file (with the old
 * contents) beside its output.
 *
 * `VectorStreamWriter` writes an `n x d` table block by block on top of it, so that memory stays
 * bounded: .ivecs / .fvecs / .npy / .csv / .jsonl (where +/-Infinity is written 1e999 / -1e999). It
 * is the one vector writer (`writeVectors` in vectors.ts writes a whole array through it).
 *
 * Every value is written as it is, or not at all. The writer's kind (npy.ts) says which typed array
 * its blocks are: a block of another type is refused, naming both. .npy keeps the type (float32
 * '<f4', float64 '<f8', int32 '<i4', int64 '<i8'); .fvecs takes float32 only; .ivecs takes int32,
 * and int64 or float64 values while each is an integer int32 holds (else an error naming the value
 * and its row: never a truncated one). Tables of ids (kind `id`: search results' labels, integers
 * in [-1, 2^53 - 1], -1 for padding, in a Float64Array) are checked to be such integers and written
 * exactly: .npy as int64, .csv and .jsonl as decimal integers, .ivecs as int32 while they fit.
 */
import { closeSync, copyFileSync, existsSync, fsyncSync, linkSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { extname } from 'node:path';

import { fileError } from './file-error.js';
import { type NpyWriteKind, WRITE_DESCR, npyHeader } from './npy.js';
import { claimTemp, releaseTemp, sideFile } from './temp-files.js';
import { InvalidArgumentError, FileError } from '../errors.js';

/** One low-level write, as fs.writeSync: returns the number of bytes written (maybe fewer than asked). */
export type WriteFunction = (fd: number, bytes: Uint8Array, offset: number, length: number) => number;

const systemWrite: WriteFunction = (fd, bytes, offset, length) => writeSync(fd, bytes, offset, length);
let writeFunction = systemWrite;

/** Replaces the low-level write (tests simulate a full disk or short writes); no argument restores it. */
export function setWriteFunction(fn: WriteFunction = systemWrite): void {
  writeFunction = fn;
}

/** Something written to a temporary file and renamed into place at the end. */
export interface Output {
  /** The user's path. */
  readonly path: string;
  /** Checks the output is complete, flushes and closes it; throws (having aborted) if not. */
  finish(): void;
  /** Keeps the file now at the path, if any, aside (hard link, else copy), so `undo` can put it back. */
  backUp(): void;
  /** Renames the finished temporary file into place. */
  publish(): void;
  /** After publish: puts the backed-up file back, or removes the output if there was none. */
  undo(): void;
  /** After publish: drops the backup. */
  keep(): void;
  /** Removes the temporary file (and an unused backup); safe to call twice. */
  abort(): void;
}

/**
 * Finishes every output, backs up the files they replace (when there are several), then publishes
 * them all; on any failure puts back what was already published, aborts every one, and throws.
 */
export function commitOutputs(outputs: Output[]): void {
  const published: Output[] = [];
  try {
    for (const o of outputs) o.finish();
    // Every backup before any rename: if one cannot be made, nothing has been replaced yet.
    if (outputs.length > 1) for (const o of outputs) o.backUp();
    for (const o of outputs) {
      o.publish();
      published.push(o);
    }
  } catch (err) {
    const notRestored: string[] = [];
    for (const o of published.reverse()) {
      try {
        o.undo();
      } catch (undoErr) {
        notRestored.push(`${o.path} (${(undoErr as Error).message})`);
      }
    }
    for (const o of outputs) o.abort();
    if (notRestored.length === 0) throw err;
    throw new FileError(`${(err as Error).message}; and these outputs could not be put back as they were: ${notRestored.join('; ')}`);
  }
  for (const o of outputs) o.keep();
}

export class AtomicFile implements Output {
  private readonly tmp: string;
  private fd: number | null;
  /** The replaced file, kept aside by backUp until keep or undo. */
  private backup: string | null = null;
  private existed = false;
  private published = false;

  /** Opens a temporary file for `path` (whose directory must exist). */
  constructor(readonly path: string) {
    this.tmp = claimTemp(path);
    try {
      this.fd = openSync(this.tmp, 'wx');
    } catch (err) {
      releaseTemp(this.tmp);
      throw fileError(path, 'cannot create', err);
    }
  }

  /** Appends `bytes`, looping until all are written; a failure aborts the file and throws a FileError. */
  write(bytes: Uint8Array | string): void {
    const buf = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
    if (this.fd === null) throw new Error(`${this.path}: write after close`);
    try {
      for (let o = 0; o < buf.byteLength; ) {
        const wrote = writeFunction(this.fd, buf, o, buf.byteLength - o);
        if (!(wrote > 0)) throw new FileError(`${this.path}: cannot write: the file system accepted no bytes`);
        o += wrote;
      }
    } catch (err) {
      this.abort();
      throw err instanceof FileError ? err : fileError(this.path, 'cannot write', err);
    }
  }

  finish(): void {
    if (this.fd === null) return;
    try {
      fsyncSync(this.fd);
      closeSync(this.fd);
      this.fd = null;
    } catch (err) {
      this.abort();
      throw fileError(this.path, 'cannot write', err);
    }
  }

  backUp(): void {
    if (!existsSync(this.path)) return;
    const backup = sideFile(this.path, 'old');
    try {
      linkSync(this.path, backup);
    } catch {
      try {
        copyFileSync(this.path, backup); // no hard links here
      } catch (err) {
        rmSync(backup, { force: true });
        throw fileError(this.path, 'cannot keep a copy of the file it replaces', err);
      }
    }
    this.backup = backup;
  }

  publish(): void {
    this.existed = existsSync(this.path);
    try {
      renameSync(this.tmp, this.path);
    } catch (err) {
      throw fileError(this.path, 'cannot replace', err);
    }
    releaseTemp(this.tmp);
    this.published = true;
  }

  undo(): void {
    if (this.backup) {
      renameSync(this.backup, this.path); // atomic: the old file is back
      this.backup = null;
    } else if (!this.existed) {
      rmSync(this.path, { force: true });
    }
  }

  keep(): void {
    if (this.backup) rmSync(this.backup, { force: true });
    this.backup = null;
  }

  abort(): void {
    // A backup is dropped unless this output was published (then undo has used it, or, if undo
    // failed, it holds the only copy of the old file and stays, named in the error).
    if (this.backup && !this.published) this.keep();
    if (this.fd !== null) {
      try {
        closeSync(this.fd);
      } catch {
        // nothing more to do
      }
      this.fd = null;
    }
    rmSync(this.tmp, { force: true });
    releaseTemp(this.tmp);
  }
}

/** Writes `bytes` to `path` through a temporary file renamed into place. */
export function writeAtomically(path: string, bytes: Uint8Array | string): void {
  const file = new AtomicFile(path);
  file.write(bytes);
  commitOutputs([file]);
}

export const WRITE_FORMATS = ['.fvecs', '.ivecs', '.npy', '.jsonl', '.csv'];

/** The int32 range, what an .ivecs file holds. */
const IVECS_MIN = -0x80000000;
const IVECS_MAX = 0x7fffffff;

/** A block a writer of some kind takes. */
export type VectorBlockArray = Float32Array | Float64Array | Int32Array | BigInt64Array;

/** The typed array each kind's blocks are. */
const KIND_ARRAYS: Record<NpyWriteKind, { name: string; is: (a: VectorBlockArray) => boolean }> = {
  float: { name: 'Float32Array', is: (a) => a instanceof Float32Array },
  float64: { name: 'Float64Array', is: (a) => a instanceof Float64Array },
  int: { name: 'Int32Array', is: (a) => a instanceof Int32Array },
  int64: { name: 'BigInt64Array', is: (a) => a instanceof BigInt64Array },
  id: { name: 'Float64Array of labels', is: (a) => a instanceof Float64Array },
};

/** The kinds each format writes faithfully (.ivecs: the 64-bit kinds value by value, see above). */
const FORMAT_KINDS: Record<string, NpyWriteKind[]> = {
  '.fvecs': ['float'],
  '.ivecs': ['int', 'int64', 'float64', 'id'],
};

export interface VectorStreamWriterOptions {
  /** The name of a .jsonl row's array: 'neighbors' (the default: result tables) or 'embedding' (vectors). */
  jsonlField?: 'neighbors' | 'embedding';
}

export class VectorStreamWriter implements Output {
  private readonly file: AtomicFile;
  private readonly ext: string;
  private readonly jsonlField: string;
  private rows = 0;

  constructor(
    readonly path: string,
    readonly n: number,
    readonly d: number,
    /** `float`: Float32Array; `int`: Int32Array; `id`: ids in a Float64Array (see above). */
    readonly kind: NpyWriteKind,
    { jsonlField = 'neighbors' }: VectorStreamWriterOptions = {},
  ) {
    this.jsonlField = jsonlField;
    this.ext = extname(path).toLowerCase();
    if (!WRITE_FORMATS.includes(this.ext)) {
      throw new InvalidArgumentError(`${path}: unknown output type '${this.ext}'; expected one of ${WRITE_FORMATS.join(', ')}`);
    }
    const takes = FORMAT_KINDS[this.ext];
    if (takes && !takes.includes(kind)) {
      const what = this.ext === '.fvecs' ? 'float32 (a Float32Array)' : 'int32 (an Int32Array, or integers of int32 range in a BigInt64Array or Float64Array)';
      throw new InvalidArgumentError(`${path}: a ${KIND_ARRAYS[kind].name} cannot be written to ${this.ext} faithfully: ${this.ext} holds ${what}; write .npy, .csv or .jsonl instead`);
    }
    this.file = new AtomicFile(path);
    // .npy: the header of an n x d array; the data follows block by block.
    if (this.ext === '.npy') this.file.write(npyHeader(kind, n, d));
  }

  /**
   * Appends `rows` rows (`rows * d` values, in the writer's kind of typed array); .jsonl: with `ids`
   * (default: the row numbers). A block of another type, a label that is not an integer in
   * [-1, 2^53 - 1], or an .ivecs value int32 cannot hold throws (and aborts the file).
   */
  write(block: VectorBlockArray, rows: number, ids?: string[]): void {
    const d = this.d;
    const values = block.subarray(0, rows * d);
    this.check(values);
    if (this.ext === '.npy') {
      this.file.write(this.kind === 'id' ? int64Bytes(values as Float64Array) : new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
    } else if (this.ext === '.ivecs' || this.ext === '.fvecs') {
      // Per row the dim, then the values (checked above to convert exactly), by typed-array copies:
      // the bytes are the host's, little-endian, as the format is (the readers assume so too).
      const out = new ArrayBuffer(rows * (d + 1) * 4);
      const dims = new Int32Array(out);
      const target = this.kind === 'float' ? new Float32Array(out) : dims;
      for (let i = 0; i < rows; i++) {
        dims[i * (d + 1)] = d;
        const row = values.subarray(i * d, (i + 1) * d);
        target.set(row instanceof BigInt64Array ? Array.from(row, Number) : row, i * (d + 1) + 1);
      }
      this.file.write(new Uint8Array(out));
    } else {
      const lines: string[] = [];
      for (let i = 0; i < rows; i++) {
        const row: Array<number | bigint> = Array.from(values.subarray(i * d, (i + 1) * d) as ArrayLike<number | bigint>);
        lines.push(this.ext === '.csv' ? row.join(',') : `{"id":${JSON.stringify(ids ? ids[i] : this.rows + i)},"${this.jsonlField}":[${row.map(jsonNumber).join(',')}]}`);
      }
      this.file.write(lines.join('\n') + (rows ? '\n' : ''));
    }
    this.rows += rows;
  }

  /** Throws (and aborts the file) unless `values` are of the writer's kind and each can be written exactly. */
  private check(values: VectorBlockArray): void {
    const { name, is } = KIND_ARRAYS[this.kind];
    if (!is(values)) {
      this.abort();
      throw new InvalidArgumentError(`${this.path}: got a ${values.constructor.name}; this writer writes ${name} values (${WRITE_DESCR[this.kind]} in .npy)`);
    }
    const ivecs = this.ext === '.ivecs' && this.kind !== 'int';
    if (this.kind !== 'id' && !ivecs) return;
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      const notLabel = this.kind === 'id' && !(Number.isSafeInteger(v) && (v as number) >= -1);
      const notInt32 = ivecs && !(Number.isInteger(Number(v)) && v >= IVECS_MIN && v <= IVECS_MAX);
      if (!notLabel && !notInt32) continue;
      this.abort();
      const row = this.rows + Math.floor(i / this.d);
      throw new InvalidArgumentError(
        notLabel
          ? `${this.path}: label ${v} (row ${row}) is not an id; labels are integers in [-1, 2^53 - 1] (-1 for padding)`
          : `${this.path}: ${this.kind === 'id' ? 'id' : 'value'} ${v} (row ${row}) does not fit .ivecs, which holds int32 (integers in [${IVECS_MIN}, ${IVECS_MAX}]); write it to .npy (${WRITE_DESCR[this.kind]}), .csv or .jsonl instead`,
      );
    }
  }

  finish(): void {
    if (this.rows !== this.n) {
      this.abort();
      throw new Error(`${this.path}: ${this.rows} rows written; ${this.n} expected`);
    }
    this.file.finish();
  }

  backUp(): void {
    this.file.backUp();
  }

  publish(): void {
    this.file.publish();
  }

  undo(): void {
    this.file.undo();
  }

  keep(): void {
    this.file.keep();
  }

  /** Finishes and renames this one output into place. */
  close(): void {
    commitOutputs([this]);
  }

  abort(): void {
    this.file.abort();
  }
}

/**
 * `x` as a JSON number. JSON has no infinities; JSON.stringify writes them as null, which loses the
 * sign of the padding distance (+Infinity for l2, -Infinity for ip). The literals 1e999 and -1e999
 * are valid JSON numbers that overflow to +/-Infinity when read (JSON.parse, Python's json), so
 * they are written instead; NaN (never a distance) stays null.
 */
function jsonNumber(x: number | bigint): string {
  if (typeof x === 'bigint') return String(x);
  if (Number.isFinite(x)) return JSON.stringify(x);
  return x > 0 ? '1e999' : x < 0 ? '-1e999' : 'null';
}

/**
 * Integers in [-2^53, 2^53] (held exactly as float64) as little-endian int64 bytes: per value the
 * low 32 bits, then the high 32 (two's complement), with the host's byte order, which is
 * little-endian as the readers assume.
 */
function int64Bytes(values: ArrayLike<number>): Uint8Array {
  const words = new Uint32Array(2 * values.length);
  for (let i = 0; i < values.length; i++) {
    const hi = Math.floor(values[i] / 0x100000000);
    words[2 * i] = values[i] - hi * 0x100000000;
    words[2 * i + 1] = hi; // ToUint32: -1 becomes 0xffffffff
  }
  return new Uint8Array(words.buffer);
}
