/**
 * The advisory lock beside a file rewritten in place: a second locker is refused while the first
 * lives (another process, or this one), a lock whose owner is gone is taken over, and a lock is
 * only ever removed by its owner.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { lockFile, lockPathOf, withFileLock } from '../../src/io/file-lock.js';
import { killLockHolders, lockHolder } from '../helpers/lock-holder.js';
import { FileError } from '../../src/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-lock-'));
afterAll(killLockHolders);

/** A pid that existed and has exited (so that nothing runs under it now). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

describe('lockFile', () => {
  it('refuses a second lock of the same path, naming the holder, until the first is released', () => {
    const path = join(dir, 'a.idx');
    const lock = lockFile(path, 'remove');
    expect(existsSync(lockPathOf(path))).toBe(true);
    expect(() => lockFile(path, 'remove')).toThrow(FileError);
    expect(() => lockFile(path, 'remove')).toThrow(new RegExp(`a\\.idx is being updated by another webgpu-knn \\(remove, pid ${process.pid} on `));
    lock.release();
    lock.release(); // twice is harmless
    expect(existsSync(lockPathOf(path))).toBe(false);
    lockFile(path, 'remove').release();
  });

  it('takes over a lock whose owner has exited (pid gone from this host)', () => {
    const path = join(dir, 'b.idx');
    writeFileSync(lockPathOf(path), `${JSON.stringify({ pid: deadPid(), host: hostname(), since: 'then', purpose: 'remove' })}\n`);
    const lock = lockFile(path, 'remove');
    expect(JSON.parse(readFileSync(lockPathOf(path), 'utf8')).pid).toBe(process.pid);
    lock.release();
  });

  it('takes over an empty lock file (a crash between its creation and its write)', () => {
    const path = join(dir, 'c.idx');
    writeFileSync(lockPathOf(path), '');
    lockFile(path, 'remove').release();
    expect(existsSync(lockPathOf(path))).toBe(false);
  });

  it("refuses another host's lock, naming the lock file to remove", () => {
    const path = join(dir, 'd.idx');
    writeFileSync(lockPathOf(path), `${JSON.stringify({ pid: 1, host: 'elsewhere', since: 'then', purpose: 'build --shards' })}\n`);
    expect(() => lockFile(path, 'remove')).toThrow(`if that process is gone, remove ${lockPathOf(path)}`);
  });

  it("never removes a lock that is no longer its own", () => {
    const path = join(dir, 'e.idx');
    const lock = lockFile(path, 'remove');
    // Someone judged it stale and took it over meanwhile.
    const theirs = `${JSON.stringify({ pid: 1, host: 'elsewhere', since: 'now', purpose: 'remove' })}\n`;
    writeFileSync(lockPathOf(path), theirs);
    lock.release();
    expect(readFileSync(lockPathOf(path), 'utf8')).toBe(theirs);
  });

  it('withFileLock releases the lock when its work throws', async () => {
    const path = join(dir, 'f.idx');
    await expect(withFileLock(path, 'remove', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(existsSync(lockPathOf(path))).toBe(false);
  });

  it("serialises against another live process, and takes the lock once that process is SIGKILLed", async () => {
    const path = join(dir, 'g.idx');
    const c = await lockHolder(path, 'test holder');
    expect(() => lockFile(path, 'remove')).toThrow(`pid ${c.pid}`);
    const gone = new Promise((res) => c.on('exit', res));
    c.kill('SIGKILL');
    await gone;
    expect(existsSync(lockPathOf(path))).toBe(true); // SIGKILL ran no cleanup
    lockFile(path, 'remove').release();
  });
});
