/**
 * The link to Redis that every distributed command and `worker` share: the URL checked before
 * anything starts, Redis reached (or not) within seconds, and the connection watched while a run
 * goes on, so that an unavailable Redis is one line and an exit, never a hang or a stack trace
 * per retry.
 *
 * - URL: `redis://HOST:PORT` or `rediss://HOST:PORT` (TLS), optionally `USER:PASSWORD@` and a
 *   database `/N` (an integer; the probe selects it, so that a database the server does not have
 *   fails at once rather than leaving ioredis on database 0); anything else is a usage error
 *   naming the value. A password not in the URL can come from $WEBGPU_KNN_REDIS_PASSWORD (a
 *   command line is visible to every local user). URLs are printed with the password masked.
 * - Strings that come from Redis (job names, ids, failure reasons) are printed through
 *   `printable`, so that they cannot forge log lines or carry terminal escapes.
 * - ioredis's ready check is off on every connection: it only waits for a Redis still loading its
 *   data (whose LOADING replies BullMQ retries anyway), and where the user may not run INFO it
 *   prints a warning of several lines at every reconnection.
 * - Reaching it: one connection attempt, PROBE_MS at most, before a command queues anything or a
 *   worker starts; a refused connection, an unknown host, a wrong password, a user without the
 *   commands BullMQ needs fail at once (exit 1).
 * - Losing it: a RedisWatch sees the connection go and come back. A command waiting for its run
 *   gives Redis redisTimeoutMs() (default 30 s, $WEBGPU_KNN_REDIS_TIMEOUT_MS) to come back, then
 *   fails; a worker waits for it indefinitely, saying once that it is gone and once that it is back.
 */
import type { Redis, RedisOptions } from 'ioredis';
import { type QueuePackages, queuePackages } from './queue-packages.js';
import { UsageError } from '../../errors.js';
import { DistributedError } from '../../errors.js';

/** How long one connection attempt may take. */
export const PROBE_MS = 5000;
const DEFAULT_TIMEOUT_MS = 30_000;

const EXPECTED = 'expected a Redis URL: redis://HOST:PORT, or rediss://HOST:PORT for TLS (with USER:PASSWORD@ before HOST where Redis needs a password, and /N after PORT for database N)';

/** The largest database number a URL may name (Redis's `databases` is an int). */
const MAX_DB = 2 ** 31 - 1;

/**
 * `text` (a string from Redis: a job's name, id or failure reason) for printing on one line:
 * control characters (newlines, escapes, C1 controls) and the Unicode line and bidi controls are
 * written as \n, \r, \t, \xNN or \uNNNN, so that nothing printed can pass for another line or
 * restyle the terminal.
 */
