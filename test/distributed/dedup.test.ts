/**
 * dedup --distributed on a loopback Redis with three CPU workers: the same bytes as dedup, also
 * when one worker is SIGKILLed mid-run, and when two identical runs go at once; failures are one
 * line, as in the single-process dedup. Without redis-server the suite skips with the reason,
 * unless WEBGPU_REQUIRED=1 (CI): then it fails.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, ROOT, type TestWorker, heldRuns, redisMissing, startRedis, startWorker, stopWorker, writeSecret } from '../helpers/redis.js';

/** n rows of d floats as .fvecs, with planted near-duplicates. */
function corpus(path: string, n: number, d: number): void {
  let seed = 7;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32) - 0.5;
  const x = new Float32Array(n * d).map(rnd);
  for (let r = 0; r < n; r += 37) {
    const src = (r * 7919) % n;
    for (let t = 0; t < d; t++) x[r * d + t] = x[src * d + t] + 0.001 * rnd();
  }
  const buf = Buffer.alloc(n * (4 + 4 * d));
  for (let r = 0; r < n; r++) {
    buf.writeInt32LE(d, r * (4 + 4 * d));
    for (let t = 0; t < d; t++) buf.writeFloatLE(x[r * d + t], r * (4 + 4 * d) + 4 + 4 * t);
  }
  writeFileSync(path, buf);
}

const missing = redisMissing('distributed suite');

