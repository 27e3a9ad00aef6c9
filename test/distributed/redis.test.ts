/**
 * Redis unavailable (issue 33, item 6), and a worker's own settings: a bad URL is a usage error
 * naming it (exit 2); a worker without --root or a job secret does not start; an unreachable Redis
 * fails within seconds in one line (exit 1); Redis lost mid-run, or restarted empty, fails the run
 * in one line (exit 1) and removes its tiles folder; a worker outlives a Redis restart, saying so
 * once each way. The first part needs no redis-server; the second skips without one, unless
 * WEBGPU_REQUIRED=1 (CI): then it fails.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeVectors } from '../../src/io/vectors.js';
import { randomFloats } from '../../src/common/random.js';
import { CLI, redisMissing, startRedis, startWorker, stopWorker, writeSecret } from '../helpers/redis.js';

interface Run {
  proc: ChildProcess;
  /** Its exit code and stderr, once it has exited. */
  done: Promise<{ code: number | null; err: string }>;
  /** Resolves once its stderr matches `re`. */
  saw: (re: RegExp) => Promise<void>;
}

/** Commands and workers still running when the file's tests end (a test that failed waiting for one) are stopped then. */
const running = new Set<ChildProcess>();
/** So are the Redis servers the tests started (daemons, not children) and have not stopped. */
const servers = new Set<number>();
afterAll(() => {
  for (const p of running) p.kill('SIGKILL');
  for (const pid of servers) process.kill(pid);
});

/** A loopback Redis of the test's own (startRedis), stopped when the file's tests end if not before. */
function ownRedis(port?: number): ReturnType<typeof startRedis> {
  const r = startRedis(port);
  servers.add(r.pid);
  return r;
}

function stopRedis(r: { pid: number }): void {
  servers.delete(r.pid);
  process.kill(r.pid);
}

function cli(args: string[], env: NodeJS.ProcessEnv = {}, cwd?: string): Run {
  const proc = spawn('node', [CLI, ...args], { cwd, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, WEBGPU_KNN_SECRET: undefined, WEBGPU_KNN_SECRET_FILE: undefined, ...env } });
  let err = '';
  const seen: { re: RegExp; res: () => void }[] = [];
  proc.stderr!.on('data', (b) => {
    err += b;
    for (const s of [...seen]) if (s.re.test(err)) (seen.splice(seen.indexOf(s), 1), s.res());
  });
  running.add(proc);
  const done = new Promise<{ code: number | null; err: string }>((res) => proc.on('exit', (code) => (running.delete(proc), res({ code, err }))));
  const saw = (re: RegExp) => (re.test(err) ? Promise.resolve() : new Promise<void>((res) => seen.push({ re, res })));
  return { proc, done, saw };
}

/** Resolves once no process has this pid (a Redis that was told to stop has let go of its port). */
async function gone(pid: number): Promise<void> {
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((res) => setTimeout(res, 20));
  }
}

/** A temporary folder with a job secret and x.fvecs (600 x 16). */
function workspace(): { dir: string; secret: string } {
  const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-redis-'));
  writeVectors(join(dir, 'x.fvecs'), randomFloats(600 * 16, 3), 600, 16);
  return { dir, secret: writeSecret(join(dir, 'secret')) };
}

/** The last line of `text`; a stack frame's line. */
const lastLine = (text: string): string => text.trim().split('\n').at(-1)!;
const STACK = /\n\s+at /;

