/**
 * A small validator for the payloads of worker jobs (src/cli/cluster/job-payloads.ts): a job's
 * data comes from Redis, where anyone who can reach it may have written it, so a worker checks
 * each payload against its kind's schema before anything runs: exact keys (none missing, none extra), types,
 * integer ranges, array lengths, finite numbers, string patterns. A check either returns the value,
 * typed, or throws a SchemaError naming where in the payload it failed ("ri[1]: ...").
 *
 * Written here rather than taken from npm: six job kinds need a few dozen lines, and a worker's
 * trust boundary is better without a dependency of its own.
 */
import { SchemaError } from '../../errors.js';

/** Checks `value` (found at `at` in the payload); returns it typed, or throws a SchemaError. */
export type Check<T> = (value: unknown, at: string) => T;

function fail(at: string, expected: string, value: unknown): never {
  const shown = typeof value === 'string' ? JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}...` : value) : Array.isArray(value) ? `an array of ${value.length}` : value === null ? 'null' : typeof value === 'object' ? 'an object' : String(value);
  throw new SchemaError(`${at || 'the payload'}: expected ${expected}; got ${shown}`);
}

/** An integer in [min, max]. */
export function int(min: number, max: number): Check<number> {
  return (v, at) => (typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max ? v : fail(at, `an integer in [${min}, ${max}]`, v));
}

/** A finite number in [min, max]. */
export function finite(min = -Number.MAX_VALUE, max = Number.MAX_VALUE): Check<number> {
  return (v, at) => (typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max ? v : fail(at, `a finite number in [${min}, ${max}]`, v));
}

export const bool: Check<boolean> = (v, at) => (typeof v === 'boolean' ? v : fail(at, 'true or false', v));

/** A string of at most `maxLength` characters, without NUL, matching `pattern` if given (`what` describes it). */
export function str(maxLength = 4096, pattern?: RegExp, what = 'a string'): Check<string> {
  return (v, at) =>
    typeof v === 'string' && v.length <= maxLength && !v.includes('\0') && (pattern === undefined || pattern.test(v)) ? v : fail(at, `${what} (at most ${maxLength} characters)`, v);
}

/** One of the given strings. */
export function oneOf<T extends string>(...values: T[]): Check<T> {
  return (v, at) => (values.includes(v as T) ? (v as T) : fail(at, `one of ${values.map((s) => JSON.stringify(s)).join(', ')}`, v));
}

export function nullable<T>(check: Check<T>): Check<T | null> {
  return (v, at) => (v === null ? null : check(v, at));
}

/** An array of `minLength` to `maxLength` elements, each passing `check`. */
export function array<T>(check: Check<T>, minLength: number, maxLength: number): Check<T[]> {
  return (v, at) => {
    if (!Array.isArray(v) || v.length < minLength || v.length > maxLength) fail(at, `an array of ${minLength === maxLength ? minLength : `${minLength} to ${maxLength}`} elements`, v);
    return v.map((e, i) => check(e, `${at}[${i}]`));
  };
}

type Checked<S> = { [K in keyof S]: S[K] extends Check<infer T> ? T : never };

/**
 * An object with exactly the keys of `required` (each present) and, optionally, those of
 * `optional` (absent or passing its check); any other key is refused.
 */
export function object<R extends Record<string, Check<unknown>>, O extends Record<string, Check<unknown>> = Record<never, never>>(
  required: R,
  optional?: O,
): Check<Checked<R> & Partial<Checked<O>>> {
  return (v, at) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) fail(at, 'an object', v);
    const o = v as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(o)) {
      if (!Object.hasOwn(required, key) && !(optional && Object.hasOwn(optional, key))) {
        throw new SchemaError(`${at ? `${at}.` : ''}${key}: not a field of this job`);
      }
    }
    for (const [key, check] of Object.entries(required)) {
      if (!Object.hasOwn(o, key)) throw new SchemaError(`${at ? `${at}.` : ''}${key}: missing`);
      out[key] = check(o[key], at ? `${at}.${key}` : key);
    }
    for (const [key, check] of Object.entries(optional ?? {})) {
      if (Object.hasOwn(o, key)) out[key] = check(o[key], at ? `${at}.${key}` : key);
    }
    return out as Checked<R> & Partial<Checked<O>>;
  };
}

/** `check`, then `rule` on the checked value: a message when a relation between fields fails, else null. */
export function refine<T>(check: Check<T>, rule: (value: T) => string | null): Check<T> {
  return (v, at) => {
    const value = check(v, at);
    const broken = rule(value);
    if (broken !== null) throw new SchemaError(`${at ? `${at}: ` : ''}${broken}`);
    return value;
  };
}
