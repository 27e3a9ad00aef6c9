/**
 * Flag values checked strictly: numbers are plain decimal text (no hex, octal, binary, Infinity,
 * NaN, blanks or trailing junk, all of which Number() would accept or turn into 0), and every error
 * names the flag, the text given and what was expected.
 */
import { thresholdTakenAs } from '../common/threshold.js';

export class UsageError extends Error {
  override name = 'UsageError';
}

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
 * decimal written (src/common/threshold.ts: it has more digits than a double holds, and is taken as the
 * decimal of the nearest double).
 */
export function thresholdFlag(name: string, text: string | undefined, min: number, max: number, what: string): number {
  const t = numberFlag(name, text, min, max, what);
  const taken = text === undefined ? null : thresholdTakenAs(text);
  if (taken !== null) process.stderr.write(`note: --${name} ${text} has more digits than a double holds; it is taken as ${taken}\n`);
  return t;
}