describe('distributed settings checked before anything starts', () => {
  let dir = '';
  let secret = '';
  beforeAll(() => ({ dir, secret } = workspace()));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const producers = (url: string): string[][] => [
    ['dedup', '--input', 'x.fvecs', '--metric', 'cosine', '--threshold', '0.9', '--out', 'p.csv', '--distributed', url],
    ['build', '--input', 'x.fvecs', '--out', 's.json', '--shards', '2', '--distributed', url],
    ['search', '--index', 's.json', '--queries', 'x.fvecs', '--k', '3', '--out', 'nn.npy', '--distributed', url],
    ['knn-graph', '--input', 'x.fvecs', '--k', '3', '--out', 'g.npy', '--distributed', url],
  ];

  it('a --distributed or --redis value that is not a Redis URL: a usage error (exit 2) naming it and the expected form', async () => {
    const all = [...producers('http://x'), ['worker', '--redis', 'notaurl', '--root', dir, '--secret-file', secret]];
    const results = await Promise.all(all.map((args) => cli([...args, ...(args[0] === 'worker' ? [] : ['--secret-file', secret])], {}, dir).done));
    for (const [i, args] of all.entries()) {
      const r = results[i];
      expect(r.code, `${args.join(' ')}: ${r.err}`).toBe(2);
      expect(lastLine(r.err)).toMatch(new RegExp(`^webgpu-knn ${args[0]}: --(distributed|redis) (http://x|notaurl): expected a Redis URL: redis://HOST:PORT, or rediss://HOST:PORT for TLS`));
    }
  }, 60_000);

  it('a worker without --root, or without a job secret, or with a short one, does not start (exit 2); a secret others can read is warned of', async () => {
    const open = join(dir, 'open-secret');
    writeSecret(open);
    chmodSync(open, 0o644);
    const worker = (args: string[], env: NodeJS.ProcessEnv = {}) => cli(['worker', '--redis', 'redis://127.0.0.1:1', ...args], env).done;
    const [noRoot, badRoot, noSecret, short, warned, quietWarned] = await Promise.all([
      worker(['--secret-file', secret]),
      worker(['--root', join(dir, 'nowhere'), '--secret-file', secret]),
      worker(['--root', dir]),
      worker(['--root', dir], { WEBGPU_KNN_SECRET: 'too-short' }),
      worker(['--root', dir], { WEBGPU_KNN_SECRET_FILE: open }),
      worker(['--root', dir, '--quiet'], { WEBGPU_KNN_SECRET_FILE: open }),
    ]);
    expect([noRoot.code, lastLine(noRoot.err)]).toEqual([2, 'webgpu-knn worker: --root is required']);
    expect([badRoot.code, lastLine(badRoot.err)]).toEqual([2, `webgpu-knn worker: --root ${join(dir, 'nowhere')}: no such directory`]);
    expect(noSecret.code).toBe(2);
    expect(lastLine(noSecret.err)).toMatch(/^webgpu-knn worker: a worker needs a job secret: give --secret-file FILE, or set WEBGPU_KNN_SECRET_FILE \(a file\) or WEBGPU_KNN_SECRET/);
    expect(short.code).toBe(2);
    expect(lastLine(short.err)).toMatch(/^webgpu-knn worker: the job secret from WEBGPU_KNN_SECRET has 9 bytes; at least 16 are needed/);
    expect(warned.err).toContain(`warning: the job secret ${open} is accessible to group or others (mode 0644); chmod 600 ${open}`);
    expect(warned.code, 'then Redis is not there: exit 1').toBe(1);
    // A security warning is not held back by --quiet.
    expect(quietWarned.err).toContain(`warning: the job secret ${open} is accessible to group or others (mode 0644); chmod 600 ${open}`);
  }, 60_000);

  it('a command with --distributed and no job secret: a usage error (exit 2) saying how to give one', async () => {
    const r = await cli(producers('redis://127.0.0.1:1')[0], {}, dir).done;
    expect(r.code).toBe(2);
    expect(lastLine(r.err)).toMatch(/^webgpu-knn dedup: --distributed needs a job secret: give --secret-file FILE/);
  }, 60_000);

  it('an unreachable Redis (redis://127.0.0.1:1): every command and the worker fail in one line, exit 1, leaving no folder', async () => {
    const all = [...producers('redis://127.0.0.1:1'), ['worker', '--redis', 'redis://127.0.0.1:1', '--root', dir]];
    const results = await Promise.all(all.map((args) => cli([...args, '--secret-file', secret], {}, dir).done));
    for (const [i, args] of all.entries()) {
      const r = results[i];
      expect(r.code, `${args.join(' ')}: ${r.err}`).toBe(1);
      expect(lastLine(r.err)).toBe(`webgpu-knn ${args[0]}: cannot reach Redis at redis://127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1`);
      expect(r.err).not.toMatch(STACK);
    }
    expect(readdirSync(dir).filter((f) => f.includes('webgpu-knn-'))).toEqual([]);
  }, 60_000);
});

const missing = redisMissing('redis-unavailable suite');

