/**
 * Authenticated jobs: every job a command queues carries an HMAC-SHA256, made with a secret the
 * command and the workers share, over the job's name, an expiry time and the payload's exact JSON
 * text. A worker checks the MAC (in constant time) and the expiry before it parses the payload, so
 * a job queued by someone who can reach Redis but does not hold the secret is refused.
 *
 * A job's data, as queued: `{ body: "<JSON text of the payload>", exp: <ms since epoch>, mac: "<hex>" }`,
 * the MAC over `name \n exp \n body`.
 *
 * Expiry: JOB_TTL_MS (7 days) after the job was queued. Jobs of one run are all queued when the
 * run starts and may wait in the queue until the run's last tile is taken, and a retried job is
 * checked again when it is taken, so the expiry must outlast the longest run (a dedup of tens of
 * millions of rows on a few GPUs takes days); 7 days is also how long failed jobs stay in Redis.
 * What a replay of a copied job within that time can do is in README, "Securing a cluster".
 *
 * The secret: `--secret-file FILE`, else the file named by $WEBGPU_KNN_SECRET_FILE, else
 * $WEBGPU_KNN_SECRET itself; at least 16 bytes (a file's one trailing newline is not part of it).
 * A secret file that group or others may read gets a warning, as ssh warns of a private key.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { fileError } from '../../io/file-error.js';
import { UsageError } from '../../errors.js';
import { printWarning } from '../report.js';

/** How long a queued job stays valid. */
export const JOB_TTL_MS = 7 * 24 * 3600 * 1000;
/** The shortest secret accepted, in bytes. */
export const MIN_SECRET_BYTES = 16;

const HOW = `give --secret-file FILE, or set WEBGPU_KNN_SECRET_FILE (a file) or WEBGPU_KNN_SECRET (the secret itself); the workers and the commands that queue jobs need the same one (make one: head -c 32 /dev/urandom | base64 > FILE; chmod 600 FILE). See README, "Securing a cluster"`;

/** What a queued job's data is. */
export interface SignedJob {
  body: string;
  exp: number;
  mac: string;
}

/**
 * The job secret of this process: from `flag` (--secret-file), else the environment. A usage error
 * when there is none or it is too short (`who` says what needs it: "a worker", "--distributed").
 */
export function readJobSecret(flag: string | undefined, who: string): Buffer {
  const fromFile = flag ?? process.env.WEBGPU_KNN_SECRET_FILE;
  let secret: Buffer;
  let source: string;
  if (fromFile !== undefined && fromFile !== '') {
    source = flag !== undefined ? `--secret-file ${fromFile}` : `WEBGPU_KNN_SECRET_FILE ${fromFile}`;
    let mode: number;
    try {
      mode = statSync(fromFile).mode;
      secret = readFileSync(fromFile);
    } catch (err) {
      throw fileError(fromFile, 'cannot read the job secret', err);
    }
    if ((mode & 0o077) !== 0) {
      printWarning(`warning: the job secret ${fromFile} is accessible to group or others (mode ${(mode & 0o777).toString(8).padStart(4, '0')}); chmod 600 ${fromFile}\n`);
    }
    // One trailing newline, as `echo` or an editor leaves it, is not part of the secret.
    const end = secret.length - (secret.at(-1) === 0x0a ? (secret.at(-2) === 0x0d ? 2 : 1) : 0);
    secret = secret.subarray(0, end);
  } else if (process.env.WEBGPU_KNN_SECRET !== undefined) {
    source = 'WEBGPU_KNN_SECRET';
    secret = Buffer.from(process.env.WEBGPU_KNN_SECRET, 'utf8');
  } else {
    throw new UsageError(`${who} needs a job secret: ${HOW}`);
  }
  if (secret.length < MIN_SECRET_BYTES) {
    throw new UsageError(`the job secret from ${source} has ${secret.length} bytes; at least ${MIN_SECRET_BYTES} are needed (${HOW})`);
  }
  return secret;
}

function macOf(secret: Buffer, name: string, exp: number, body: string): Buffer {
  return createHmac('sha256', secret).update(`${name}\n${exp}\n${body}`).digest();
}

/** The data to queue for job `name` with `payload`, valid until `exp` (ms since epoch). */
export function signJob(secret: Buffer, name: string, payload: object, exp = Date.now() + JOB_TTL_MS): SignedJob {
  const body = JSON.stringify(payload);
  return { body, exp, mac: macOf(secret, name, exp, body).toString('hex') };
}

/**
 * The payload of job `name` whose queued data is `data`, parsed once its MAC and expiry hold;
 * otherwise throws an Error saying why it is refused.
 */
export function verifyJob(secret: Buffer, name: string, data: unknown, now = Date.now()): unknown {
  const d = data as Partial<SignedJob> | null;
  if (typeof d !== 'object' || d === null || Array.isArray(d) || typeof d.body !== 'string' || typeof d.exp !== 'number' || typeof d.mac !== 'string' || Object.keys(d).length !== 3) {
    throw new Error('not signed (its data is not { body, exp, mac }): it was not queued by a webgpu-knn command with the job secret');
  }
  if (!/^[0-9a-f]{64}$/.test(d.mac) || !Number.isSafeInteger(d.exp)) throw new Error('its signature is malformed');
  if (!timingSafeEqual(Buffer.from(d.mac, 'hex'), macOf(secret, name, d.exp, d.body))) {
    throw new Error("its MAC does not match: it was changed, or signed with another secret (do this worker and the command that queued the job share one? see README, \"Securing a cluster\")");
  }
  if (d.exp <= now) throw new Error(`it expired at ${new Date(d.exp).toISOString()} (a job is valid for ${JOB_TTL_MS / 86_400_000} days after it is queued)`);
  try {
    return JSON.parse(d.body);
  } catch {
    throw new Error('its body is not JSON');
  }
}
