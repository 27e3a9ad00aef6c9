/**
 * `build --shards` and what killed builds leave (issue 33, item 8): the build holds the manifest's
 * lock (src/io/file-lock.ts) from start to end, so a second build of one manifest is refused
 * naming the first; holding it, it removes the shard files of the manifest's naming pattern that
 * the manifest does not list, the trained index and their stale temporary files. Planted files,
 * a build really SIGKILLed in its shard phase, a build really stopped while a second one starts,
 * and a killed build's late worker jobs (run here, as a worker would) writing nothing once the
 * lock is no longer their producer's. CPU backend, no Redis.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { inputFile } from '../../src/cli/cluster/job-files.js';
import type { BuildManifestJob } from '../../src/cli/cluster/job-payloads.js';
import { runBuildManifest, runBuildShard } from '../../src/cli/cluster/shard-build.js';
import { lockFile } from '../../src/io/file-lock.js';
import { hostInName } from '../../src/io/temp-files.js';
import { writeVectors } from '../../src/io/vectors.js';
import { randomFloats, randomSmallInts } from '../../src/common/random.js';
import { CLI_MAIN, cliIn } from '../helpers/cli.js';
import { cpuBackend } from '../helpers/cpu.js';

const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-shard-build-'));
const { cli, ok } = cliIn(dir, '--backend', 'cpu');
const listed = (manifest: string): string[] => (JSON.parse(readFileSync(join(dir, manifest), 'utf8')) as { shards: { file: string }[] }).shards.map((s) => s.file);
const files = (): string[] => readdirSync(dir).sort();

afterAll(() => rmSync(dir, { recursive: true, force: true }));

writeVectors(join(dir, 'x.fvecs'), randomSmallInts(100 * 4, 21, 7), 100, 4);
writeVectors(join(dir, 'q.fvecs'), randomSmallInts(5 * 4, 22, 7), 5, 4);
// A build of 200 shards takes seconds: long enough to be caught in its shard phase.
writeVectors(join(dir, 'big.fvecs'), randomFloats(20000 * 16, 23), 20000, 16);

/** A pid no process has now. */
const deadPid = (): number => spawnSync(process.execPath, ['-e', '']).pid!;

/** Starts `build --shards 200` of big.fvecs into `manifest`, in the background. */
const bigBuild = (manifest: string): ChildProcess => spawn(process.execPath, [CLI_MAIN, 'build', '--input', 'big.fvecs', '--out', manifest, '--shards', '200', '--backend', 'cpu'], { cwd: dir, stdio: 'ignore' });

/** Resolves once `cond()` holds; rejects if `child` ends first. */
async function until(child: ChildProcess, cond: () => boolean, what: string): Promise<void> {
  while (!cond()) {
    if (child.exitCode !== null) throw new Error(`the build ended (exit ${child.exitCode}) before ${what}`);
    await new Promise((res) => setImmediate(res));
  }
}
const exited = (child: ChildProcess): Promise<number | string | null> => new Promise((res) => (child.exitCode !== null || child.signalCode !== null ? res(child.exitCode ?? child.signalCode) : child.on('exit', (code, signal) => res(code ?? signal))));

