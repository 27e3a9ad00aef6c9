/**
 * The commands' flags: parsed as a command's --help text lists them (parseFlags), and their values
 * checked strictly: numbers are plain decimal text (no hex, octal, binary, Infinity, NaN, blanks or
 * trailing junk, all of which Number() would accept or turn into 0), and every error names the
 * flag, the text given and what was expected.
 */
import { extname } from 'node:path';
import { parseArgs } from 'node:util';
import { thresholdTakenAs } from '../common/threshold.js';
import { UsageError } from '../errors.js';
import { printHelp } from './report.js';

const INTEGER = /^[+-]?\d+$/;
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** The text as typed, quoted when blank or padded so that the user can see it. */
function shown(text: string): string {
  return text === '' || text.trim() !== text ? JSON.stringify(text) : text;
}

/** `--name` as an integer in [min, max]; `fallback` when absent (required when there is none). */
export function intFlag(name: string, text: string | undefined, min: number, max: number, fallback?: number): number {
  if (text === undefined) {
    if (fallback === undefined) throw new UsageError(`--${name} is required`);
    return fallback;
  }
  const n = INTEGER.test(text) ? Number(text) : NaN;
  if (!(n >= min && n <= max)) throw new UsageError(`--${name} must be an integer in [${min}, ${max}]; got ${shown(text)}`);
  return n;
}

/** `--name` as a decimal number in [min, max] (`what` describes it: "a cosine"). */
export function numberFlag(name: string, text: string | undefined, min: number, max: number, what = 'a number', fallback?: number): number {
  if (text === undefined) {
    if (fallback === undefined) throw new UsageError(`--${name} is required`);
    return fallback;
  }
  const n = DECIMAL.test(text) ? Number(text) : NaN;
  if (!(Number.isFinite(n) && n >= min && n <= max)) {
    const range = max !== Infinity ? `in [${min}, ${max}]` : min !== -Infinity ? `>= ${min}` : 'that is finite';
    throw new UsageError(`--${name} must be ${what} ${range} (decimal); got ${shown(text)}`);
  }
  return n;
}

/**
 * A threshold or radius: numberFlag, then a note on stderr where the exact tests will not take the
 * decimal written (src/threshold.ts: it has more digits than a double holds, and is taken as the
 * decimal of the nearest double).
 */
export function thresholdFlag(name: string, text: string | undefined, min: number, max: number, what: string): number {
  const t = numberFlag(name, text, min, max, what);
  const taken = text === undefined ? null : thresholdTakenAs(text);
  if (taken !== null) process.stderr.write(`note: --${name} ${text} has more digits than a double holds; it is taken as ${taken}\n`);
  return t;
}

/** The flags of a command, by name, as parseFlags returns them. */
export type Values = Record<string, string | boolean | undefined>;

/**
 * A command's flags, as its --help text `usage` lists them (each line '  --NAME ...' is a flag
 * taking a value; -h, --help prints `usage`, and then null is returned: nothing to run).
 */
export function parseFlags(usage: string, argv: string[]): Values | null {
  const names = [...usage.matchAll(/^ {2}--([a-z-]+)/gm)].map((m) => m[1]).filter((n) => n !== 'help');
  const { values } = parseArgs({
    args: argv,
    options: Object.fromEntries([...names.map((n) => [n, { type: 'string' as const }]), ['help', { type: 'boolean' as const, short: 'h' }]]),
  }) as { values: Values };
  if (values.help) {
    printHelp(usage);
    return null;
  }
  return values;
}

/** `--name`'s value, a usage error when it is absent or empty. */
export function required(v: Values, name: string): string {
  const s = v[name];
  if (typeof s !== 'string' || s === '') throw new UsageError(`--${name} is required`);
  return s;
}

/** `--name`'s value as given, undefined when absent. */
export const text = (v: Values, name: string): string | undefined => v[name] as string | undefined;

/** --backend: auto (default), webgpu or cpu. */
export function backendChoice(v: Values): 'auto' | 'webgpu' | 'cpu' {
  const b = text(v, 'backend') ?? 'auto';
  if (!['auto', 'webgpu', 'cpu'].includes(b)) throw new UsageError(`--backend must be auto, webgpu or cpu; got ${b}`);
  return b as 'auto' | 'webgpu' | 'cpu';
}

/** A usage error unless `path` (given as `what`) ends in one of the `allowed` extensions (case-insensitive). */
export function checkExt(path: string, allowed: string[], what: string): void {
  if (!allowed.includes(extname(path).toLowerCase())) throw new UsageError(`${what} must end in ${allowed.join(', ')}; got ${path}`);
}