describe.skipIf(missing !== null)('Redis lost, restarted, or restarted empty', () => {
  let dir = '';
  let secret = '';
  beforeAll(() => ({ dir, secret } = workspace()));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** A distributed dedup of x.fvecs to NAME.csv at `url` (no worker takes its jobs unless one is started). */
  const dedup = (url: string, name: string, env: NodeJS.ProcessEnv = {}): Run =>
    cli(['dedup', '--input', 'x.fvecs', '--metric', 'cosine', '--threshold', '0.9', '--out', `${name}.csv`, '--distributed', url, '--secret-file', secret, '--tile-rows', '200'], env, dir);
  const folders = (name: string): string[] => readdirSync(dir).filter((f) => f.startsWith(`.${name}.csv.webgpu-knn-`));

  it('Redis killed mid-run: the command fails in one line once the timeout passes (exit 1), and removes its tiles folder', async () => {
    const redis = ownRedis();
    const run = dedup(redis.url, 'lost', { WEBGPU_KNN_REDIS_TIMEOUT_MS: '1000' });
    // Queued and waiting (no worker): the progress line says 0 of 6 tiles.
    await run.saw(/dedup \(distributed\): 0\/6/);
    expect(folders('lost')).toHaveLength(1);
    stopRedis(redis);
    const r = await run.done;
    expect(r.code, r.err).toBe(1);
    expect(lastLine(r.err)).toMatch(new RegExp(`^webgpu-knn dedup: lost the connection to Redis at ${redis.url} for \\d+ s; the run is abandoned`));
    expect(r.err).not.toMatch(STACK);
    expect(r.err).not.toMatch(/ECONNREFUSED/);
    expect(folders('lost'), 'the tiles folder is removed').toEqual([]);
    expect(existsSync(join(dir, 'lost.csv'))).toBe(false);
  }, 60_000);

  it('Redis restarted empty mid-run: the command sees its jobs gone and fails in one line (exit 1), removing its tiles folder', async () => {
    const redis = ownRedis();
    const run = dedup(redis.url, 'empty');
    await run.saw(/dedup \(distributed\): 0\/6/);
    stopRedis(redis);
    await gone(redis.pid);
    const again = ownRedis(redis.port);
    try {
      const r = await run.done;
      expect(r.code, r.err).toBe(1);
      expect(lastLine(r.err)).toBe(`webgpu-knn dedup: the run's jobs are gone from Redis at ${redis.url} (restarted without persistence, or flushed?); nothing was written: run the command again`);
      expect(r.err).not.toMatch(STACK);
      expect(folders('empty')).toEqual([]);
    } finally {
      stopRedis(again);
    }
  }, 60_000);

  it('a Redis user without what BullMQ needs (INFO, the queue keys), or a wrong password: the worker and the command do not start, one line, exit 1', async () => {
    const redis = ownRedis();
    const admin = new Redis(redis.url);
    try {
      // A user limited as the first attempt in docs/distributed.md (Securing a cluster) would be (no INFO), one without the queue's keys.
      await admin.call('ACL', 'SETUSER', 'noinfo', 'on', '>noinfo-password', '~bull:webgpu-knn:*', '+@all', '-@dangerous');
      await admin.call('ACL', 'SETUSER', 'nokeys', 'on', '>nokeys-password', '~elsewhere:*', '+@all');
      const at = (user: string, password: string) => `redis://${user}:${password}@127.0.0.1:${redis.port}`;
      const [noInfo, noKeys, wrong] = await Promise.all([
        cli(['worker', '--redis', at('noinfo', 'noinfo-password'), '--root', dir, '--secret-file', secret]).done,
        dedup(at('nokeys', 'nokeys-password'), 'nokeys').done,
        cli(['worker', '--redis', at('noinfo', 'wrong'), '--root', dir, '--secret-file', secret]).done,
      ]);
      const masked = (user: string) => `redis://${user}:\\*\\*\\*@127\\.0\\.0\\.1:${redis.port}`;
      expect(noInfo.code, noInfo.err).toBe(1);
      expect(lastLine(noInfo.err)).toMatch(new RegExp(`^webgpu-knn worker: Redis at ${masked('noinfo')} refuses what BullMQ needs: NOPERM .*'info'`));
      expect(noKeys.code, noKeys.err).toBe(1);
      expect(lastLine(noKeys.err)).toMatch(new RegExp(`^webgpu-knn dedup: Redis at ${masked('nokeys')} refuses what BullMQ needs: NOPERM .*keys`));
      expect(wrong.code, wrong.err).toBe(1);
      expect(lastLine(wrong.err)).toMatch(new RegExp(`^webgpu-knn worker: cannot reach Redis at ${masked('noinfo')}: WRONGPASS`));
      for (const r of [noInfo, noKeys, wrong]) expect(r.err, 'no password in any message').not.toMatch(/noinfo-password|nokeys-password|:wrong@/);
      expect(folders('nokeys')).toEqual([]);
    } finally {
      admin.disconnect();
      stopRedis(redis);
    }
  }, 60_000);

  it('a Redis URL naming a database the server does not have (/99): the command and the worker fail in one line (exit 1), never on db 0', async () => {
    const redis = ownRedis();
    try {
      const at = `${redis.url}/99`;
      const [command, worker] = await Promise.all([dedup(at, 'db99').done, cli(['worker', '--redis', at, '--root', dir, '--secret-file', secret]).done]);
      for (const [who, r] of [['dedup', command], ['worker', worker]] as const) {
        expect(r.code, r.err).toBe(1);
        expect(lastLine(r.err)).toMatch(new RegExp(`^webgpu-knn ${who}: Redis at ${at.replace(/\./g, '\\.')} has no database 99: ERR DB index is out of range$`));
      }
      expect(folders('db99')).toEqual([]);
    } finally {
      stopRedis(redis);
    }
  }, 60_000);

  it("a worker whose user loses INFO mid-run (an ACL change) says nothing of ioredis's ready check when its connections come back, and takes jobs again", async () => {
    const redis = ownRedis();
    const admin = new Redis(redis.url);
    await admin.call('ACL', 'SETUSER', 'knn', 'on', '>knn-password', '~*', '+@all');
    const worker = startWorker(`redis://knn:knn-password@127.0.0.1:${redis.port}`, dir, secret);
    running.add(worker.proc);
    try {
      // Until the worker waits for jobs (BullMQ's own start needs INFO): its blocking connection is in BZPOPMIN.
      while (!/cmd=bzpopmin user=knn/.test(String(await admin.call('CLIENT', 'LIST')))) {
        await new Promise((res) => setTimeout(res, 20));
      }
      await admin.call('ACL', 'SETUSER', 'knn', '-info');
      await admin.call('CLIENT', 'KILL', 'USER', 'knn');
      // The worker takes this run's jobs only once its connections are back.
      const r = await dedup(redis.url, 'acl').done;
      expect(r.code, r.err).toBe(0);
      expect(worker.log()).not.toMatch(/ready check|ioredis/i);
    } finally {
      admin.disconnect();
      stopWorker(worker);
      stopRedis(redis);
    }
  }, 60_000);

  it('a worker whose Redis is gone still stops on SIGTERM (exit 0), without waiting for it', async () => {
    const redis = ownRedis();
    const worker = startWorker(redis.url, dir, secret);
    running.add(worker.proc);
    await worker.waitFor(/worker: backend /);
    stopRedis(redis);
    await worker.waitFor(/worker: lost the connection to Redis/);
    const exited = new Promise<number | null>((res) => worker.proc.on('exit', (code) => res(code)));
    worker.proc.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(worker.log()).toContain(`worker: Redis at ${redis.url} is gone: stopped without waiting for it\n`);
  }, 60_000);

  it('a worker outlives a Redis restart: one line when it is lost, one when it is back, and it takes jobs again', async () => {
    const redis = ownRedis();
    const worker = startWorker(redis.url, dir, secret);
    running.add(worker.proc);
    let again: { pid: number } | null = null;
    try {
      await worker.waitFor(/worker: backend /);
      stopRedis(redis);
      await worker.waitFor(new RegExp(`worker: lost the connection to Redis at ${redis.url} \\(.+\\); waiting for it to come back\\n`));
      await gone(redis.pid);
      again = ownRedis(redis.port);
      await worker.waitFor(new RegExp(`worker: the connection to Redis at ${redis.url} is back\\n`));
      const r = await dedup(redis.url, 'after').done;
      expect(r.code, r.err).toBe(0);
      expect(worker.log().match(/lost the connection/g), 'said once').toHaveLength(1);
      expect(worker.log().match(/is back/g), 'said once').toHaveLength(1);
      expect(worker.log()).not.toMatch(STACK);
      expect(worker.log()).not.toMatch(/ioredis|Unhandled error/);
    } finally {
      stopWorker(worker);
      if (again) stopRedis(again);
    }
  }, 60_000);
});