describe('build --shards removes what interrupted builds of its manifest left', () => {
  it('planted: shard files of its pattern it does not list, the trained index, stale temporaries; nothing else', () => {
    ok('build', '--input', 'x.fvecs', '--out', 'p.json', '--shards', '2');
    const dead = deadPid();
    const orphans = ['p.deadbeef.shard-0.idx', 'p.deadbeef.shard-12.idx', 'p.0badf00d.shard-1.idx', '.p.json.webgpu-knn-trained.idx', `.p.deadbeef.shard-1.idx.webgpu-knn-tmp-${hostInName()}-${dead}-ab12cd34`, `.p.deadbeef.shard-3.idx.webgpu-knn-tmp-${dead}-ab12cd34`];
    // Not of p.json's pattern (another manifest's, other spellings), or a temporary file whose process lives.
    const others = ['p.deadbeef.shard-0.idx.bak', 'p.DEADBEEF.shard-0.idx', 'p.deadbee.shard-0.idx', 'p.x.deadbeef.shard-0.idx', 'pp.deadbeef.shard-0.idx', 'q.deadbeef.shard-0.idx', 'notes.txt', `.p.deadbeef.shard-2.idx.webgpu-knn-tmp-${hostInName()}-${process.pid}-ab12cd34`, `.p.deadbeef.shard-4.idx.webgpu-knn-tmp-other%2Dhost-${dead}-ab12cd34`];
    for (const f of [...orphans, ...others]) writeFileSync(join(dir, f), 'left behind');
    const before = files();
    const err = ok('build', '--input', 'x.fvecs', '--out', 'p.json', '--shards', '3');
    for (const f of orphans.slice(0, 4)) expect(err).toContain(`removed ${join(dir, f)}, left by an interrupted build of ${join(dir, 'p.json')} (which does not list it)`);
    expect(err).toContain(`removed ${join(dir, orphans[4])}, a temporary file left by an interrupted build`);
    const now = listed('p.json');
    expect(now).toHaveLength(3);
    // Gone: the orphans, and (once the new manifest was in place) the old build's shards.
    expect(files()).toEqual([...before.filter((f) => !orphans.includes(f) && !f.match(/^p\.[0-9a-f]{8}\.shard-[01]\.idx$/)), ...now].sort());
    for (const f of others) expect(existsSync(join(dir, f)), f).toBe(true);
    for (const f of others.slice(-2)) rmSync(join(dir, f));
  });

  it('item 8: manifests whose names differ in the case of .json (man.JSON, man.json) keep each other\'s shards; orphans of neither still go', () => {
    ok('build', '--input', 'x.fvecs', '--out', 'man.JSON', '--shards', '2');
    const upper = listed('man.JSON');
    ok('search', '--index', 'man.JSON', '--queries', 'q.fvecs', '--k', '3', '--out', 'man-before.csv');
    writeFileSync(join(dir, 'man.deadbeef.shard-0.idx'), 'left by a killed build');
    const err = ok('build', '--input', 'x.fvecs', '--out', 'man.json', '--shards', '2');
    expect(err).toContain(`removed ${join(dir, 'man.deadbeef.shard-0.idx')}, left by an interrupted build`);
    for (const f of upper) expect(existsSync(join(dir, f)), f).toBe(true);
    ok('search', '--index', 'man.JSON', '--queries', 'q.fvecs', '--k', '3', '--out', 'man-after.csv');
    expect(readFileSync(join(dir, 'man-after.csv'), 'utf8')).toBe(readFileSync(join(dir, 'man-before.csv'), 'utf8'));
    // A rebuild of man.JSON removes its own old shards, and leaves man.json's.
    ok('build', '--input', 'x.fvecs', '--out', 'man.JSON', '--shards', '3');
    for (const f of upper) expect(existsSync(join(dir, f)), f).toBe(false);
    for (const f of [...listed('man.json'), ...listed('man.JSON')]) expect(existsSync(join(dir, f)), f).toBe(true);
  });

  it('a manifest that cannot be read: the files beside it are left alone, and said so', () => {
    writeFileSync(join(dir, 'u.json'), '{ "format": "webgpu-knn-shards", "version": 99 }');
    writeFileSync(join(dir, 'u.deadbeef.shard-0.idx'), 'maybe listed');
    const err = ok('build', '--input', 'x.fvecs', '--out', 'u.json', '--shards', '2');
    expect(err).toMatch(/u\.json cannot be read as a shard manifest \(.*version is 99.*\); the shard files beside it are left alone/);
    expect(existsSync(join(dir, 'u.deadbeef.shard-0.idx'))).toBe(true);
  });

  it('a build SIGKILLed in its shard phase: the old manifest still searches; the next build removes its shards, trained index and lock', async () => {
    ok('build', '--input', 'x.fvecs', '--out', 'k.json', '--shards', '3');
    const old = listed('k.json');
    ok('search', '--index', 'k.json', '--queries', 'q.fvecs', '--k', '3', '--out', 'k-before.csv');
    const killed = bigBuild('k.json');
    const orphan = (f: string): boolean => /^k\.[0-9a-f]{8}\.shard-\d+\.idx$/.test(f) && !old.includes(f);
    await until(killed, () => readdirSync(dir).some(orphan), 'its first shard was written');
    killed.kill('SIGKILL');
    expect(await exited(killed)).toBe('SIGKILL');
    const left = readdirSync(dir).filter(orphan);
    expect(left.length).toBeGreaterThan(0);
    expect(existsSync(join(dir, '.k.json.webgpu-knn-trained.idx'))).toBe(true);
    expect(existsSync(join(dir, '.k.json.webgpu-knn-lock')), 'its lock, its pid gone').toBe(true);
    expect(listed('k.json')).toEqual(old);
    ok('search', '--index', 'k.json', '--queries', 'q.fvecs', '--k', '3', '--out', 'k-after.csv');
    expect(readFileSync(join(dir, 'k-after.csv'), 'utf8')).toBe(readFileSync(join(dir, 'k-before.csv'), 'utf8'));

    const err = ok('build', '--input', 'x.fvecs', '--out', 'k.json', '--shards', '2');
    for (const f of left) expect(err).toContain(`removed ${join(dir, f)}, left by an interrupted build`);
    expect(files().filter((f) => f.startsWith('k.') || f.startsWith('.k.'))).toEqual(['k.json', ...listed('k.json')].sort());
  }, 60_000);

  it('two builds of one manifest: the second is refused naming the first, which goes on and completes', async () => {
    const first = bigBuild('c.json');
    const lock = join(dir, '.c.json.webgpu-knn-lock');
    await until(first, () => existsSync(lock) && readFileSync(lock, 'utf8').length > 0, 'it took the lock');
    first.kill('SIGSTOP');
    try {
      expect(first.exitCode, 'stopped while it holds the lock').toBeNull();
      const second = cli('build', '--input', 'x.fvecs', '--out', 'c.json', '--shards', '2');
      expect(second.code, second.err).toBe(1);
      expect(second.err).toContain(`${join(dir, 'c.json')} is being updated by another webgpu-knn (build --shards, pid ${first.pid} on `);
      expect(existsSync(lock), "the refused build leaves the first one's lock").toBe(true);
    } finally {
      first.kill('SIGCONT');
    }
    expect(await exited(first)).toBe(0);
    expect(listed('c.json')).toHaveLength(200);
    expect(existsSync(lock), 'released at its end').toBe(false);
  }, 60_000);
});

