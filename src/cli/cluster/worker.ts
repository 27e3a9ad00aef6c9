/**
 * `webgpu-knn worker`: takes jobs of every kind (src/cli/cluster/job-kinds.ts) from the BullMQ
 * queue in Redis and runs them, concurrency 1 by default, one worker per device.
 *
 * A job is data from Redis, and anyone who can write to that Redis can queue one, so a worker is a
 * trust boundary. Before a job runs, the worker checks, in this order, and refuses the job (failed
 * at once, as an UnrecoverableError, one line "refused job NAME ID: why" on stderr, no file
 * touched) when any fails: its kind is known; it is signed with the worker's job secret and not
 * expired (src/cli/cluster/job-auth.ts); its payload fits its kind's schema
 * (src/cli/cluster/job-payloads.ts); every path it names lies inside the worker's --root
 * (src/cli/cluster/job-paths.ts); its run has not ended (its run folder is there and its producer
 * lives: src/cli/cluster/job-files.ts, runEnded). What it logs of a job (name, id, failure) comes
 * from Redis and is printed escaped (printable).
 *
 * Redis going away: a worker that has started waits for it to come back (a Redis restart should
 * not need every worker on every machine restarted: they are long-running services), saying once
 * that the connection is lost and once that it is back; BullMQ's own retries stay quiet. A job it
 * was running loses its lock meanwhile and is run again once its lock expires. A worker that
 * cannot reach Redis when it starts exits at once (exit 1): then it is most likely misconfigured.
 *
 * BullMQ settings (see README, "Distributed dedup"):
 * - lockDuration 60 s (--lock-ms): a job's lock, renewed every lockDuration / 2 while the worker's
 *   event loop turns. A worker that dies (SIGKILL, lost machine) stops renewing; after the lock
 *   expires the next stalled check (stalledInterval = lockDuration) moves the job back to wait and
 *   another worker runs it. Tiles should take well under lockDuration between event-loop turns.
 * - maxStalledCount 3: a job that stalls more often (a tile that kills its workers) fails.
 * - attempts, backoff, removal of finished jobs, and children failing their parent:
 *   src/cli/cluster/flow.ts.
 */
import type { Job } from 'bullmq';
import { queuePackages } from './queue-packages.js';
import { createBackend } from '../../backend/create-backend.js';

import { verifyJob } from './job-auth.js';
import { runEnded } from './job-files.js';
import { JOB_KINDS } from './job-kinds.js';
import { type Root, refusePath } from './job-paths.js';

import { QUEUE } from './flow.js';
import { RedisWatch, connection, printable, probeRedis, redactUrl } from './redis-link.js';
import { releaseShardCache } from './shard-search.js';
import { InvalidArgumentError, SchemaError } from '../../errors.js';
import { printWarning } from '../report.js';

export const DEFAULT_LOCK_MS = 60_000;

/**
 * A job the worker will not run: its reason (the job's failedReason) is "refused job NAME: why".
 * The handler throws it on as bullmq's UnrecoverableError (loaded only when the worker starts).
 */
class RefusedJob extends Error {
  constructor(
    name: string,
    readonly why: string,
  ) {
    super(`refused job ${printable(name)}: ${why}`);
  }
}

/** Network failures of the connection (the watch reports those), as error codes. */
const NETWORK = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/** The checked payload of `job`, or a RefusedJob saying why it is not run. */
function accept(job: Job, secret: Buffer, root: Root): unknown {
  const refuse = (why: string): RefusedJob => new RefusedJob(job.name, why);
  const kind = Object.hasOwn(JOB_KINDS, job.name) ? JOB_KINDS[job.name] : undefined;
  if (!kind) throw refuse('no such job kind (is this worker older than the command that queued it?)');
  let payload: unknown;
  try {
    payload = kind.check(verifyJob(secret, job.name, job.data), '');
  } catch (err) {
    if (err instanceof SchemaError) throw refuse(`its payload is not that of a ${job.name} job: ${err.message}`);
    throw refuse((err as Error).message);
  }
  for (const p of kind.paths(payload)) {
    const why = refusePath(root, p);
    if (why !== null) throw refuse(why);
  }
  // A job of a run whose producer is gone (killed, or a replay of an ended run) is not run.
  for (const p of kind.paths(payload)) {
    const why = p.role === 'folder' ? runEnded(p.path) : null;
    if (why !== null) throw refuse(why);
  }
  return payload;
}

/**
 * Resolves at the first SIGTERM or SIGINT. The CLI's own handlers (remove temporary files, exit
 * at once) are set aside until then, so that the worker can let its current jobs finish; they are
 * put back for a second signal, which exits at once.
 */
