/**
 * What the distributed suites share: the project root, the built CLI, and whether a redis-server
 * exists (scripts/redis.sh setup --check). Without one a suite skips with the reason, unless
 * WEBGPU_REQUIRED=1 (CI): then it fails.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { WEBGPU_REQUIRED } from './gpu.js';

export const ROOT = join(import.meta.dirname, '../..');
export const CLI = join(ROOT, 'dist/cli/main.js');

/** Null when redis-server is there; else the reason (and a warning naming `suite`). */
export function redisMissing(suite: string): string | null {
  try {
    execFileSync('bash', [join(ROOT, 'scripts/redis.sh'), 'setup', '--check'], { stdio: 'pipe' });
    return null;
  } catch {
    const reason = `no redis-server (${process.env.WEBGPU_KNN_REDIS_SERVER ?? 'redis-server'}); run scripts/redis.sh setup`;
    if (WEBGPU_REQUIRED) throw new Error(`WEBGPU_REQUIRED=1 but ${reason}`);
    console.warn(`[distributed] skipping ${suite}: ${reason}`);
    return reason;
  }
}
