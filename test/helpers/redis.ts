/**
 * What the distributed suites share: the project root, the built CLI, whether a redis-server
 * exists (scripts/redis.sh setup --check), a loopback Redis of the test's own, a job secret file,
 * and workers whose stderr is kept. Without redis-server a suite skips with the reason, unless
 * WEBGPU_REQUIRED=1 (CI): then it fails.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
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

/** A loopback Redis without persistence (scripts/redis.sh start), on `port` if given; stop it with process.kill(pid). */
export function startRedis(port?: number): { url: string; pid: number; port: number } {
  const [url, pid] = execFileSync('bash', [join(ROOT, 'scripts/redis.sh'), 'start', ...(port === undefined ? [] : [String(port)])], { encoding: 'utf8' }).trim().split(' ');
  return { url, pid: Number(pid), port: Number(new URL(url).port) };
}

/** Writes a job secret (32 bytes of hex and a newline, mode 0600) to `path`; returns the path. */
export function writeSecret(path: string, secret = '0123456789abcdef0123456789abcdef'): string {
  writeFileSync(path, `${secret}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
  return path;
}

/** A worker process and its stderr so far. */
export interface TestWorker {
  proc: ChildProcess;
  log: () => string;
  /** Resolves once the worker's stderr matches `re` (searched from `from` on). */
  waitFor: (re: RegExp, from?: number) => Promise<RegExpExecArray>;
}

/** Starts `webgpu-knn worker` on the CPU backend with `--redis url --root root --secret-file secret` and `extra` flags. */
export function startWorker(url: string, root: string, secret: string, extra: string[] = [], env: NodeJS.ProcessEnv = process.env): TestWorker {
  const proc = spawn('node', [CLI, 'worker', '--redis', url, '--root', root, '--secret-file', secret, '--backend', 'cpu', ...extra], { stdio: ['ignore', 'ignore', 'pipe'], env });
  let log = '';
  const waiters: (() => void)[] = [];
  proc.stderr!.on('data', (b) => {
    log += b;
    for (const w of [...waiters]) w();
  });
  const waitFor = (re: RegExp, from = 0) =>
    new Promise<RegExpExecArray>((res, rej) => {
      const check = (): void => {
        const m = re.exec(log.slice(from));
        if (m) {
          const i = waiters.indexOf(check);
          if (i >= 0) waiters.splice(i, 1);
          res(m);
        } else if (proc.exitCode !== null || proc.signalCode !== null) rej(new Error(`the worker exited before ${re}: ${log}`));
      };
      waiters.push(check);
      proc.once('exit', check);
      check();
    });
  return { proc, log: () => log, waitFor };
}

/** Stops a test worker (SIGTERM) if it still runs. */
export function stopWorker(w: TestWorker): void {
  if (w.proc.pid && w.proc.exitCode === null && w.proc.signalCode === null) process.kill(w.proc.pid, 'SIGTERM');
}

/**
 * Starts `runs` (commands that each queue one flow) with the queue at `url` paused, so that no
 * worker takes their jobs; once every run's parent job is queued, calls `whileHeld` (all the runs
 * are then in progress at once, whatever the machine's speed), resumes the queue and returns the
 * runs' results.
 */
export async function heldRuns<R>(url: string, runs: () => Promise<R>[], whileHeld: () => void): Promise<R[]> {
  const queue = new Queue('webgpu-knn', { connection: { url } });
  await queue.pause();
  let started: Promise<R>[] = [];
  try {
    const before = await queue.getWaitingChildrenCount();
    started = runs();
    let settled = false;
    for (const r of started) r.then(() => (settled = true), () => (settled = true));
    while (!settled && (await queue.getWaitingChildrenCount()) < before + started.length) await new Promise((res) => setTimeout(res, 50));
    if (!settled) whileHeld();
  } finally {
    await queue.resume();
    await queue.close();
  }
  return Promise.all(started);
}
