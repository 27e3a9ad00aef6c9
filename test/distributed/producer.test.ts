/**
 * What the producer of a distributed run (the command that queued it) answers for (issue 33's
 * second hostile pass): a run whose producer is gone writes nothing, also after a newer command
 * has written its output; a run that Redis says is done is checked on the file system before the
 * command believes it; an input changed while the run is queued is refused by its jobs; stale
 * temporary files of the outputs are removed once the run is done; strings from Redis are printed
 * escaped; and a job the workers would refuse is refused before anything is queued. Each run is
 * held in a paused queue while the test does what the report did between a run's start and its
 * jobs (kill its producer, write its output, forge its completion, change its input), so that no
 * timing decides the outcome. One CPU worker on a loopback Redis of the file's own; without
 * redis-server the suite skips with the reason, unless WEBGPU_REQUIRED=1 (CI): then it fails.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runReduce } from '../../src/cli/cluster/dedup.js';
import { inputFile, writeCheckedFile } from '../../src/cli/cluster/job-files.js';
import type { BuildManifestJob } from '../../src/cli/cluster/job-payloads.js';
import { runBuildManifest } from '../../src/cli/cluster/shard-build.js';
import { runSearchMerge } from '../../src/cli/cluster/shard-search.js';
import { sideFile } from '../../src/io/temp-files.js';
import { writeVectors } from '../../src/io/vectors.js';
import { randomFloats } from '../../src/common/random.js';
import { CLI, type TestWorker, redisMissing, startRedis, startWorker, stopWorker, writeSecret } from '../helpers/redis.js';

const missing = redisMissing('producer suite');

interface Run {
  proc: ChildProcess;
  /** Its exit code and stderr, once it has exited. */
  done: Promise<{ code: number | null; err: string }>;
}

/** The last line of `text`. */
const lastLine = (text: string): string => text.trim().split('\n').at(-1)!;

