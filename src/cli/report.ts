/**
 * What a command tells the user, and where: the tool-wide --quiet (-q) and --json, which main.ts
 * takes from any position of the command line before a command parses its own flags.
 *
 * --quiet: nothing the command writes to stderr reaches it (progress, notes, "wrote ..." lines;
 * also what a library writes there through process.stderr); main.ts's error message and the
 * security warnings (printWarning) still do, and the exit codes are unchanged. Messages a native driver prints on its own (Mesa, Dawn) are
 * outside the process's streams and cannot be held back.
 *
 * --json: stdout is one JSON object: on success the command's summary (`summary` below), on failure
 * {"error": MESSAGE, "exitCode": CODE} (the message is on stderr too). What a command would print on
 * stdout meanwhile (info's and the demo's lines) goes to stderr instead.
 *
 * Everything the tool writes to stderr passes `shownPaths` (src/cli/stdio.ts): the private
 * temporary files behind `-` are named as the user gave them (stdin, stdout).
 */
import { shownPaths } from './stdio.js';

/** A command's summary for --json: plain JSON values. */
export type Summary = Record<string, unknown>;

type Write = typeof process.stdout.write;

const realStdout: Write = process.stdout.write.bind(process.stdout);
const realStderr: Write = process.stderr.write.bind(process.stderr);

let mode = { quiet: false, json: false };

/** A write that goes nowhere (calling back as a stream does). */
const dropped = ((_chunk: unknown, encoding?: unknown, cb?: unknown): boolean => {
  const done = typeof encoding === 'function' ? encoding : cb;
  if (typeof done === 'function') process.nextTick(done as () => void);
  return true;
}) as Write;

/** `write`, with the temporary files behind `-` named as the user gave them. */
const renaming =
  (write: Write): Write =>
  ((chunk: unknown, ...rest: unknown[]) =>
    (write as (c: unknown, ...r: unknown[]) => boolean)(typeof chunk === 'string' ? shownPaths(chunk) : chunk, ...rest)) as Write;

/** The tool-wide flags, taken out of `argv` (a command never sees them). */
export function takeModeFlags(argv: string[]): { argv: string[]; quiet: boolean; json: boolean } {
  const rest: string[] = [];
  let quiet = false;
  let json = false;
  for (const a of argv) {
    if (a === '--quiet' || a === '-q') quiet = true;
    else if (a === '--json') json = true;
    else rest.push(a);
  }
  return { argv: rest, quiet, json };
}

/** Sets the streams for a run with these flags. */
export function setMode(m: { quiet: boolean; json: boolean }): void {
  mode = m;
  process.stderr.write = m.quiet ? dropped : renaming(realStderr);
  process.stdout.write = m.json ? process.stderr.write : realStdout;
}

/** Puts the streams back as they were (before main.ts reports an error). */
export function restoreStreams(): void {
  process.stderr.write = realStderr;
  process.stdout.write = realStdout;
}

let backendUsed: string | undefined;

/** The backend a command created (open.ts's openBackend), for --json's summary. */
export function noteBackend(description: string): void {
  backendUsed = description;
}

/** The backend noted, if any. */
export const backendNoted = (): string | undefined => backendUsed;

/** Whether --json was given: a summary will be printed (what only it needs is gathered then). */
export const jsonWanted = (): boolean => mode.json;

/** A command's --help text, on stdout whatever --json says (a run with --help does nothing else). */
export function printHelp(text: string): void {
  realStdout(`${text}\n`);
}

/** `value` as one line of JSON on the real stdout. */
export function printJson(value: Summary): void {
  realStdout(`${JSON.stringify(value)}\n`);
}

/** An error's line on stderr (--quiet or not), its paths named as given. */
export function printError(line: string): void {
  realStderr(shownPaths(line));
}

/** A security warning's line on stderr: --quiet does not hold it back (a job secret others can read, a refused job). */
export const printWarning = printError;

/** The real stdout's write (for the bytes of an output given as `-`). */
export const stdoutWrite: Write = realStdout;
