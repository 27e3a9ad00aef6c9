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
 */
import { FlowProducer, type Job, QueueEvents } from 'bullmq';
import { Progress } from './progress.js';

export const QUEUE = 'webgpu-knn';
export const JOB_OPTS = {
  attempts: 3,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: { age: 24 * 3600 },
  removeOnFail: { age: 7 * 24 * 3600 },
};

export function connection(url: string) {
  return { url, maxRetriesPerRequest: null };
}

export interface FlowJob {
  name: string;
  data: object;
}

/**
 * Enqueues `children` under `parent` on the queue at `url` and returns the parent's result. Every
 * second the progress line says children done / total, `describe(parent)` (default: the children's
 * job name) and an ETA; a failure rejects with the failed child's reason, or the parent's.
 */
export async function runFlow(url: string, label: string, parent: FlowJob, children: FlowJob[], describe?: (parent: Job) => Promise<string>): Promise<unknown> {
  const conn = connection(url);
  const flow = new FlowProducer({ connection: conn });
  const events = new QueueEvents(QUEUE, { connection: conn });
  const t0 = performance.now();
  try {
    await events.waitUntilReady();
    const failures = new Map<string, string>();
    events.on('failed', ({ jobId, failedReason }) => void failures.set(jobId, failedReason));
    const tree = await flow.add({
      name: parent.name,
      queueName: QUEUE,
      data: parent.data,
      opts: JOB_OPTS,
      children: children.map((c) => ({ name: c.name, queueName: QUEUE, data: c.data, opts: { ...JOB_OPTS, failParentOnFailure: true } })),
    });
    const { job } = tree;
    const childIds = new Set((tree.children ?? []).map((c) => c.job.id));
    const p = new Progress(label);
    const total = children.length;
    const timer = setInterval(() => {
      void (async () => {
        const done = (await job.getDependenciesCount()).processed ?? 0;
        const what = describe ? await describe(job) : `${children[0]?.name ?? ''} jobs`;
        const secs = (performance.now() - t0) / 1000;
        const eta = done > 0 && done < total ? `, ETA ${((secs * (total - done)) / done).toFixed(0)} s` : '';
        p.update(done, total, `${what}${eta}`);
      })().catch(() => {});
    }, 1000);
    try {
      return await job.waitUntilFinished(events).catch(async (err: Error) => {
        // Children not yet started would only be wasted work now.
        await job.removeUnprocessedChildren().catch(() => {});
        const child = [...failures.keys()].find((id) => childIds.has(id));
        throw new Error(child !== undefined ? failures.get(child) : err.message);
      });
    } finally {
      clearInterval(timer);
    }
  } finally {
    await flow.close();
    await events.close();
  }
}