describe.skipIf(missing !== null)('a distributed run answers to its producer', () => {
  let dir = '';
  let url = '';
  let redisPid = 0;
  let secret = '';
  let worker: TestWorker;
  let queue: Queue;
  let redis: Redis;

  /** The CLI in `dir` (a --distributed command also gets --secret-file). */
  const cli = (...args: string[]): Run => {
    const proc = spawn('node', [CLI, ...args, ...(args.includes('--distributed') ? ['--secret-file', secret] : []), '--backend', 'cpu'], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    proc.stderr!.on('data', (b) => (err += b));
    return { proc, done: new Promise((res) => proc.on('exit', (code) => res({ code, err }))) };
  };
  const ok = async (...args: string[]): Promise<string> => {
    const r = await cli(...args).done;
    expect(r.code, `${args.join(' ')}: ${r.err}`).toBe(0);
    return r.err;
  };
  const dedup = (input: string, out: string, threshold = '0.99', ...extra: string[]): Run =>
    cli('dedup', '--input', input, '--metric', 'cosine', '--threshold', threshold, '--out', out, '--distributed', url, '--tile-rows', '200', ...extra);
  /** The parent jobs waiting for their children. */
  const parents = (): Promise<string[]> => redis.zrange('bull:webgpu-knn:waiting-children', 0, -1);

  /**
   * Starts `start()` with the queue paused; once its parent job is queued, calls `whileHeld` with
   * the run and the parent's id, then resumes the queue; returns the parent's id.
   */
  const held = async (start: () => Run, whileHeld: (run: Run, parent: string) => Promise<void>): Promise<{ run: Run; parent: string }> => {
    await queue.pause();
    try {
      const before = new Set(await parents());
      const run = start();
      let exited = false;
      void run.done.then(() => (exited = true));
      for (;;) {
        const parent = (await parents()).find((id) => !before.has(id));
        if (parent !== undefined) {
          await whileHeld(run, parent);
          return { run, parent };
        }
        if (exited) throw new Error(`the run ended before its jobs were queued: ${(await run.done).err}`);
        await new Promise((res) => setTimeout(res, 20));
      }
    } finally {
      await queue.resume();
    }
  };
  /** Resolves with the parent job's final state once it has one. */
  const settled = async (parent: string): Promise<string> => {
    for (;;) {
      const state = await queue.getJobState(parent);
      if (state === 'completed' || state === 'failed' || state === 'unknown') return state;
      await new Promise((res) => setTimeout(res, 20));
    }
  };
  /** What someone with only Redis access does to a parent job: moves it to completed (returning `value`), or to failed (with `reason`). */
  const forge = async (parent: string, to: { value: object } | { reason: string }): Promise<void> => {
    const key = `bull:webgpu-knn:${parent}`;
    await redis.zrem('bull:webgpu-knn:waiting-children', parent);
    if ('value' in to) {
      await redis.hset(key, 'returnvalue', JSON.stringify(to.value), 'finishedOn', Date.now());
      await redis.zadd('bull:webgpu-knn:completed', Date.now(), parent);
    } else {
      await redis.hset(key, 'failedReason', to.reason, 'finishedOn', Date.now());
      await redis.zadd('bull:webgpu-knn:failed', Date.now(), parent);
    }
  };
  const runFolders = (): string[] => readdirSync(dir).filter((f) => /\.webgpu-knn-(tiles|shards)-/.test(f));
  const bytes = (name: string): Buffer => readFileSync(join(dir, name));
  const killed = (run: Run): Promise<unknown> => (run.proc.kill('SIGKILL'), run.done);

  beforeAll(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'webgpu-knn-producer-')));
    ({ url, pid: redisPid } = startRedis());
    secret = writeSecret(join(dir, 'secret'));
    // 600 x 16 with a near-copy every 50 rows: pairs at cosine 0.99, and many more at 0.5.
    const x = randomFloats(600 * 16, 3);
    for (let r = 0; r < 600; r += 50) for (let t = 0; t < 16; t++) x[r * 16 + t] = x[((r + 301) % 600) * 16 + t] * 1.001;
    writeVectors(join(dir, 'x.fvecs'), x, 600, 16);
    writeVectors(join(dir, 'q.fvecs'), x.subarray(0, 100 * 16), 100, 16);
    worker = startWorker(url, dir, secret, ['--lock-ms', '1000']);
    queue = new Queue('webgpu-knn', { connection: { url } });
    redis = new Redis(url);
    await Promise.all([ok('build', '--input', 'x.fvecs', '--out', 'm.json', '--shards', '2'), ok('build', '--input', 'x.fvecs', '--out', 'plain.idx')]);
  }, 60_000);

  afterAll(async () => {
    await queue?.close();
    redis?.disconnect();
    if (worker) stopWorker(worker);
    if (redisPid) process.kill(redisPid);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('item 1: a SIGKILLed dedup whose output a newer command then wrote never overwrites it; the newer command removed its folder', async () => {
    const { run, parent } = await held(() => dedup('x.fvecs', 'p1.csv'), async (r) => {
      await killed(r);
      expect(runFolders().filter((f) => f.startsWith('.p1.csv.'))).toHaveLength(1);
      const err = await ok('dedup', '--input', 'x.fvecs', '--metric', 'cosine', '--threshold', '0.5', '--out', 'p1.csv');
      expect(err).toMatch(/removed \S+\.p1\.csv\.webgpu-knn-tiles-\S+, a tiles folder left by an interrupted run/);
    });
    const newer = bytes('p1.csv');
    expect(newer.toString().split('\n').length, 'the newer (0.5) output holds many pairs').toBeGreaterThan(100);
    expect(await settled(parent)).toBe('failed');
    expect(bytes('p1.csv').equals(newer), "the killed run's jobs left the newer output alone").toBe(true);
    expect(run.proc.signalCode).toBe('SIGKILL');
  }, 60_000);

  it("item 1: a SIGKILLed run's jobs are refused by a worker of its host (its pid is gone); its folder stays until a command writing that output removes it", async () => {
    const { parent } = await held(() => dedup('x.fvecs', 'p2.csv'), async (r) => void (await killed(r)));
    const from = worker.log().length;
    expect(await settled(parent)).toBe('failed');
    await worker.waitFor(/refused job self-join-tile \S+: the run that queued it has ended: its producer \(pid \d+ on \S+\) is gone/, from);
    expect(existsSync(join(dir, 'p2.csv'))).toBe(false);
    expect(runFolders().filter((f) => f.startsWith('.p2.csv.'))).toHaveLength(1);
    // A search writing p2.csv (any command writing it) removes the folder.
    const err = await ok('search', '--index', 'plain.idx', '--queries', 'q.fvecs', '--k', '2', '--out', 'p2.csv');
    expect(err).toMatch(/removed \S+\.p2\.csv\.webgpu-knn-tiles-\S+, a tiles folder left by an interrupted run/);
    expect(runFolders().filter((f) => f.startsWith('.p2.csv.'))).toEqual([]);
  }, 60_000);

  it('item 1: the same for a sharded search: a plain search writes nn.csv, the killed search leaves it alone', async () => {
    const { parent } = await held(
      () => cli('search', '--index', 'm.json', '--queries', 'q.fvecs', '--k', '3', '--out', 'nn.csv', '--distributed', url),
      async (r) => {
        await killed(r);
        await ok('search', '--index', 'plain.idx', '--queries', 'q.fvecs', '--k', '5', '--out', 'nn.csv');
      },
    );
    const newer = bytes('nn.csv');
    expect(await settled(parent)).toBe('failed');
    expect(bytes('nn.csv').equals(newer)).toBe(true);
  }, 60_000);

  it('item 1: a finished dedup-reduce replayed from Redis while its folder exists (its producer killed before removing it) is refused', async () => {
    const { run, parent } = await held(() => dedup('x.fvecs', 'p3.csv'), async () => {});
    const r = await run.done;
    expect(r.code, r.err).toBe(0);
    expect(await settled(parent)).toBe('completed');
    const written = bytes('p3.csv');
    // The folder as it was, as if the producer had been SIGKILLed between the reduce and its cleanup.
    const reduce = (await queue.getJobs(['completed'])).find((j) => j.id === parent)!;
    const tiles = JSON.parse((reduce.data as { body: string }).body).tiles as string;
    mkdirSync(tiles);
    writeFileSync(join(dir, 'p3.csv'), 'i,j,score\n');
    const replay = await queue.add(reduce.name, reduce.data);
    const from = worker.log().length;
    await worker.waitFor(new RegExp(`refused job dedup-reduce ${replay.id}: the run that queued it has ended: its producer \\(pid ${run.proc.pid} on \\S+\\) is gone`), from);
    expect(readFileSync(join(dir, 'p3.csv'), 'utf8'), 'the replay wrote nothing').toBe('i,j,score\n');
    expect(written.toString().split('\n').length).toBeGreaterThan(2);
    rmSync(tiles, { recursive: true });
  }, 60_000);

  it('item 2: a dedup whose parent is forged completed in Redis fails in one line (exit 1), nothing written', async () => {
    const { run } = await held(() => dedup('x.fvecs', 'f1.csv', '0.99', '--clusters', 'f1.json'), async (_, parent) => forge(parent, { value: { pairs: 0, candidates: 0, clusters: 0, drop: 0 } }));
    const r = await run.done;
    expect(r.code, r.err).toBe(1);
    expect(lastLine(r.err)).toMatch(/^webgpu-knn dedup: the workers reported the run done but .+: was Redis tampered with\?$/);
    expect(r.err).not.toMatch(/wrote /);
    expect(existsSync(join(dir, 'f1.csv'))).toBe(false);
    expect(existsSync(join(dir, 'f1.json'))).toBe(false);
    expect(runFolders().filter((f) => f.startsWith('.f1.csv.'))).toEqual([]);
  }, 60_000);

  it('item 2: a sharded search forged completed fails in one line (exit 1), nothing written', async () => {
    const { run } = await held(() => cli('search', '--index', 'm.json', '--queries', 'q.fvecs', '--k', '3', '--out', 'f2.npy', '--distributed', url), async (_, parent) => forge(parent, { value: { rows: 100 } }));
    const r = await run.done;
    expect(r.code, r.err).toBe(1);
    expect(lastLine(r.err)).toMatch(/^webgpu-knn search: the workers reported the run done but .+: was Redis tampered with\?$/);
    expect(existsSync(join(dir, 'f2.npy'))).toBe(false);
  }, 60_000);

  it("item 2: build --shards --distributed forged completed fails in one line (exit 1) and leaves the previous manifest's shards", async () => {
    await ok('build', '--input', 'x.fvecs', '--out', 'fb.json', '--shards', '3');
    const before = readFileSync(join(dir, 'fb.json'), 'utf8');
    await ok('search', '--index', 'fb.json', '--queries', 'q.fvecs', '--k', '3', '--out', 'fb-before.csv');
    const { run } = await held(() => cli('build', '--input', 'x.fvecs', '--out', 'fb.json', '--shards', '3', '--distributed', url), async (_, parent) => forge(parent, { value: { shards: 3 } }));
    const r = await run.done;
    expect(r.code, r.err).toBe(1);
    expect(lastLine(r.err)).toMatch(/^webgpu-knn build: the workers reported the build done but .+: was Redis tampered with\?$/);
    expect(readFileSync(join(dir, 'fb.json'), 'utf8')).toBe(before);
    await ok('search', '--index', 'fb.json', '--queries', 'q.fvecs', '--k', '3', '--out', 'fb-after.csv');
    expect(bytes('fb-after.csv').equals(bytes('fb-before.csv'))).toBe(true);
  }, 60_000);

  it('item 3: an input rewritten in place (same size) while the run is queued: dedup, sharded search and build --shards fail naming it, exit 1', async () => {
    const rewrite = (name: string): void => {
      const b = bytes(name);
      // Row 5 becomes row 0 (the same size): a pair the plan's file does not have.
      b.copy(b, 5 * 68, 0, 68);
      writeFileSync(join(dir, name), b);
    };
    for (const [name, start] of [
      ['d3.fvecs', () => dedup('d3.fvecs', 'd3.csv')],
      ['q3.fvecs', () => cli('search', '--index', 'm.json', '--queries', 'q3.fvecs', '--k', '3', '--out', 'd3.npy', '--distributed', url)],
      ['b3.fvecs', () => cli('build', '--input', 'b3.fvecs', '--out', 'd3.json', '--shards', '2', '--distributed', url)],
    ] as const) {
      writeFileSync(join(dir, name), bytes(name === 'q3.fvecs' ? 'q.fvecs' : 'x.fvecs'));
      const { run } = await held(start, async () => rewrite(name));
      const r = await run.done;
      expect(r.code, `${name}: ${r.err}`).toBe(1);
      expect(lastLine(r.err), name).toMatch(new RegExp(`^webgpu-knn \\S+: ${join(dir, name).replace(/\./g, '\\.')}: the file changed since the run started`));
    }
    expect(['d3.csv', 'd3.npy', 'd3.json'].filter((f) => existsSync(join(dir, f)))).toEqual([]);
  }, 60_000);

  it("item 7: a temporary file of the output left by a dead process of this host is removed once the run is done", async () => {
    const dead = spawnSync('node', ['-e', '']).pid!;
    // The name a dead process's temporary file of t.csv has: this process's own, with its pid.
    const stale = sideFile(join(dir, 't.csv'), 'tmp').replace(`-${process.pid}-`, `-${dead}-`);
    const { run } = await held(() => dedup('x.fvecs', 't.csv'), async () => writeFileSync(stale, 'a partial output'));
    const r = await run.done;
    expect(r.code, r.err).toBe(0);
    expect(existsSync(stale)).toBe(false);
    expect(r.err).toContain(`removed ${stale}, a temporary file left by an interrupted run`);
  }, 60_000);

  it('item 9: a job name from Redis holding a newline and an ANSI escape is printed escaped, in one line', async () => {
    const from = worker.log().length;
    const job = await queue.add('self-join-tile\nworker: job dedup-reduce 99 completed\x1b[31m', {});
    await worker.waitFor(new RegExp(`refused job .* ${job.id}: no such job kind`), from);
    const log = worker.log().slice(from);
    expect(log).not.toMatch(/^worker: job dedup-reduce 99 completed/m);
    expect(log).not.toContain('\x1b');
    expect(log).toContain('self-join-tile\\nworker: job dedup-reduce 99 completed\\x1b[31m');
  }, 60_000);

  it("item 9: a failure reason forged in Redis is printed by the command escaped, in one line", async () => {
    const { run } = await held(() => dedup('x.fvecs', 'f9.csv'), async (_, parent) => forge(parent, { reason: 'it broke\nwebgpu-knn dedup: wrote f9.csv\x1b[31m' }));
    const r = await run.done;
    expect(r.code).toBe(1);
    expect(r.err).not.toContain('\x1b');
    expect(r.err).not.toMatch(/^webgpu-knn dedup: wrote/m);
    expect(lastLine(r.err)).toBe('webgpu-knn dedup: it broke\\nwebgpu-knn dedup: wrote f9.csv\\x1b[31m');
  }, 60_000);

  it('item 12: an --out the workers would refuse (a newline in it) is refused before anything is queued, exit 2', async () => {
    const jobs = await queue.getJobCounts();
    const r = await dedup('x.fvecs', 'new\nline.csv').done;
    expect(r.code, r.err).toBe(2);
    expect(lastLine(r.err)).toMatch(/^webgpu-knn dedup: .*out: expected an absolute path ending in \.csv, \.jsonl .*got ".*new\\nline\.csv"/);
    // A build's jobs are checked before it trains.
    const b = await cli('build', '--input', 'x.fvecs', '--out', 'new\nline.json', '--shards', '2', '--distributed', url).done;
    expect(b.code, b.err).toBe(2);
    expect(lastLine(b.err)).toMatch(/^webgpu-knn build: the workers would refuse this run's build-manifest job: manifest: expected an absolute path ending in \.json /);
    expect(await queue.getJobCounts(), 'nothing queued').toEqual(jobs);
    expect(runFolders().filter((f) => f.includes('line.csv'))).toEqual([]);
  }, 60_000);
});


describe('every command that writes an output removes the run folders of that output whose producer is gone from this host', () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'webgpu-knn-leftover-')));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  writeVectors(join(dir, 'x.fvecs'), randomFloats(200 * 8, 4), 200, 8);

  it('build, knn-graph, range-search and remove (one process, no Redis): a dead pid\'s folder goes, a live one\'s and another host\'s stay', () => {
    const dead = spawnSync('node', ['-e', '']).pid!;
    const run = (...args: string[]): string => {
      const r = spawnSync('node', [CLI, ...args, '--backend', 'cpu'], { cwd: dir, encoding: 'utf8' });
      expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      return r.stderr;
    };
    const plant = (out: string, kind: string, host: string, pid: number): string => {
      const f = join(dir, `.${out}.webgpu-knn-${kind}-${host}-${pid}-0123abcd`);
      mkdirSync(f);
      writeFileSync(join(f, 'heartbeat'), '');
      return f;
    };
    for (const [out, args] of [
      ['i.idx', ['build', '--input', 'x.fvecs', '--out', 'i.idx']],
      ['g.npy', ['knn-graph', '--input', 'x.fvecs', '--k', '2', '--out', 'g.npy']],
      ['r.csv', ['range-search', '--index', 'i.idx', '--queries', 'x.fvecs', '--radius', '0.5', '--out', 'r.csv']],
      ['i.idx', ['remove', '--index', 'i.idx', '--ids', 'ids.txt']],
    ] as const) {
      writeFileSync(join(dir, 'ids.txt'), '0\n');
      const gone = [plant(out, 'tiles', hostname(), dead), plant(out, 'shards', hostname(), dead)];
      const stay = [plant(out, 'tiles', hostname(), process.pid), plant(out, 'tiles', 'another-host', dead)];
      const err = run(...args);
      for (const f of gone) expect(err, args[0]).toContain(`removed ${f}, a ${f.includes('-tiles-') ? 'tiles' : 'shards'} folder left by an interrupted run`);
      expect([...gone, ...stay].filter((f) => existsSync(f)), args[0]).toEqual(stay);
      for (const f of stay) rmSync(f, { recursive: true });
    }
  });
});