async function stopSignal(): Promise<void> {
  const signals = ['SIGTERM', 'SIGINT'] as const;
  const cli = signals.map((sig) => process.listeners(sig));
  for (const sig of signals) process.removeAllListeners(sig);
  await new Promise<void>((res) => signals.forEach((sig) => process.once(sig, () => res())));
  signals.forEach((sig, i) => {
    process.removeAllListeners(sig);
    for (const handler of cli[i]) process.on(sig, handler);
  });
}

export interface WorkerSettings {
  url: string;
  root: Root;
  secret: Buffer;
  backend: 'auto' | 'webgpu' | 'cpu';
  concurrency: number;
  lockMs: number;
}

/** Runs until SIGTERM / SIGINT, then finishes its current jobs and exits. */
export async function runWorker(s: WorkerSettings): Promise<void> {
  const shown = redactUrl(s.url);
  const { bullmq, Redis } = await queuePackages();
  const { UnrecoverableError, Worker, isNotConnectionError } = bullmq;
  await probeRedis(s.url);
  const backend = await createBackend({ backend: s.backend });
  // One line each: what comes from Redis in it (job names, ids, reasons) is escaped.
  const log = (line: string): void => void process.stderr.write(`worker: ${printable(line)}\n`);
  log(`backend ${backend.description}; queue ${QUEUE} at ${shown}; root ${s.root.path}`);
  const watch = new RedisWatch(Redis, s.url, (up, reason) =>
    log(up ? `the connection to Redis at ${shown} is back` : `lost the connection to Redis at ${shown} (${reason}); waiting for it to come back`),
  );
  /** The refusals thrown, each logged once already. */
  const refused = new WeakSet<Error>();
  const worker = new Worker(
    QUEUE,
    async (job: Job) => {
      let payload: unknown;
      try {
        payload = accept(job, s.secret, s.root);
      } catch (err) {
        if (!(err instanceof RefusedJob)) throw err;
        printWarning(`worker: ${printable(`refused job ${job.name} ${job.id}: ${err.why}`)}\n`);
        const unrecoverable = new UnrecoverableError(err.message);
        refused.add(unrecoverable);
        throw unrecoverable;
      }
      const kind = JOB_KINDS[job.name];
      // A search's cached shard index is let go once other work comes (its memory is the device's).
      if (job.name !== 'search-shard') await releaseShardCache();
      try {
        return await kind.run(backend, payload);
      } catch (err) {
        // Bad input (a changed shard, a bad file) fails the same way again: no retries.
        if (err instanceof InvalidArgumentError) throw new UnrecoverableError(err.message);
        // Nor does a job whose run has ended meanwhile (failed, or stopped): its command removed the run's folder.
        const gone = kind.paths(payload).find((p) => p.role === 'folder' && refusePath(s.root, p) !== null);
        if (gone) throw new UnrecoverableError(`${(err as Error).message} (the run that queued this job has ended: ${gone.path} is gone)`);
        throw err;
      }
    },
    { connection: connection(s.url), concurrency: s.concurrency, lockDuration: s.lockMs, stalledInterval: s.lockMs, maxStalledCount: 3 },
  );
  // One line per job taken and finished: what an operator (and the kill test) reads to see which worker held which job.
  worker.on('active', (job) => log(`job ${job.name} ${job.id} started`));
  worker.on('completed', (job) => log(`job ${job.name} ${job.id} completed`));
  worker.on('failed', (job, err) => {
    if (!refused.has(err)) log(`job ${job?.name} ${job?.id} failed: ${err.message}`);
  });
  // Errors other than the connection's (which the watch reports once), each said once in a row.
  let last = '';
  worker.on('error', (err) => {
    const code = (err as NodeJS.ErrnoException).code;
    if (watch.downFor() > 0 || !isNotConnectionError(err) || (code !== undefined && NETWORK.has(code)) || err.message === last) return;
    last = err.message;
    log(err.message);
  });
  await stopSignal();
  log('stopping: the current jobs finish first');
  const closed = worker.close().then(() => true, () => true);
  let redisGone = false;
  while (!(await Promise.race([closed, new Promise<boolean>((res) => setTimeout(() => res(false), 250))]))) {
    redisGone = watch.downFor() > 0;
    if (redisGone) break;
  }
  watch.close();
  await releaseShardCache();
  backend.dispose();
  if (redisGone) {
    // BullMQ's close waits for Redis (a job's end is recorded there), and its lock and stalled-job
    // timers keep the process alive meanwhile: with nothing that can be finished, the worker goes.
    log(`Redis at ${shown} is gone: stopped without waiting for it`);
    process.exit(0);
  }
}
