/**
 * Sharded search and kNN graph on a loopback Redis with three CPU workers: `search --index
 * MANIFEST --distributed` writes the bytes of the unsharded search (Flat and IVF), and
 * `knn-graph --distributed` the bytes of `knn-graph`. Without redis-server the suite skips with
 * the reason, unless WEBGPU_REQUIRED=1 (CI): then it fails.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeVectors } from '../../src/io/vectors.js';
import { randomFloats, randomSmallInts } from '../../src/common/random.js';
import { CLI, type TestWorker, heldRuns, redisMissing, startRedis, startWorker, stopWorker, writeSecret } from '../helpers/redis.js';


const missing = redisMissing('sharded suite');

describe.skipIf(missing !== null)('sharded search and knn-graph --distributed', () => {
  let dir = '';
  let url = '';
  let redisPid = 0;
  let secret = '';
  const workers: TestWorker[] = [];
  const logs = (): string[] => workers.map((w) => w.log());
  /** The CLI in `dir`; a --distributed run also gets --secret-file. */
  const cli = (...args: string[]) =>
    new Promise<string>((res, rej) => {
      const c = spawn('node', [CLI, ...args, ...(args.includes('--distributed') ? ['--secret-file', secret] : [])], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      c.stderr.on('data', (b) => (err += b));
      c.on('exit', (code) => (code === 0 ? res(err) : rej(new Error(`${args.join(' ')}: exit ${code}: ${err}`))));
    });
  const bytes = (name: string): Buffer => readFileSync(join(dir, name));

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-dist-shards-'));
    ({ url, pid: redisPid } = startRedis());
    secret = writeSecret(join(dir, 'secret'));
    // Small integers: many neighbours at equal distance across shards (see test/cli/shards.test.ts).
    const n = 2400;
    const d = 8;
    const x = randomSmallInts(n * d, 9, 7);
    for (let r = 0; r < n; r += 100) x.copyWithin(r * d, ((r + 1200) % n) * d, ((r + 1200) % n + 1) * d);
    writeVectors(join(dir, 'x.fvecs'), x, n, d);
    writeVectors(join(dir, 'q.fvecs'), x.subarray(0, 500 * d), 500, d);
    // Rows of d = 256 for the kill test: a job there takes a good part of a second on the CPU
    // backend, so that the kill lands while the worker holds it, not after it has finished.
    writeVectors(join(dir, 'wide.fvecs'), randomFloats(2400 * 256, 11), 2400, 256);
    // A short lock, so that the job of the worker killed below is re-run within seconds.
    for (let k = 0; k < 3; k++) workers.push(startWorker(url, dir, secret, ['--lock-ms', '1500']));
    await Promise.all([
      cli('build', '--input', 'x.fvecs', '--out', 'flat.idx', '--backend', 'cpu'),
      cli('build', '--input', 'x.fvecs', '--out', 'flat.json', '--shards', '3', '--backend', 'cpu'),
      cli('build', '--input', 'x.fvecs', '--out', 'ivf.idx', '--type', 'IVF12,Flat', '--nprobe', '3', '--backend', 'cpu'),
      cli('build', '--input', 'x.fvecs', '--out', 'ivf.json', '--shards', '3', '--type', 'IVF12,Flat', '--nprobe', '3', '--backend', 'cpu'),
      cli('build', '--input', 'wide.fvecs', '--out', 'wide.idx', '--backend', 'cpu'),
      cli('build', '--input', 'wide.fvecs', '--out', 'wide.json', '--shards', '3', '--backend', 'cpu'),
    ]);
  }, 60_000);

  afterAll(() => {
    for (const w of workers) stopWorker(w);
    if (redisPid) process.kill(redisPid);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const type of ['flat', 'ivf']) {
    it(`search --index MANIFEST --distributed writes the unsharded search's bytes (${type})`, async () => {
      await cli('search', '--index', `${type}.idx`, '--queries', 'q.fvecs', '--k', '15', '--out', `${type}-one.npy`, '--distances', `${type}-one-d.npy`, '--backend', 'cpu');
      // 200-row query blocks: 3 blocks x 3 shards = 9 search-shard jobs.
      await cli('search', '--index', `${type}.json`, '--queries', 'q.fvecs', '--k', '15', '--out', `${type}-dist.npy`, '--distances', `${type}-dist-d.npy`, '--distributed', url, '--query-rows', '200');
      expect(bytes(`${type}-dist.npy`).equals(bytes(`${type}-one.npy`))).toBe(true);
      expect(bytes(`${type}-dist-d.npy`).equals(bytes(`${type}-one-d.npy`))).toBe(true);
      expect(readdirSync(dir).filter((f) => f.includes('webgpu-knn-tiles')), 'the merge removed its tiles').toEqual([]);
    }, 60_000);
  }

  it('the workers ran the search-shard jobs between them, and the merge', () => {
    const all = logs().join('');
    expect(all.match(/job search-shard \S+ completed/g)?.length).toBe(18);
    expect(all.match(/job search-merge \S+ completed/g)?.length).toBe(2);
  });

  it('two identical sharded searches at once (the same output) both succeed, each in a tiles folder of its own', async () => {
    const search = () => cli('search', '--index', 'flat.json', '--queries', 'q.fvecs', '--k', '15', '--out', 'twice.npy', '--distances', 'twice-d.npy', '--distributed', url, '--query-rows', '100');
    let during: string[] = [];
    await heldRuns(url, () => [search(), search()], () => (during = readdirSync(dir).filter((f) => f.includes('.twice.npy.webgpu-knn-tiles-'))));
    expect(during, 'while both runs are queued, each has its folder').toHaveLength(2);
    expect(bytes('twice.npy').equals(bytes('flat-one.npy'))).toBe(true);
    expect(bytes('twice-d.npy').equals(bytes('flat-one-d.npy'))).toBe(true);
    expect(readdirSync(dir).filter((f) => f.includes('webgpu-knn-tiles')), 'each run removed its folder').toEqual([]);
  }, 60_000);

  it('knn-graph --distributed writes the bytes of knn-graph (IVF, 4 shards), and removes its shards', async () => {
    await cli('knn-graph', '--input', 'x.fvecs', '--type', 'IVF12,Flat', '--nprobe', '4', '--k', '10', '--out', 'g-one.npy', '--distances', 'g-one-d.npy', '--backend', 'cpu');
    await cli('knn-graph', '--input', 'x.fvecs', '--type', 'IVF12,Flat', '--nprobe', '4', '--k', '10', '--out', 'g-dist.npy', '--distances', 'g-dist-d.npy', '--distributed', url, '--shards', '4', '--query-rows', '800', '--backend', 'cpu');
    expect(bytes('g-dist.npy').equals(bytes('g-one.npy'))).toBe(true);
    expect(bytes('g-dist-d.npy').equals(bytes('g-one-d.npy'))).toBe(true);
    expect(logs().join('').match(/job build-shard \S+ completed/g)?.length).toBe(4);
    expect(readdirSync(dir).filter((f) => f.startsWith('.g-dist')), 'shards and tiles removed').toEqual([]);
    expect(existsSync(join(dir, 'g-dist.npy'))).toBe(true);
  }, 60_000);

  it('knn-graph --index MANIFEST --distributed writes the bytes of knn-graph (Flat)', async () => {
    await cli('knn-graph', '--input', 'x.fvecs', '--k', '5', '--out', 'gf-one.csv', '--backend', 'cpu');
    await cli('knn-graph', '--index', 'flat.json', '--k', '5', '--out', 'gf-dist.csv', '--distributed', url);
    expect(bytes('gf-dist.csv').toString()).toBe(bytes('gf-one.csv').toString());
  }, 60_000);

  it('build --shards --distributed writes the shard files of the local build (build-shard jobs)', async () => {
    const before = (logs().join('').match(/job build-shard \S+ completed/g) ?? []).length;
    await cli('build', '--input', 'x.fvecs', '--out', 'ivfd.json', '--shards', '3', '--type', 'IVF12,Flat', '--nprobe', '3', '--backend', 'cpu', '--distributed', url);
    expect((logs().join('').match(/job build-shard \S+ completed/g) ?? []).length - before).toBe(3);
    const manifest = JSON.parse(bytes('ivfd.json').toString());
    const local = JSON.parse(bytes('ivf.json').toString());
    for (let s = 0; s < 3; s++) {
      expect(manifest.shards[s].file).toMatch(new RegExp(`^ivfd\\.[0-9a-f]{8}\\.shard-${s}\\.idx$`));
      expect(bytes(manifest.shards[s].file).equals(bytes(local.shards[s].file)), `shard ${s}`).toBe(true);
    }
    for (const e of [...manifest.shards, ...local.shards]) e.file = '';
    expect(manifest).toEqual(local);
    expect(readdirSync(dir).filter((f) => f.includes('trained')), 'the trained file is removed').toEqual([]);
  }, 60_000);

  it('a shard changed after its manifest fails the distributed search with the reason, nothing written', async () => {
    const name = JSON.parse(bytes('ivfd.json').toString()).shards[1].file;
    const bad = bytes(name);
    bad[bad.length - 40] ^= 1;
    writeFileSync(join(dir, name), bad);
    await expect(cli('search', '--index', 'ivfd.json', '--queries', 'q.fvecs', '--k', '5', '--out', 'bad.npy', '--distributed', url)).rejects.toThrow(
      /exit 1: [^]*shard file \S*ivfd\.[0-9a-f]{8}\.shard-1\.idx has SHA-256 [0-9a-f]{64}; the manifest says [0-9a-f]{64}/,
    );
    expect(existsSync(join(dir, 'bad.npy'))).toBe(false);
  }, 60_000);

  it('a worker SIGKILLed while it holds a search-shard job: another runs it, the same bytes', async () => {
    // Whichever worker first reports taking a job of this search is killed there and then.
    let killed = '';
    let victim = -1;
    workers.forEach((w, k) =>
      void w.waitFor(/job search-shard (\S+) started/, w.log().length).then((m) => {
        if (killed) return;
        killed = m[1];
        victim = k;
        w.proc.kill('SIGKILL');
      }, () => {}),
    );
    await cli('search', '--index', 'wide.json', '--queries', 'wide.fvecs', '--k', '15', '--out', 'killed.npy', '--distances', 'killed-d.npy', '--distributed', url, '--query-rows', '800');
    expect(killed, 'a worker took a job').not.toBe('');
    expect(logs()[victim], 'the killed worker never finished it').not.toContain(`job search-shard ${killed} completed`);
    expect(logs().filter((_, k) => k !== victim).join(''), 'another worker ran it again').toContain(`job search-shard ${killed} completed`);
    await cli('search', '--index', 'wide.idx', '--queries', 'wide.fvecs', '--k', '15', '--out', 'wide-one.npy', '--distances', 'wide-one-d.npy', '--backend', 'cpu');
    expect(bytes('killed.npy').equals(bytes('wide-one.npy'))).toBe(true);
    expect(bytes('killed-d.npy').equals(bytes('wide-one-d.npy'))).toBe(true);
  }, 60_000);
});