describe.skipIf(missing !== null)('dedup --distributed', () => {
  let dir = '';
  let url = '';
  let redisPid = 0;
  let secret = '';
  /** The single-process dedup's stderr: its count of candidates. */
  let single = '';
  const workers: TestWorker[] = [];
  /** Each worker's stderr so far: its "job NAME ID started / completed" lines. */
  const logs = (): string[] => workers.map((w) => w.log());

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-dist-'));
    ({ url, pid: redisPid } = startRedis());
    secret = writeSecret(join(dir, 'secret'));
    // d = 1024 makes a tile take a good part of a second on the CPU backend, so the kill below lands inside one.
    corpus(join(dir, 'x.fvecs'), 3000, 1024);
    single = spawnSync('node', [CLI, 'dedup', '--input', join(dir, 'x.fvecs'), '--metric', 'cosine', '--threshold', '0.99', '--out', join(dir, 'one.csv'), '--clusters', join(dir, 'one.json'), '--backend', 'cpu'], { encoding: 'utf8' }).stderr;
    for (let k = 0; k < 3; k++) workers.push(startWorker(url, dir, secret, ['--lock-ms', '1000']));
  });

  afterAll(() => {
    for (const w of workers) stopWorker(w);
    if (redisPid) process.kill(redisPid);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The distributed dedup of `input` to NAME.csv and NAME.json; resolves with its stderr, rejects with its exit code and stderr. */
  const run = (name: string, ...extra: string[]) => dedupOf('x.fvecs', name, ...extra);
  const dedupOf = (input: string, name: string, ...extra: string[]) =>
    new Promise<string>((res, rej) => {
      const c = spawn('node', [CLI, 'dedup', '--input', join(dir, input), '--metric', 'cosine', '--threshold', '0.99', '--out', join(dir, `${name}.csv`), '--clusters', join(dir, `${name}.json`), '--distributed', url, '--secret-file', secret, '--tile-rows', '500', ...extra], { stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      c.stderr.on('data', (b) => (err += b));
      c.on('exit', (code) => (code === 0 ? res(err) : rej(new Error(`exit ${code}: ${err}`))));
    });
  /** The run folders beside the outputs. */
  const runFolders = (): string[] => readdirSync(dir).filter((f) => f.includes('.webgpu-knn-tiles-'));

  it('writes the same CSV and clusters as dedup (21 block pairs, three workers)', async () => {
    await run('dist');
    const one = readFileSync(join(dir, 'one.csv'), 'utf8');
    expect(one.split('\n').length).toBeGreaterThan(50);
    expect(readFileSync(join(dir, 'dist.csv'), 'utf8')).toBe(one);
    expect(readFileSync(join(dir, 'dist.json'), 'utf8')).toBe(readFileSync(join(dir, 'one.json'), 'utf8'));
  }, 120_000);

  it('still does when a worker is SIGKILLed while it holds a tile, which another worker then runs', async () => {
    // Kill worker 0 the moment it reports taking a tile of this run.
    let killed = '';
    void workers[0].waitFor(/job self-join-tile (\S+) started/, workers[0].log().length).then((m) => {
      killed = m[1];
      workers[0].proc.kill('SIGKILL');
    }, () => {});
    await run('killed');
    expect(killed, 'worker 0 took a tile').not.toBe('');
    expect(logs()[0], 'the killed worker never finished its tile').not.toContain(`job self-join-tile ${killed} completed`);
    expect(logs().slice(1).join(''), 'another worker ran the tile again').toContain(`job self-join-tile ${killed} completed`);
    expect(readFileSync(join(dir, 'killed.csv'), 'utf8')).toBe(readFileSync(join(dir, 'one.csv'), 'utf8'));
    expect(readFileSync(join(dir, 'killed.json'), 'utf8')).toBe(readFileSync(join(dir, 'one.json'), 'utf8'));
  }, 120_000);

  it('--max-candidates: too many candidates fail the run with the bound, in one line, and nothing is written', async () => {
    const candidates = Number(/\((\d+) candidates checked\)/.exec(single)![1]);
    expect(candidates).toBeGreaterThan(20);
    const failed = await run('bounded', '--max-candidates', '20').then(() => '', (err: Error) => err.message);
    expect(failed).toMatch(/^exit 1: [^]*the threshold lets through more than 20 candidate pairs (in tile \d+-\d+ alone|in all \(\d+\)); use a stricter threshold or raise --max-candidates\n$/);
    expect(failed, 'no stack trace').not.toMatch(/\n\s+at /);
    expect(existsSync(join(dir, 'bounded.csv'))).toBe(false);
    expect(existsSync(join(dir, 'bounded.json'))).toBe(false);
    expect(runFolders(), 'the run removed its tiles folder').toEqual([]);
    // The bound met exactly is no failure.
    await run('exactly', '--max-candidates', String(candidates));
    expect(readFileSync(join(dir, 'exactly.csv'), 'utf8')).toBe(readFileSync(join(dir, 'one.csv'), 'utf8'));
  }, 120_000);

  it('a NaN in the input fails the run with the one line the single-process dedup prints, and nothing is written', async () => {
    corpus(join(dir, 'nan.fvecs'), 600, 16);
    const bytes = readFileSync(join(dir, 'nan.fvecs'));
    bytes.writeFloatLE(NaN, 300 * (4 + 4 * 16) + 4 + 4 * 5);
    writeFileSync(join(dir, 'nan.fvecs'), bytes);
    const one = spawnSync('node', [CLI, 'dedup', '--input', join(dir, 'nan.fvecs'), '--metric', 'cosine', '--threshold', '0.99', '--out', join(dir, 'nan-one.csv'), '--backend', 'cpu'], { encoding: 'utf8' });
    expect(one.status).toBe(1);
    const line = one.stderr.trim().split('\n').at(-1)!;
    expect(line).toMatch(/^webgpu-knn dedup: .*row 300 .*NaN/);
    const failed = await dedupOf('nan.fvecs', 'nan-dist').then(() => '', (err: Error) => err.message);
    expect(failed).toMatch(/^exit 1: /);
    expect(failed.replace(/^exit 1: /, '').trim().split('\n').at(-1), 'the same line as the single-process dedup').toBe(line);
    expect(failed, 'no stack trace').not.toMatch(/\n\s+at /);
    expect(existsSync(join(dir, 'nan-dist.csv'))).toBe(false);
    expect(runFolders()).toEqual([]);
  }, 120_000);

  it('two identical runs at once (the same output) both succeed, each in a tiles folder of its own', async () => {
    corpus(join(dir, 'small.fvecs'), 600, 16);
    const one = spawnSync('node', [CLI, 'dedup', '--input', join(dir, 'small.fvecs'), '--metric', 'cosine', '--threshold', '0.99', '--out', join(dir, 'small-one.csv'), '--backend', 'cpu'], { encoding: 'utf8' });
    expect(one.status).toBe(0);
    let during: string[] = [];
    const [a, b] = await heldRuns(url, () => [dedupOf('small.fvecs', 'twice'), dedupOf('small.fvecs', 'twice')], () => (during = runFolders()));
    expect(during, 'while both runs are queued, each has its folder').toHaveLength(2);
    expect(a).toMatch(/wrote /);
    expect(b).toMatch(/wrote /);
    expect(readFileSync(join(dir, 'twice.csv'), 'utf8')).toBe(readFileSync(join(dir, 'small-one.csv'), 'utf8'));
    expect(runFolders(), 'each run removed its folder').toEqual([]);
  }, 120_000);

  it("a tiles folder left by a killed run is removed by the next run writing that output; a live run's and another host's stay", async () => {
    // A pid that was a process of this host and is gone now.
    const gone = spawnSync('node', ['-e', 'console.log(process.pid)'], { encoding: 'utf8' }).stdout.trim();
    const folder = (host: string, pid: string | number) => join(dir, `.left.csv.webgpu-knn-tiles-${host}-${pid}-0123abcd`);
    for (const f of [folder(hostname(), gone), folder(hostname(), process.pid), folder('another-host', gone)]) {
      mkdirSync(f);
      writeFileSync(join(f, '0-0.pairs'), 'left behind');
    }
    const err = await dedupOf('small.fvecs', 'left');
    expect(err).toContain(`removed ${folder(hostname(), gone)}, a tiles folder left by an interrupted run`);
    expect(existsSync(folder(hostname(), gone))).toBe(false);
    expect(existsSync(folder(hostname(), process.pid)), "a live process's folder stays").toBe(true);
    expect(existsSync(folder('another-host', gone)), "another host's folder stays (its pid cannot be checked here)").toBe(true);
    expect(readFileSync(join(dir, 'left.csv'), 'utf8')).toBe(readFileSync(join(dir, 'small-one.csv'), 'utf8'));
    rmSync(folder(hostname(), process.pid), { recursive: true });
    rmSync(folder('another-host', gone), { recursive: true });
  }, 120_000);

  it('a worker sent SIGTERM while it holds a tile finishes that tile, then exits 0', async () => {
    const w = workers[1];
    const exited = new Promise<number | null>((res) => w.proc.on('exit', (code) => res(code)));
    let held = '';
    void w.waitFor(/job self-join-tile (\S+) started/, w.log().length).then((m) => {
      held = m[1];
      w.proc.kill('SIGTERM');
    }, () => {});
    await run('stopped');
    expect(held, 'worker 1 took a tile').not.toBe('');
    expect(await exited).toBe(0);
    expect(w.log()).toMatch(new RegExp(`job self-join-tile ${held} started\n(.*\n)*worker: stopping: the current jobs finish first\n(.*\n)*worker: job self-join-tile ${held} completed\n`));
    expect(readFileSync(join(dir, 'stopped.csv'), 'utf8')).toBe(readFileSync(join(dir, 'one.csv'), 'utf8'));
  }, 120_000);
});

describe('without redis-server', () => {
  it('the check fails, with the reason', () => {
    expect(() => execFileSync('bash', [join(ROOT, 'scripts/redis.sh'), 'setup', '--check'], { env: { ...process.env, WEBGPU_KNN_REDIS_SERVER: '/nonexistent/redis-server' }, stdio: 'pipe' })).toThrow(/no \/nonexistent\/redis-server/);
  });
});
