/**
 * dedup --distributed on a loopback Redis with three CPU workers: the same bytes as dedup, also
 * when one worker is SIGKILLed mid-run. Without redis-server the suite skips with the reason,
 * unless WEBGPU_REQUIRED=1 (CI): then it fails.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, ROOT, redisMissing } from '../helpers/redis.js';


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
  /** The single-process dedup's stderr: its count of candidates. */
  let single = '';
  const workers: ChildProcess[] = [];
  /** Each worker's stderr so far: its "job NAME ID started / completed" lines. */
  const logs: string[] = [];
  const startWorker = () => {
    const w = spawn('node', [CLI, 'worker', '--redis', url, '--backend', 'cpu', '--lock-ms', '1000'], { stdio: ['ignore', 'ignore', 'pipe'] });
    const k = workers.push(w) - 1;
    logs[k] = '';
    w.stderr!.on('data', (b) => (logs[k] += b));
    return w;
  };

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-dist-'));
    const [u, pid] = execFileSync('bash', [join(ROOT, 'scripts/redis.sh'), 'start'], { encoding: 'utf8' }).trim().split(' ');
    url = u;
    redisPid = Number(pid);
    // d = 1024 makes a tile take a good part of a second on the CPU backend, so the kill below lands inside one.
    corpus(join(dir, 'x.fvecs'), 3000, 1024);
    single = spawnSync('node', [CLI, 'dedup', '--input', join(dir, 'x.fvecs'), '--metric', 'cosine', '--threshold', '0.99', '--out', join(dir, 'one.csv'), '--clusters', join(dir, 'one.json'), '--backend', 'cpu'], { encoding: 'utf8' }).stderr;
    for (let k = 0; k < 3; k++) startWorker();
  });

  afterAll(() => {
    for (const w of workers) if (w.pid && w.exitCode === null && w.signalCode === null) process.kill(w.pid, 'SIGTERM');
    if (redisPid) process.kill(redisPid);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const run = (name: string, ...extra: string[]) =>
    new Promise<void>((res, rej) => {
      const c = spawn('node', [CLI, 'dedup', '--input', join(dir, 'x.fvecs'), '--metric', 'cosine', '--threshold', '0.99', '--out', join(dir, `${name}.csv`), '--clusters', join(dir, `${name}.json`), '--distributed', url, '--tile-rows', '500', ...extra], { stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      c.stderr.on('data', (b) => (err += b));
      c.on('exit', (code) => (code === 0 ? res() : rej(new Error(`exit ${code}: ${err}`))));
    });

  it('writes the same CSV and clusters as dedup (21 block pairs, three workers)', async () => {
    await run('dist');
    const one = readFileSync(join(dir, 'one.csv'), 'utf8');
    expect(one.split('\n').length).toBeGreaterThan(50);
    expect(readFileSync(join(dir, 'dist.csv'), 'utf8')).toBe(one);
    expect(readFileSync(join(dir, 'dist.json'), 'utf8')).toBe(readFileSync(join(dir, 'one.json'), 'utf8'));
  }, 120_000);

  it('still does when a worker is SIGKILLed while it holds a tile, which another worker then runs', async () => {
    // Kill worker 0 the moment it reports taking a tile of this run.
    const from = logs[0].length;
    let killed = '';
    const watch = (): void => {
      const m = /job self-join-tile (\S+) started/.exec(logs[0].slice(from));
      if (m && !killed) {
        killed = m[1];
        workers[0].kill('SIGKILL');
      }
    };
    workers[0].stderr!.on('data', watch);
    await run('killed');
    expect(killed, 'worker 0 took a tile').not.toBe('');
    expect(logs[0], 'the killed worker never finished its tile').not.toContain(`job self-join-tile ${killed} completed`);
    expect(logs.slice(1).join(''), 'another worker ran the tile again').toContain(`job self-join-tile ${killed} completed`);
    expect(readFileSync(join(dir, 'killed.csv'), 'utf8')).toBe(readFileSync(join(dir, 'one.csv'), 'utf8'));
    expect(readFileSync(join(dir, 'killed.json'), 'utf8')).toBe(readFileSync(join(dir, 'one.json'), 'utf8'));
  }, 120_000);

  it('--max-candidates: too many candidates fail the run with the bound, and nothing is written', async () => {
    const candidates = Number(/\((\d+) candidates checked\)/.exec(single)![1]);
    expect(candidates).toBeGreaterThan(20);
    await expect(run('bounded', '--max-candidates', '20')).rejects.toThrow(/exit 1: [^]*the threshold lets through more than 20 candidate pairs (in tile \d+-\d+ alone|in all \(\d+\)); use a stricter threshold or raise --max-candidates/);
    expect(existsSync(join(dir, 'bounded.csv'))).toBe(false);
    expect(existsSync(join(dir, 'bounded.json'))).toBe(false);
    // The bound met exactly is no failure.
    await run('exactly', '--max-candidates', String(candidates));
    expect(readFileSync(join(dir, 'exactly.csv'), 'utf8')).toBe(readFileSync(join(dir, 'one.csv'), 'utf8'));
  }, 120_000);
});

describe('without redis-server', () => {
  it('the check fails, with the reason', () => {
    expect(() => execFileSync('bash', [join(ROOT, 'scripts/redis.sh'), 'setup', '--check'], { env: { ...process.env, WEBGPU_KNN_REDIS_SERVER: '/nonexistent/redis-server' }, stdio: 'pipe' })).toThrow(/no \/nonexistent\/redis-server/);
  });
});
