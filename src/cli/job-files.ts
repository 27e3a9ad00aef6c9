/**
 * The files distributed jobs share through the file system (src/cli/distributed.ts, src/cli/shards.ts):
 * result files checked by a SHA-256 at their end, written through a temporary name renamed into
 * place (a job whose file is there with the right checksum need not run again), the folder each
 * run keeps them in, and the row ranges of an input file that a job reads.
 *
 * Run folders: `.NAME.webgpu-knn-KIND-HOST-PID-RAND` beside the output NAME (KIND: tiles, or shards
 * for knn-graph's own shards), one per run, so that two runs writing the same output never share
 * one. The run removes its folder when it ends, however it ends (also on SIGINT / SIGTERM, whose
 * handlers exit the process); a folder left by a SIGKILLed run is removed by the next run writing
 * that output, once its owner's pid is gone from this host (as src/io/temp-files.ts does for
 * temporary files). A job retried within the run finds its finished file in the run's folder.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { writeAtomically } from '../io/stream-writer.js';
import { processAlive } from '../io/temp-files.js';
import { type VectorReader, openVectors } from '../io/vector-reader.js';
import type { VectorSource } from '../vector-source.js';

/** Writes `body` and its SHA-256 to `path`, atomically. */
export function writeCheckedFile(path: string, body: ArrayBufferView): void {
  const bytes = new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  writeAtomically(path, Buffer.concat([bytes, createHash('sha256').update(bytes).digest()]));
}

/** The body of a file from writeCheckedFile (in an ArrayBuffer of its own), or null when it is missing or damaged. */
export function readCheckedFile(path: string): ArrayBuffer | null {
  if (!existsSync(path)) return null;
  const buf = readFileSync(path);
  if (buf.length < 32) return null;
  const body = buf.subarray(0, buf.length - 32);
  if (!createHash('sha256').update(body).digest().equals(buf.subarray(buf.length - 32))) return null;
  return body.buffer.slice(body.byteOffset, body.byteOffset + body.length);
}

/** The rows of block `b` (its first row is `b.start`) that fall in [r0, r1), or null: none do. */
function clip(b: { data: Float32Array; start: number; rows: number }, r0: number, r1: number, d: number): Float32Array | null {
  const lo = Math.max(r0, b.start);
  const hi = Math.min(r1, b.start + b.rows);
  return lo < hi ? b.data.subarray((lo - b.start) * d, (hi - b.start) * d) : null;
}

/** Rows [r0, r1) of `file` as a source (each pass reads the file from its start and stops after r1). */
export function rowRange(file: VectorReader, r0: number, r1: number): VectorSource {
  const d = file.dim;
  return {
    rows: r1 - r0,
    dim: d,
    async *blocks() {
      for await (const b of file.blocks()) {
        const data = clip(b, r0, r1, d);
        if (data) yield { data, rows: data.length / d };
        if (b.start + b.rows >= r1) break;
      }
    },
  };
}

/** Rows [r0, r1) of the vector file at `path` for each range, read in one pass that stops after the last range. */
export async function readRowRanges(path: string, ranges: [number, number][]): Promise<Float32Array[]> {
  const file = await openVectors(path);
  const d = file.dim;
  const outs = ranges.map(([r0, r1]) => new Float32Array((r1 - r0) * d));
  const end = Math.max(...ranges.map(([, r1]) => r1));
  for await (const b of file.blocks()) {
    ranges.forEach(([r0, r1], k) => {
      const data = clip(b, r0, r1, d);
      if (data) outs[k].set(data, (Math.max(r0, b.start) - r0) * d);
    });
    if (b.start + b.rows >= end) break;
  }
  return outs;
}

/** What a run keeps in a run folder. */
export type RunFolderKind = 'tiles' | 'shards';

const liveFolders = new Set<string>();
let hooked = false;

/**
 * A new, empty run folder for output `out` (created here, removed by removeRunFolder or when the
 * process exits); first removes the folders of this output and kind left by runs whose process is
 * gone, saying so on stderr.
 */
export function claimRunFolder(out: string, kind: RunFolderKind): string {
  const prefix = `.${basename(out)}.webgpu-knn-${kind}-`;
  const host = hostname();
  let names: string[] = [];
  try {
    names = readdirSync(dirname(out));
  } catch {
    // the folder is checked (and created) below
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const m = /^(.+)-(\d+)-[0-9a-f]{8}$/.exec(name.slice(prefix.length));
    // Only this host's runs can be checked; a pid reused since counts as alive (the folder stays).
    if (!m || m[1] !== host || Number(m[2]) === process.pid || processAlive(Number(m[2]))) continue;
    rmSync(join(dirname(out), name), { recursive: true, force: true });
    process.stderr.write(`removed ${join(dirname(out), name)}, a ${kind} folder left by an interrupted run\n`);
  }
  const dir = join(dirname(out), `${prefix}${host}-${process.pid}-${randomBytes(4).toString('hex')}`);
  mkdirSync(dir);
  liveFolders.add(dir);
  if (!hooked) {
    hooked = true;
    process.on('exit', () => {
      for (const d of liveFolders) rmSync(d, { recursive: true, force: true });
    });
  }
  return dir;
}

/** Removes a run folder and everything in it. */
export function removeRunFolder(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  liveFolders.delete(dir);
}
