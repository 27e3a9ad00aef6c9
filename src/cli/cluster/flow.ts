/**
 * The BullMQ plumbing every distributed command shares: the queue, the job settings (see README,
 * "Distributed dedup"), and `runFlow`, which enqueues a flow (children jobs, then one parent that
 * runs when they are all done) and waits for the parent with progress on stderr.
 *
 * - attempts 3, exponential backoff from 1 s: a job that throws (a transient file-system error) is
 *   retried; a job that throws bullmq's UnrecoverableError is not.
 * - removeOnComplete / removeOnFail by age (1 day / 7 days): Redis does not grow without bound and
 *   failed jobs stay for inspection a while.
 * - children fail their parent (failParentOnFailure): a child that fails for good ends the command
 *   with that child's reason, instead of a parent waiting forever; the children not yet started
 *   are removed.
 * - every job is signed with the job secret (src/cli/cluster/job-auth.ts), which the command reads with
 *   `openCluster` before any work starts, so that a missing secret or an unreachable Redis is
 *   said at once, not after training.
 * - every job is checked against the schema its kind's workers check it with (checkJobs in
 *   src/cli/cluster/job-payloads.ts) before any is queued: one a worker would refuse is a usage
 *   error here.
 * - a run fails with one line (a DistributedError) when a job fails (the failed child's own
 *   reason, printed escaped: it comes from Redis), when Redis is lost for longer than
 *   redisTimeoutMs(), and when the run's jobs are gone from Redis (restarted empty, flushed).
 * - a run that Redis reports done is only that: runFlow returns nothing of the parent's value
 *   (anyone who can write to Redis can set it); the callers check on the file system that the
 *   work is there (a receipt, a manifest) and report what they find.
 */
import type { FlowProducer, Job, Queue } from 'bullmq';
import { queuePackages } from './queue-packages.js';
import { readJobSecret, signJob } from './job-auth.js';
import { refreshHeartbeats } from './job-files.js';
import { checkJobs } from './job-payloads.js';
import { Progress } from '../progress.js';
import { RedisWatch, checkRedisUrl, connection, printable, probeRedis, redactUrl, redisTimeoutMs } from './redis-link.js';
import { DistributedError } from '../../errors.js';

export const QUEUE = 'webgpu-knn';
export const JOB_OPTS = {
  attempts: 3,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: { age: 24 * 3600 },
  removeOnFail: { age: 7 * 24 * 3600 },
};

/**
 * The job secret this process signs its jobs with: the process's own, as its Redis password is,
 * read once by openCluster before any work, so that every runFlow of the command signs with it
 * (build --shards hands its flow only the URL).
 */
let secret: Buffer | null = null;

/**
 * `--distributed URL` of a command, checked before any work: bullmq and ioredis installed, the URL (a usage error), the job
 * secret (`--secret-file`, or the environment; a usage error without one), then Redis reached
 * (exit 1 when it cannot be). Returns the URL for runFlow.
 */
export async function openCluster(url: string, secretFile: string | undefined): Promise<string> {
  await queuePackages();
  checkRedisUrl('distributed', url);
  secret = readJobSecret(secretFile, '--distributed');
  redisTimeoutMs();
  await probeRedis(url);
  return url;
}

export interface FlowJob {
  name: string;
  data: object;
}

/** Closes a BullMQ object, or drops its connections when Redis does not answer the close (or is known to be gone). */
async function shut(o: { close(): Promise<void>; disconnect(): Promise<void> }, redisGone: boolean): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const closed = !redisGone && (await Promise.race([o.close().then(() => true, () => true), new Promise<boolean>((res) => (timer = setTimeout(() => res(false), 1000)))]));
  clearTimeout(timer);
  // Not awaited: BullMQ's disconnect waits for a connection that will not come; the sockets are dropped at once.
  if (!closed) void o.disconnect().catch(() => {});
}

/**
 * The reason a parent failed: BullMQ's "child bull:QUEUE:ID failed" replaced by that child's own
 * reason.
 */
async function childReason(queue: Queue, reason: string): Promise<string> {
  const id = /^child \S*:([^:\s]+) failed$/.exec(reason)?.[1];
  if (id === undefined) return reason;
  const child = await (await queuePackages()).bullmq.Job.fromId(queue, id).catch(() => undefined);
  return child?.failedReason || reason;
}

/** How often a command looks at its run's parent job in Redis. */
const POLL_MS = 200;

