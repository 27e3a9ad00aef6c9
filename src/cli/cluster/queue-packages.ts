/**
 * bullmq and ioredis, loaded only when a distributed run or `webgpu-knn worker` starts, so that
 * every other command (and `--help`) works in an install without them (they are optional: a user
 * who runs a cluster installs them). This is the only file that imports them as values; the
 * others import their types only (erased in the build).
 */
import { UsageError } from '../../errors.js';

export interface QueuePackages {
  readonly bullmq: typeof import('bullmq');
  readonly Redis: typeof import('ioredis').Redis;
}

/** The packages a distributed run needs, as the one line a user sees when they are missing. */
export const QUEUE_PACKAGES_MISSING = 'distributed runs and the worker need the packages bullmq and ioredis, which are not installed: npm install bullmq ioredis';

let loaded: Promise<QueuePackages> | undefined;

const missing = (err: unknown): boolean => (err as { code?: string }).code === 'ERR_MODULE_NOT_FOUND';

/** bullmq and ioredis (loaded once); a UsageError saying what to install when either is missing. */
export function queuePackages(): Promise<QueuePackages> {
  loaded ??= Promise.all([import('bullmq'), import('ioredis')]).then(
    ([bullmq, ioredis]) => ({ bullmq, Redis: ioredis.Redis }),
    (err: unknown) => {
      loaded = undefined;
      throw missing(err) ? new UsageError(QUEUE_PACKAGES_MISSING) : err;
    },
  );
  return loaded;
}