describe("a killed build's late jobs (run as a worker runs them) write nothing once the lock is not their producer's", () => {
  it('build-shard and build-manifest refuse; with the lock still their producer\'s they write', async () => {
    const manifest = join(dir, 'late.json');
    const lock = lockFile(manifest, 'build --shards');
    try {
      const owner = readFileSync(lock.lockPath, 'utf8');
      // What a killed producer's jobs carry: its lock as it was; the file now holds another build's.
      const stale = { path: lock.lockPath, owner: owner.replace(/"pid":\d+/, `"pid":${deadPid()}`) };
      const out = join(dir, 'late.deadbeef.shard-0.idx');
      const shard = { trained: { path: join(dir, 'no-such-trained.idx'), bytes: 0, mtimeMs: 0 }, input: inputFile(join(dir, 'x.fvecs')), r0: 0, r1: 50, out, lock: stale };
      await expect(runBuildShard(cpuBackend(), shard)).rejects.toThrow(`shard ${out}: the build that queued it no longer holds the lock ${lock.lockPath}`);
      expect(existsSync(out)).toBe(false);
      writeFileSync(join(dir, 'late.deadbeef.shard-1.idx'), 'a shard');
      const job: BuildManifestJob = {
        manifest,
        draft: { format: 'webgpu-knn-shards', version: 1, dim: 4, metric: 'l2', type: 'Flat', nprobe: null, ntotal: 50, rowIds: true, input: { path: join(dir, 'x.fvecs'), bytes: 0, mtimeMs: 0 } },
        shards: [{ file: 'late.deadbeef.shard-1.idx', firstRow: 0, rows: 50 }],
        lock: stale,
      };
      await expect(runBuildManifest(job)).rejects.toThrow(`manifest ${manifest}: the build that queued it no longer holds the lock`);
      expect(existsSync(manifest)).toBe(false);
      await runBuildManifest({ ...job, lock: { path: lock.lockPath, owner } });
      expect(existsSync(manifest)).toBe(true);
    } finally {
      lock.release();
    }
    // Released (the producer ended): refused too.
    await expect(runBuildManifest({ manifest, draft: {} as BuildManifestJob['draft'], shards: [], lock: { path: lock.lockPath, owner: 'x' } })).rejects.toThrow(/no longer holds the lock/);
  });
});
