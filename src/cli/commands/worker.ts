/**
 * `webgpu-knn worker`: its flags; the worker itself is src/cli/cluster/worker.ts.
 */
import { readJobSecret } from '../cluster/job-auth.js';
import { openRoot } from '../cluster/job-paths.js';
import { checkRedisUrl } from '../cluster/redis-link.js';
import { queuePackages } from '../cluster/queue-packages.js';
import { DEFAULT_LOCK_MS, runWorker } from '../cluster/worker.js';
import type { Command } from '../command.js';
import { backendChoice, intFlag, parseFlags, required, text } from '../flags.js';
import { BACKEND_OPT } from '../help-text.js';

const USAGE = `usage: webgpu-knn worker --redis URL --root DIR [--secret-file FILE] [options]

Takes jobs (dedup --distributed's block pairs and reduces; the shard builds, searches and
merges of search and knn-graph --distributed) from the BullMQ queue in Redis at URL
until SIGTERM or SIGINT, which let the current jobs finish. Run one per GPU, on any machine that
sees the same file system. A worker that dies loses its job's lock; once it expires another worker
runs the job again (see README, "Distributed dedup").

A worker runs only jobs it can verify: signed with its job secret and not expired, of a known
kind whose payload fits that kind's schema, every path inside --root, of a run whose command
still lives (its pid on this host, its heartbeat from another). Any other job is refused
(failed at once, one line "refused job NAME ID: why" on stderr; no file touched). Redis
unreachable at the start: exit 1; lost later: the worker waits for it to come back. See README,
"Securing a cluster".

options:
  --redis URL       redis://HOST:PORT, or rediss://HOST:PORT (TLS); USER:PASSWORD@ before HOST
                    where Redis needs one (or the password in $WEBGPU_KNN_REDIS_PASSWORD), /N
                    after PORT for database N
  --root DIR        required: every path a job names must lie inside DIR (after symbolic links
                    are followed), for example the shared file system's mount
  --secret-file FILE  the job secret, at least 16 bytes (without the flag: the file
                    $WEBGPU_KNN_SECRET_FILE names, else $WEBGPU_KNN_SECRET; one is required)
  --concurrency N   jobs at once (default 1)
  --lock-ms MS      BullMQ lockDuration and stalledInterval (default 60000)
${BACKEND_OPT}
  -h, --help        this text
-q, --quiet (see 'webgpu-knn --help') also holds back the "refused job" lines; --json does not
apply (a worker runs until it is stopped).`;

async function run(argv: string[]): Promise<undefined> {
  const v = parseFlags(USAGE, argv);
  if (!v) return;
  await queuePackages(); // before the flags' checks: without bullmq and ioredis nothing else matters
  const url = checkRedisUrl('redis', required(v, 'redis'));
  const root = openRoot(required(v, 'root'));
  const concurrency = intFlag('concurrency', text(v, 'concurrency'), 1, 1024, 1);
  const lockMs = intFlag('lock-ms', text(v, 'lock-ms'), 100, 2 ** 31 - 1, DEFAULT_LOCK_MS);
  const backend = backendChoice(v);
  const secret = readJobSecret(text(v, 'secret-file'), 'a worker');
  await runWorker({ url, root, secret, backend, concurrency, lockMs });
  return undefined;
}

export const workerCommand: Command = {
  name: 'worker',
  summary: `takes 'dedup --distributed' and sharded search / knn-graph jobs from Redis (BullMQ)
until SIGTERM`,
  usage: USAGE,
  json: false,
  run,
};
