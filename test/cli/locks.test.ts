/**
 * Commands that write an index file serialise on its advisory lock (src/io/file-lock.ts): `remove`
 * holds the lock of the index it rewrites (in place: --index; with --out: --out) from before it
 * reads the index until the rename, and `build` that of --out. A second writer is refused at once
 * (exit 1, one line naming the holder) and the file is left as the first writer makes it: two
 * removes started together never lose an acknowledged removal. End to end against the built CLI.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { lockPathOf } from '../../src/io/file-lock.js';
import { loadIndex } from '../../src/indexes/load-index.js';
import { writeVectors } from '../../src/io/vectors.js';
import { randomFloats } from '../../src/common/random.js';
import { cpuBackend } from '../helpers/cpu.js';
import { killLockHolders, lockHolder } from '../helpers/lock-holder.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const main = join(root, 'dist/cli/main.js');
const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-locks-'));
const at = (name: string): string => join(dir, name);
const cli = (...args: string[]) => {
  const r = spawnSync(process.execPath, [main, ...args, '--backend', 'cpu'], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, err: r.stderr };
};
/** The CLI started without waiting; resolves with its exit code and stderr. */
const started = (...args: string[]): Promise<{ code: number | null; err: string }> =>
  new Promise((res) => {
    const c = spawn(process.execPath, [main, ...args, '--backend', 'cpu'], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    c.stderr!.on('data', (b) => (err += b));
    c.on('exit', (code) => res({ code, err }));
  });

afterAll(killLockHolders);

async function release(c: ChildProcess): Promise<void> {
  const gone = new Promise((res) => c.on('exit', res));
  c.kill('SIGTERM');
  await gone;
}

/** Ids still in the saved index at `path`, of those in `ids`. */
async function stillThere(path: string, ids: number[]): Promise<number> {
  const index = await loadIndex(cpuBackend(), path);
  try {
    return await index.removeIds(BigInt64Array.from(ids, BigInt));
  } finally {
    await index.dispose();
  }
}

const d = 32;
const n = 100_000; // a 12.8 MB index: loading, removing and saving it takes long enough that two removes started together overlap
writeVectors(at('x.fvecs'), randomFloats(n * d, 5), n, d);
const evens = Array.from({ length: 500 }, (_, i) => 2 * i);
const odds = Array.from({ length: 500 }, (_, i) => 2 * i + 1);
writeFileSync(at('evens.txt'), evens.join('\n'));
writeFileSync(at('odds.txt'), odds.join('\n'));

describe('writers of one index file are serialised', () => {
  it('build writes the index and removes its lock', () => {
    const r = cli('build', '--input', 'x.fvecs', '--out', 'x.idx');
    expect(r.code, r.err).toBe(0);
    expect(existsSync(lockPathOf(at('x.idx')))).toBe(false);
  });

  it('remove (in place) is refused at once while another process holds the index, which is left as it was', async () => {
    const before = readFileSync(at('x.idx'));
    const c = await lockHolder(at('x.idx'), 'remove');
    const r = cli('remove', '--index', 'x.idx', '--ids', 'evens.txt');
    expect(r.code, r.err).toBe(1);
    expect(r.err.trim().split('\n')).toEqual([expect.stringMatching(new RegExp(`^webgpu-knn remove: .*x\\.idx is being updated by another webgpu-knn \\(remove, pid ${c.pid} on .*\\); wait for it to finish, then run this again$`))]);
    expect(r.err).not.toMatch(/backend:/); // refused before any work
    expect(readFileSync(at('x.idx')).equals(before)).toBe(true);
    await release(c);
    // Once the holder is gone, the same command runs.
    const again = cli('remove', '--index', 'x.idx', '--ids', 'evens.txt', '--out', 'y.idx');
    expect(again.code, again.err).toBe(0);
    expect(existsSync(lockPathOf(at('y.idx')))).toBe(false);
  });

  it('remove --out and build --out take the lock of the file they write', async () => {
    const c = await lockHolder(at('y.idx'), 'remove');
    const r = cli('remove', '--index', 'x.idx', '--ids', 'odds.txt', '--out', 'y.idx');
    expect(r.code, r.err).toBe(1);
    expect(r.err).toMatch(new RegExp(`y\\.idx is being updated by another webgpu-knn \\(remove, pid ${c.pid} `));
    const b = cli('build', '--input', 'x.fvecs', '--out', 'y.idx');
    expect(b.code, b.err).toBe(1);
    expect(b.err).toMatch(new RegExp(`y\\.idx is being updated by another webgpu-knn \\(remove, pid ${c.pid} `));
    expect(b.err).not.toMatch(/^\s+at /m);
    await release(c);
    // y.idx is as the earlier remove wrote it: the refused remove took none of its odd ids away.
    expect(await stillThere(at('y.idx'), odds)).toBe(500);
  });

  it('two removes of disjoint ids started together: every run that exits 0 has its ids gone', async () => {
    for (let trial = 0; trial < 2; trial++) {
      expect(cli('build', '--input', 'x.fvecs', '--out', 'race.idx').code).toBe(0);
      const [a, b] = await Promise.all([started('remove', '--index', 'race.idx', '--ids', 'evens.txt'), started('remove', '--index', 'race.idx', '--ids', 'odds.txt')]);
      const runs: [typeof a, number[]][] = [
        [a, evens],
        [b, odds],
      ];
      expect(runs.some(([r]) => r.code === 0), `${a.err}\n${b.err}`).toBe(true);
      for (const [r, ids] of runs) {
        if (r.code === 0) {
          expect(await stillThere(at('race.idx'), ids), `trial ${trial}: acknowledged (${r.err.trim().split('\n').at(-1)}) but not removed`).toBe(0);
        } else {
          expect(r.code, r.err).toBe(1);
          expect(r.err.trim().split('\n').at(-1)).toMatch(/race\.idx is being updated by another webgpu-knn \(remove, pid \d+ on /);
        }
      }
      expect(existsSync(lockPathOf(at('race.idx')))).toBe(false);
    }
  });
});

// The hostile pass's item 5: `remove --index cur.idx`, cur.idx a symbolic link to A.idx, replaced
// the link with a regular file and left A.idx with the removed vectors, and locked the link's name,
// so that a remove through the link and one of A.idx did not serialise.
describe('remove in place through a symbolic link', () => {
  const m = 2000;
  writeVectors(at('small.fvecs'), randomFloats(m * d, 6), m, d);
  mkdirSync(at('links'));
  /** Temporary and backup files, and locks of the links' own names: none should be left. */
  const leftovers = (): string[] =>
    [...readdirSync(dir), ...readdirSync(at('links'))].filter((f) => /webgpu-knn-(tmp|old)-/.test(f) || /^\.(cur|mid|b)\.idx\.webgpu-knn-lock$/.test(f));

  it("updates the file the link points to (through a chain of links, from another folder), keeps the link, and names the file it wrote", async () => {
    expect(cli('build', '--input', 'small.fvecs', '--out', 'A.idx').code).toBe(0);
    symlinkSync('A.idx', at('mid.idx'));
    symlinkSync('../mid.idx', at('links/cur.idx'));
    const r = cli('remove', '--index', 'links/cur.idx', '--ids', 'evens.txt');
    expect(r.code, r.err).toBe(0);
    expect(r.err).toContain(`ntotal ${m} -> ${m - 500}; wrote ${realpathSync(at('A.idx'))} (the file --index links/cur.idx links to)`);
    expect(lstatSync(at('links/cur.idx')).isSymbolicLink() && lstatSync(at('mid.idx')).isSymbolicLink()).toBe(true);
    expect(await stillThere(at('A.idx'), evens)).toBe(0);
    expect(leftovers()).toEqual([]);
    expect(existsSync(lockPathOf(at('A.idx')))).toBe(false);
  });

  it('a remove through the link and one of the file it points to take one lock: the second is refused', async () => {
    const before = readFileSync(at('A.idx'));
    const c = await lockHolder(at('A.idx'), 'remove');
    const r = cli('remove', '--index', 'links/cur.idx', '--ids', 'odds.txt');
    expect(r.code, r.err).toBe(1);
    expect(r.err).toMatch(new RegExp(`A\\.idx is being updated by another webgpu-knn \\(remove, pid ${c.pid} on `));
    expect(readFileSync(at('A.idx')).equals(before)).toBe(true);
    await release(c);
    // Both at once, on the 100,000-row index: every run that exits 0 has its ids gone.
    expect(cli('build', '--input', 'x.fvecs', '--out', 'B.idx').code).toBe(0);
    symlinkSync('../B.idx', at('links/b.idx'));
    const [a, b] = await Promise.all([started('remove', '--index', 'links/b.idx', '--ids', 'evens.txt'), started('remove', '--index', 'B.idx', '--ids', 'odds.txt')]);
    expect([a.code, b.code], `${a.err}\n${b.err}`).toContain(0);
    for (const [run, ids] of [[a, evens], [b, odds]] as const) {
      if (run.code === 0) expect(await stillThere(at('B.idx'), ids), run.err).toBe(0);
      else expect(run.err.trim().split('\n').at(-1)).toMatch(/B\.idx is being updated by another webgpu-knn \(remove, pid \d+ on /);
    }
    expect(lstatSync(at('links/b.idx')).isSymbolicLink()).toBe(true);
    expect(leftovers()).toEqual([]);
  });

  it('an --out that is a symbolic link is replaced by the new file, as every output is; the file it pointed to is left alone', async () => {
    symlinkSync('C.idx', at('out.idx'));
    writeFileSync(at('C.idx'), 'not written');
    expect(cli('remove', '--index', 'A.idx', '--ids', 'odds.txt', '--out', 'out.idx').code).toBe(0);
    expect(lstatSync(at('out.idx')).isFile()).toBe(true);
    expect(await stillThere(at('out.idx'), [...evens, ...odds])).toBe(0);
    symlinkSync('C.idx', at('built.idx'));
    expect(cli('build', '--input', 'small.fvecs', '--out', 'built.idx').code).toBe(0);
    expect(lstatSync(at('built.idx')).isFile()).toBe(true);
    expect(readFileSync(at('C.idx'), 'utf8')).toBe('not written');
  });
});