export function printable(text: string): string {
  const named: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };
  return text.replace(/[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, (c) => {
    const code = c.charCodeAt(0);
    return named[c] ?? (code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`);
  });
}

/** `url` with its password replaced by ***, for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password === '') return url;
    u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}

/** `--flag URL` checked: a redis:// or rediss:// URL with a host (a usage error otherwise). */
export function checkRedisUrl(flag: string, url: string): string {
  let u: URL | null = null;
  try {
    u = new URL(url);
  } catch {
    // refused below
  }
  const ok = u !== null && (u.protocol === 'redis:' || u.protocol === 'rediss:') && u.hostname !== '' && /^(\/\d*)?$/.test(u.pathname) && u.hash === '';
  if (!ok) throw new UsageError(`--${flag} ${redactUrl(url)}: ${EXPECTED}`);
  const db = dbOf(url);
  if (db !== null && !(db <= MAX_DB)) throw new UsageError(`--${flag} ${redactUrl(url)}: the database number must be an integer in [0, ${MAX_DB}]; got ${u!.pathname.slice(1)}`);
  return url;
}

/** The database a checked URL names (/N), or null where it names none. */
function dbOf(url: string): number | null {
  const path = new URL(url).pathname;
  return path.length > 1 ? Number(path.slice(1)) : null;
}

/** ioredis options for `url`: its password from the environment when the URL has none. */
function options(url: string): RedisOptions {
  const password = new URL(url).password === '' ? process.env.WEBGPU_KNN_REDIS_PASSWORD : undefined;
  return { enableReadyCheck: false, ...(password === undefined || password === '' ? {} : { password }) };
}

/** The connection options BullMQ's classes take for `url`. */
export function connection(url: string): { url: string; password?: string; enableReadyCheck: false; maxRetriesPerRequest: null } {
  return { url, ...(options(url) as { password?: string; enableReadyCheck: false }), maxRetriesPerRequest: null };
}

/** How long a command waits for a lost Redis to come back: $WEBGPU_KNN_REDIS_TIMEOUT_MS, else 30 s. */
export function redisTimeoutMs(): number {
  const text = process.env.WEBGPU_KNN_REDIS_TIMEOUT_MS;
  if (text === undefined || text === '') return DEFAULT_TIMEOUT_MS;
  const ms = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(ms >= 100 && ms <= 2 ** 31 - 1)) throw new UsageError(`WEBGPU_KNN_REDIS_TIMEOUT_MS must be an integer in [100, ${2 ** 31 - 1}] (milliseconds); got ${text}`);
  return ms;
}

/**
 * Connects to Redis at `url` once (PROBE_MS at most) and tries what BullMQ needs of it beyond the
 * queue's own commands (INFO, CLIENT SETNAME, a key of the queue): a user that may not run them
 * would leave BullMQ retrying without pause (a worker at 100% of a core, deaf to SIGTERM). A
 * DistributedError saying why not.
 */
export async function probeRedis(url: string): Promise<void> {
  const shown = redactUrl(url);
  const client = new (await queuePackages()).Redis(url, { ...options(url), lazyConnect: true, connectTimeout: PROBE_MS, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
  let reason = '';
  client.on('error', (err: Error) => (reason ||= err.message));
  try {
    try {
      await client.connect();
      await client.ping();
    } catch (err) {
      throw new DistributedError(`cannot reach Redis at ${shown}: ${reason || (err as Error).message}`);
    }
    // ioredis selects the URL's database on connecting, but a failure there only says so in an
    // error event and leaves the connection on database 0.
    const db = dbOf(url);
    if (db !== null) {
      try {
        await client.select(db);
      } catch (err) {
        throw new DistributedError(`Redis at ${shown} has no database ${db}: ${(err as Error).message}`);
      }
    }
    try {
      await client.info('server');
      await client.client('SETNAME', 'webgpu-knn-probe');
      await client.exists('bull:webgpu-knn:meta');
    } catch (err) {
      throw new DistributedError(`Redis at ${shown} refuses what BullMQ needs: ${(err as Error).message} (see README, "Securing a cluster", for the commands and keys its user needs)`);
    }
  } finally {
    client.disconnect();
  }
}

/**
 * Watches the connection to Redis at `url` (a connection of its own, reconnecting): `onChange`
 * hears once when it is lost (with the reason) and once when it is back.
 */
export class RedisWatch {
  private readonly client: Redis;
  /** When the connection was lost; null while it is up. */
  private downSince: number | null = null;
  private reported = false;
  private closing = false;

  /** `Redis` is ioredis's class (from queuePackages: a caller has loaded it already). */
  constructor(
    Redis: QueuePackages['Redis'],
    readonly url: string,
    private readonly onChange: (up: boolean, reason: string) => void = () => {},
  ) {
    this.client = new Redis(url, { ...options(url), maxRetriesPerRequest: null, retryStrategy: (times) => Math.min(250 * times, 2000) });
    this.client.on('ready', () => {
      if (this.downSince === null) return;
      this.downSince = null;
      if (this.reported) this.onChange(true, '');
      this.reported = false;
    });
    this.client.on('close', () => {
      if (!this.closing && this.downSince === null) this.downSince = Date.now();
    });
    // The first error of an outage says why; the retries' errors say it again, so they are not repeated.
    this.client.on('error', (err: Error) => {
      if (this.closing || this.reported) return;
      this.downSince ??= Date.now();
      this.reported = true;
      this.onChange(false, err.message);
    });
  }

  /** Milliseconds since the connection was lost (0 while it is up). */
  downFor(): number {
    return this.downSince === null ? 0 : Date.now() - this.downSince;
  }

  close(): void {
    this.closing = true;
    this.client.disconnect();
  }
}