describe('the jobs that write final outputs check their producer again right before they commit', () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'webgpu-knn-commit-')));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  writeVectors(join(dir, 'x.fvecs'), randomFloats(600 * 16, 3), 600, 16);
  /** A run folder of output `out` whose producer is on another host and last refreshed its heartbeat two minutes ago. */
  const remoteRun = (out: string): string => {
    const tiles = join(dir, `.${out}.webgpu-knn-tiles-another-host-1-0123abcd`);
    mkdirSync(tiles);
    writeFileSync(join(tiles, 'heartbeat'), '');
    const old = new Date(Date.now() - 120_000);
    utimesSync(join(tiles, 'heartbeat'), old, old);
    return tiles;
  };

  it('dedup-reduce: its producer gone (a stale heartbeat), it confirms the pairs but writes nothing', async () => {
    const tiles = remoteRun('u.csv');
    writeCheckedFile(join(tiles, '0-0.pairs'), new Uint32Array(0));
    const job = { input: inputFile(join(dir, 'x.fvecs')), metric: 'cosine' as const, threshold: 0.99, d: 16, tiles, maxCandidates: null, n: 600, starts: [0, 600], out: join(dir, 'u.csv') };
    await expect(runReduce(job)).rejects.toThrow(/the run that queued it has ended: its producer on another-host has not refreshed its heartbeat .* for 1\d\d s/);
    expect(existsSync(join(dir, 'u.csv'))).toBe(false);
  });

  it('search-merge: the same', async () => {
    const tiles = remoteRun('v.npy');
    // One query block of 2 rows, one shard, kk = 1: labels (float64), distances (float32), scores (float64).
    writeCheckedFile(join(tiles, '0-0.knn'), Buffer.concat([Buffer.from(new Float64Array([3, 4]).buffer), Buffer.from(new Float32Array([1, 2]).buffer), Buffer.from(new Float64Array([1, 2]).buffer)]));
    const header = { type: 'Flat' as const, nlist: 0, dim: 16, metric: 'l2' as const, nprobe: 0 };
    const shards = [{ path: join(dir, 's.idx'), bytes: 1, sha256: '0'.repeat(64), place: 0, firstRow: 0, rows: 600, rowIds: true, header }];
    const job = { shards, metric: 'l2' as const, queries: inputFile(join(dir, 'x.fvecs')), starts: [0, 2], kk: 1, tiles, out: join(dir, 'v.npy'), k: 1, excludeSelf: false };
    await expect(runSearchMerge(job)).rejects.toThrow(/the run that queued it has ended: its producer on another-host has not refreshed its heartbeat/);
    expect(existsSync(join(dir, 'v.npy'))).toBe(false);
  });

  it('build-manifest: its producer killed (the lock still holds its pid, gone from this host), no manifest is written', async () => {
    const dead = spawnSync('node', ['-e', '']).pid!;
    const lockPath = join(dir, '.w.json.webgpu-knn-lock');
    const owner = `${JSON.stringify({ pid: dead, host: hostname(), since: new Date().toISOString(), purpose: 'build --shards' })}\n`;
    writeFileSync(lockPath, owner);
    writeFileSync(join(dir, 'w.deadbeef.shard-0.idx'), 'a shard');
    const job: BuildManifestJob = {
      manifest: join(dir, 'w.json'),
      draft: { format: 'webgpu-knn-shards', version: 1, dim: 16, metric: 'l2', type: 'Flat', nprobe: null, ntotal: 600, rowIds: true, input: { path: join(dir, 'x.fvecs'), bytes: 0, mtimeMs: 0 } },
      shards: [{ file: 'w.deadbeef.shard-0.idx', firstRow: 0, rows: 600 }],
      lock: { path: lockPath, owner },
    };
    await expect(runBuildManifest(job)).rejects.toThrow(`the build that queued it has ended: its producer (pid ${dead} on ${hostname()}) is gone`);
    expect(existsSync(join(dir, 'w.json'))).toBe(false);
  });
});
