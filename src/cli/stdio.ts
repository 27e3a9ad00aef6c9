/**
 * `-` as a path: stdin for an input of vectors, stdout for a result file (useStdio).
 *
 * The readers need a file's row count before its first row (and an IVF build or a kNN graph passes
 * over its input twice), and a command's outputs appear whole or not at all; so both streams go
 * through a private folder under the temporary directory ($TMPDIR, else /tmp), removed when the
 * process exits (signals included):
 *   - stdin is read to its end into `stdin.FORMAT` there (--stdin-format names the format) before
 *     the input is opened; the command then reads that file like any other;
 *   - an output given as `-` is written as `stdout.FORMAT` there (--stdout-format), through the
 *     usual temporary file and rename, and copied to stdout once the command has succeeded
 *     (sendStdout, from main.ts): after a failure stdout gets nothing.
 * Messages name those files `stdin` and `stdout` (shownPaths), and --json's summary `-` (asGiven).
 * Only one input can be stdin and one output stdout; files that are read by seeking or loaded
 * whole, written in place under a lock, or handed to workers, refuse `-`, naming the flag.
 */
import { once } from 'node:events';
import { createReadStream, createWriteStream, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { FileError, UsageError } from '../errors.js';

/** What --stdin-format takes: the vector formats that can arrive as a stream. */
export const STDIN_FORMATS = ['fvecs', 'bvecs', 'ivecs', 'npy', 'jsonl'];

/** The flags of a command as parseFlags returns them (src/cli/flags.ts's Values). */
type Flags = Record<string, string | boolean | undefined>;

export interface StdioSpec {
  /** Flags naming a vector input that may be `-` (stdin). */
  inputs?: string[];
  /** Flags naming an output that may be `-` (stdout), each with the formats it writes ('csv', ...). */
  outputs?: Record<string, string[]>;
  /** Flags naming a file that may not be `-`, each with why (a clause: "an index file is read by seeking"). */
  refused?: Record<string, string>;
}

/** Why an index file or manifest refuses `-`. */
export const INDEX_FILE = 'an index file is read by seeking (a manifest by its shards\' paths)';
/** Why an index file written by a command refuses `-`. */
export const INDEX_OUT = 'an index file is written under a lock and renamed into place';
/** Why an id file refuses `-`. */
export const ID_FILE = 'an id file is read by its path (stdin is for a vector input only)';

/** `flags` refused with --distributed (the workers open the files by path), as StdioSpec's `refused`. */
export function onWorkers(...flags: string[]): Record<string, string> {
  return Object.fromEntries(flags.map((f) => [f, 'with --distributed, workers on other hosts open the files by path']));
}

let folder: string | null = null;
/** The private files standing for stdin and stdout, as the user's flags now hold them. */
let stdinFile: string | null = null;
let stdoutFile: string | null = null;

function spoolFolder(): string {
  if (folder === null) {
    const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-stdio-'));
    folder = dir;
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return folder;
}

const given = (v: Flags, flag: string): boolean => v[flag] === '-';

/** The one flag of `flags` given as `-`, or null; a usage error if several are (`stream`: stdin or stdout). */
function theOne(v: Flags, flags: string[], stream: string): string | null {
  const dashes = flags.filter((f) => given(v, f));
  if (dashes.length > 1) throw new UsageError(`${dashes.map((f) => `--${f} -`).join(' and ')}: ${stream} is one stream; give at most one of them as -`);
  return dashes[0] ?? null;
}

/** --stdin-format / --stdout-format (`name`), required where `flag` is `-` and refused where none is. */
function formatOf(v: Flags, name: string, flag: string | null, stream: string, formats: string[]): string | null {
  const format = v[name];
  if (flag === null) {
    if (format !== undefined) throw new UsageError(`--${name} applies when a file flag is - (${stream}); none is`);
    return null;
  }
  if (typeof format !== 'string') throw new UsageError(`--${flag} - ${stream === 'stdin' ? 'reads stdin' : 'writes stdout'}: give its format with --${name} ${formats.join('|')}`);
  if (!formats.includes(format)) throw new UsageError(`--${name} for --${flag} must be ${formats.slice(0, -1).join(', ')} or ${formats.at(-1)}; got ${format}`);
  return format;
}

/**
 * Checks the flags of `v` that may or may not be `-` (see StdioSpec), then puts the private files in
 * their place: stdin read whole into its file (a usage error if stdin is a terminal), the stdout
 * file named (written by the command, sent by sendStdout). `json`: --json was given, which stdout
 * cannot carry besides an output.
 */
export async function useStdio(v: Flags, spec: StdioSpec, json: boolean): Promise<void> {
  for (const [flag, why] of Object.entries(spec.refused ?? {})) {
    if (given(v, flag)) throw new UsageError(`--${flag} -: ${why}; '-' (stdin or stdout) does not apply to it: give a file path`);
  }
  const input = theOne(v, spec.inputs ?? [], 'stdin');
  const outputs = spec.outputs ?? {};
  const output = theOne(v, Object.keys(outputs), 'stdout');
  const inFormat = formatOf(v, 'stdin-format', input, 'stdin', STDIN_FORMATS);
  const outFormat = output === null ? null : formatOf(v, 'stdout-format', output, 'stdout', outputs[output]);
  if (output === null) formatOf(v, 'stdout-format', null, 'stdout', []);
  if (output !== null && json) throw new UsageError(`--json prints its summary on stdout, which --${output} - takes; drop --json, or give --${output} a file path`);
  if (input !== null) {
    if (process.stdin.isTTY) throw new UsageError(`--${input} - reads stdin, which is a terminal: pipe the vectors in (... | webgpu-knn ... --${input} -)`);
    const file = join(spoolFolder(), `stdin.${inFormat}`);
    try {
      await pipeline(process.stdin, createWriteStream(file, { flags: 'wx' }));
    } catch (err) {
      throw new FileError(`stdin (--${input} -): cannot keep it in ${folder} (${(err as Error).message}); set TMPDIR to a folder with room`);
    }
    stdinFile = file;
    v[input] = file;
  }
  if (output !== null) {
    stdoutFile = join(spoolFolder(), `stdout.${outFormat}`);
    v[output] = stdoutFile;
  }
}

/** Copies the output given as `-`, if the command wrote one, to stdout (through `write`: the real stdout's). */
export async function sendStdout(write: (chunk: Uint8Array) => boolean): Promise<void> {
  if (stdoutFile === null || !existsSync(stdoutFile)) return;
  // A reader that closes the pipe early (EPIPE) is an 'error' event: heard here, not a crash.
  let closed: Error | null = null;
  const onError = (err: Error): void => void (closed = err);
  process.stdout.on('error', onError);
  try {
    for await (const chunk of createReadStream(stdoutFile)) {
      if (closed) break;
      if (!write(chunk as Buffer)) await once(process.stdout, 'drain');
    }
  } catch (err) {
    closed ??= err as Error;
  } finally {
    process.stdout.off('error', onError);
  }
  if (closed) throw new FileError(`stdout: cannot write: ${(closed as Error).message} (did the reader close the pipe?)`);
}

/** `text` with the private files named as the user gave them: stdin, stdout. */
export function shownPaths(text: string): string {
  let s = text;
  if (stdinFile !== null) s = s.split(stdinFile).join('stdin');
  if (stdoutFile !== null) s = s.split(stdoutFile).join('stdout');
  return s;
}

/** A path for --json's summary: `-` for the private files, else as given. */
export const asGiven = (path: string | undefined): string | undefined => (path !== undefined && (path === stdinFile || path === stdoutFile) ? '-' : path);
