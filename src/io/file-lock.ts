/**
 * Advisory locks beside a file that a command rewrites in place (an index that `remove` updates, a
 * shard manifest that `build --shards` replaces): `.NAME.webgpu-knn-lock`, created exclusively
 * (O_EXCL), holding the owner's pid, host name, start time and purpose as one JSON line.
 *
 * - Two processes that both lock a path are serialised: the second is refused at once with a
 *   FileError that names the holder (it does not wait: a writer that would silently undo another's
 *   work must not start at all).
 * - A lock whose owner is gone (SIGKILL, a crash, a power cut) is stale: when its host is this
 *   machine and its pid no longer exists, the next `lockFile` removes it and takes the lock. A
 *   lock from another host cannot be checked from here: the message names the file to remove.
 * - Locks are released by `release()`, and on any exit of the process (including SIGINT / SIGTERM
 *   under the CLI, whose handlers call process.exit).
 *
 * Advisory means: only webgpu-knn's own writers take it. Readers never do (an index is replaced by
 * a rename, so a reader sees the old file or the new one, never a mix).
 *
 * A lock belongs to a directory entry: the one the rename replaces. A file updated in place through
 * a symbolic link is the link's target (`inPlaceTarget`), so that is the path to lock and write
 * beside; an output written anew replaces the path it is given, a link included, and locks that.
 */
import { closeSync, linkSync, lstatSync, openSync, readFileSync, realpathSync, renameSync, rmSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileError } from './file-error.js';
import { processAlive } from './temp-files.js';
import { FileError } from '../errors.js';

/** What a lock file holds. */
interface LockOwner {
  pid: number;
  host: string;
  /** ISO time the lock was taken. */
  since: string;
  /** What the owner is doing ("remove", "build --shards"). */
  purpose: string;
}

export interface FileLock {
  /** The lock file. */
  readonly lockPath: string;
  /** Removes the lock file (if it is still this lock's); safe to call twice. */
  release(): void;
}

const held = new Set<FileLock>();
let hooked = false;

/**
 * The file an update of `path` in place rewrites: `path` itself, or, where it is a symbolic link
 * (or a chain of them), the file it leads to (its real path), so that the link stays a link and its
 * target is what changes, and two updates through different names of one file take one lock.
 * A path that does not exist, or a link that leads nowhere, is returned as given (reading it then
 * says why it cannot be read).
 */
export function inPlaceTarget(path: string): string {
  try {
    return lstatSync(path).isSymbolicLink() ? realpathSync(path) : path;
  } catch {
    return path;
  }
}

/** The lock file of `path`. */
export function lockPathOf(path: string): string {
  return join(dirname(path), `.${basename(path)}.webgpu-knn-lock`);
}

function readOwner(lockPath: string): LockOwner | null {
  try {
    const o = JSON.parse(readFileSync(lockPath, 'utf8')) as Partial<LockOwner>;
    if (typeof o.pid === 'number' && typeof o.host === 'string') return { pid: o.pid, host: o.host, since: String(o.since), purpose: String(o.purpose) };
  } catch {
    // unreadable or half-written: treated below
  }
  return null;
}

/** Sleeps `ms` without yielding (lockFile is synchronous, as the writes it guards). */
function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Moves a stale lock out of the way: renamed aside (atomic: of two processes that both found it
 * stale, one renames it), then checked; a lock taken meanwhile by a live process is put back.
 */
function removeStale(lockPath: string): void {
  const aside = `${lockPath}-stale-${process.pid}`;
  try {
    renameSync(lockPath, aside);
  } catch {
    return; // another process moved it first
  }
  const owner = readOwner(aside);
  if (owner && owner.host === hostname() && processAlive(owner.pid)) {
    try {
      linkSync(aside, lockPath);
    } catch {
      // a third process took the lock meanwhile: it holds it
    }
  }
  rmSync(aside, { force: true });
}

/**
 * Takes the lock of `path` for `purpose`, or throws a FileError naming the process that holds it.
 * A stale lock (its owner's pid gone from this host, or a file left empty by a crash between its
 * creation and its first write) is removed and taken.
 */
export function lockFile(path: string, purpose: string): FileLock {
  const lockPath = lockPathOf(path);
  const me: LockOwner = { pid: process.pid, host: hostname(), since: new Date().toISOString(), purpose };
  const text = `${JSON.stringify(me)}\n`;
  for (let attempt = 0; ; attempt++) {
    let fd: number;
    try {
      fd = openSync(lockPath, 'wx', 0o644);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw fileError(lockPath, `cannot create the lock of ${path}`, err);
      let owner = readOwner(lockPath);
      if (!owner) {
        // Created this instant and not yet written, or torn by a crash: look again shortly.
        pause(50);
        owner = readOwner(lockPath);
      }
      const stale = owner === null || (owner.host === me.host && !processAlive(owner.pid));
      if (stale && attempt < 3) {
        removeStale(lockPath);
        continue;
      }
      throw new FileError(
        owner
          ? `${path} is being updated by another webgpu-knn (${owner.purpose}, pid ${owner.pid} on ${owner.host}, since ${owner.since}); ` +
              (owner.host === me.host ? 'wait for it to finish, then run this again' : `wait for it to finish; if that process is gone, remove ${lockPath}`)
          : `${path} is locked by ${lockPath}, which cannot be read; if no webgpu-knn is updating ${path}, remove it`,
      );
    }
    try {
      writeSync(fd, text);
    } finally {
      closeSync(fd);
    }
    const lock: FileLock = {
      lockPath,
      release() {
        if (!held.delete(lock)) return;
        // Only our own lock: one taken over as stale is someone else's now.
        try {
          if (readFileSync(lockPath, 'utf8') === text) rmSync(lockPath, { force: true });
        } catch {
          // already gone
        }
      },
    };
    held.add(lock);
    hook();
    return lock;
  }
}

/** Runs `fn` holding the lock of `path`; released however `fn` ends. */
export async function withFileLock<T>(path: string, purpose: string, fn: () => Promise<T>): Promise<T> {
  const lock = lockFile(path, purpose);
  try {
    return await fn();
  } finally {
    lock.release();
  }
}

function hook(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => {
    for (const lock of [...held]) lock.release();
  });
}