/**
 * Enqueues `children` under `parent` on the queue at `url` (once each passes its kind's schema) and
 * resolves when Redis reports the parent done. Every second the progress line says children
 * done / total, `describe(parent)` (default: the children's job name) and an ETA; a failure
 * rejects with a DistributedError: the failed child's reason, or the parent's, or what became of
 * Redis.
 *
 * The parent's state is read from Redis every POLL_MS (no event stream, whose blocking reads
 * outlive a lost connection by seconds): done, failed, or gone (then the run fails at once).
 */
export async function runFlow(url: string, label: string, parent: FlowJob, children: FlowJob[], describe?: (parent: Job) => Promise<string>): Promise<void> {
  if (secret === null) throw new Error('runFlow before openCluster: no job secret');
  const key = secret;
  checkJobs([parent, ...children]);
  const conn = connection(url);
  const shown = redactUrl(url);
  const timeout = redisTimeoutMs();
  const { bullmq, Redis } = await queuePackages();
  const watch = new RedisWatch(Redis, url);
  const flow = new bullmq.FlowProducer({ connection: conn });
  const queue = new bullmq.Queue(QUEUE, { connection: conn });
  // Connection errors are the watch's to judge; BullMQ's own reports of them would be a stack trace per retry.
  flow.on('error', () => {});
  queue.on('error', () => {});
  const t0 = performance.now();
  const lost = (): DistributedError | null => {
    const down = watch.downFor();
    return down > timeout
      ? new DistributedError(`lost the connection to Redis at ${shown} for ${(down / 1000).toFixed(0)} s; the run is abandoned (its jobs, if Redis comes back with them, fail once they find the run's folder gone)`)
      : null;
  };
  let timer: NodeJS.Timeout | undefined;
  try {
    refreshHeartbeats();
    const { job } = await new Promise<Awaited<ReturnType<FlowProducer['add']>>>((resolve, reject) => {
      timer = setInterval(() => {
        const err = lost();
        if (err) reject(err);
      }, POLL_MS);
      flow
        .add({
          name: parent.name,
          queueName: QUEUE,
          data: signJob(key, parent.name, parent.data),
          opts: JOB_OPTS,
          children: children.map((c) => ({ name: c.name, queueName: QUEUE, data: signJob(key, c.name, c.data), opts: { ...JOB_OPTS, failParentOnFailure: true } })),
        })
        .then(resolve, reject);
    });
    clearInterval(timer);
    const id = job.id!;
    const p = new Progress(label);
    const total = children.length;
    let shownAt = 0;
    await new Promise<void>((resolve, reject) => {
      let busy = false;
      const poll = async (): Promise<void> => {
        const state = await queue.getJobState(id);
        // A parent that is not there (Redis restarted without persistence, or flushed) never finishes.
        if (state === 'unknown') return reject(new DistributedError(`the run's jobs are gone from Redis at ${shown} (restarted without persistence, or flushed?); nothing was written: run the command again`));
        if (state === 'completed') return resolve();
        if (state === 'failed') {
          // Children not yet started would only be wasted work now.
          await job.removeUnprocessedChildren().catch(() => {});
          return reject(new DistributedError(printable(await childReason(queue, (await (await queuePackages()).bullmq.Job.fromId(queue, id))?.failedReason ?? 'the run failed'))));
        }
        if (performance.now() - shownAt < 1000) return;
        shownAt = performance.now();
        const done = (await job.getDependenciesCount()).processed ?? 0;
        const what = describe ? await describe(job) : `${children[0]?.name ?? ''} jobs`;
        const secs = (performance.now() - t0) / 1000;
        const eta = done > 0 && done < total ? `, ETA ${((secs * (total - done)) / done).toFixed(0)} s` : '';
        p.update(done, total, `${what}${eta}`);
      };
      timer = setInterval(() => {
        const err = lost();
        if (err) return reject(err);
        if (busy) return; // the last look still waits for Redis
        busy = true;
        poll()
          .catch(() => {}) // Redis errors: the watch judges the connection
          .finally(() => (busy = false));
      }, POLL_MS);
    });
  } catch (err) {
    // A refusal by Redis itself (a missing permission, a full memory) is one line too.
    throw err instanceof DistributedError ? err : new DistributedError(`Redis at ${shown}: ${printable((err as Error).message)}`);
  } finally {
    clearInterval(timer);
    const gone = watch.downFor() > 0;
    watch.close();
    await shut(flow, gone);
    await shut(queue, gone);
  }
}
