/**
 * Writes an `n x d` table block by block, so that memory stays bounded: .ivecs / .fvecs / .npy /
 * .csv / .jsonl, into a temporary file renamed into place by `close()` (`abort()` removes it).
 */
import { closeSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { extname } from 'node:path';
import { InvalidArgumentError } from '../types.js';
import { npyHeader } from './npy.js';
import { WRITE_FORMATS } from './vectors.js';

export class VectorStreamWriter {
  private readonly tmp: string;
  private fd: number;
  private readonly ext: string;
  private rows = 0;

  constructor(
    readonly path: string,
    readonly n: number,
    readonly d: number,
    readonly kind: 'int' | 'float',
  ) {
    this.ext = extname(path).toLowerCase();
    if (!WRITE_FORMATS.includes(this.ext)) {
      throw new InvalidArgumentError(`${path}: unknown output type '${this.ext}'; expected one of ${WRITE_FORMATS.join(', ')}`);
    }
    if (this.ext === '.ivecs' && kind === 'float') throw new InvalidArgumentError(`${path}: .ivecs holds integers; use .fvecs, .npy, .csv or .jsonl`);
    if (this.ext === '.fvecs' && kind === 'int') throw new InvalidArgumentError(`${path}: .fvecs holds floats; use .ivecs, .npy, .csv or .jsonl`);
    this.tmp = `${path}.tmp-${process.pid}-${Date.now()}`;
    this.fd = openSync(this.tmp, 'w');
    if (this.ext === '.npy') {
      // The header of an n x d array; the data follows block by block.
      writeSync(this.fd, npyHeader(kind, n, d));
    }
  }

  /** Appends `rows` rows (`rows * d` values). */
  write(block: Int32Array | Float32Array, rows: number): void {
    const d = this.d;
    let bytes: Uint8Array | string;
    if (this.ext === '.npy') {
      bytes = new Uint8Array(block.buffer, block.byteOffset, rows * d * 4);
    } else if (this.ext === '.ivecs' || this.ext === '.fvecs') {
      const view = new DataView(new ArrayBuffer(rows * (4 + 4 * d)));
      for (let i = 0; i < rows; i++) {
        view.setInt32(i * (4 + 4 * d), d, true);
        for (let j = 0; j < d; j++) {
          if (this.kind === 'int') view.setInt32(i * (4 + 4 * d) + 4 + 4 * j, block[i * d + j], true);
          else view.setFloat32(i * (4 + 4 * d) + 4 + 4 * j, block[i * d + j], true);
        }
      }
      bytes = new Uint8Array(view.buffer);
    } else {
      const lines: string[] = [];
      for (let i = 0; i < rows; i++) {
        const row = Array.from(block.subarray(i * d, (i + 1) * d));
        lines.push(this.ext === '.csv' ? row.join(',') : JSON.stringify({ id: this.rows + i, neighbors: row }));
      }
      bytes = lines.join('\n') + (rows ? '\n' : '');
    }
    writeSync(this.fd, typeof bytes === 'string' ? Buffer.from(bytes) : bytes);
    this.rows += rows;
  }

  close(): void {
    closeSync(this.fd);
    if (this.rows !== this.n) {
      rmSync(this.tmp, { force: true });
      throw new Error(`${this.path}: ${this.rows} rows written; ${this.n} expected`);
    }
    renameSync(this.tmp, this.path);
  }

  abort(): void {
    try {
      closeSync(this.fd);
    } catch {
      // already closed
    }
    rmSync(this.tmp, { force: true });
  }
}
