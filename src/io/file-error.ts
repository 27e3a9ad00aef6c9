/**
 * File problems the user can fix (a missing input, a directory given as a file, a full disk, a file
 * too large for the memory this process may use), as one line that names the user's path and what
 * went wrong, instead of Node's raw error.
 */
import type { Stats } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { FileError, OutOfMemoryError } from '../errors.js';

const REASONS: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EISDIR: 'is a directory, not a file',
  ENOTDIR: 'a component of the path is not a directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ENOSPC: 'no space left on device',
  EDQUOT: 'disk quota exceeded',
  EIO: 'input/output error',
  EROFS: 'read-only file system',
  EFBIG: 'file too large',
  EMFILE: 'too many open files',
};

/** `err` (from fs) as a FileError about `path`; `doing` says what was tried ("cannot read"). */
export function fileError(path: string, doing: string, err: unknown): FileError {
  const code = (err as NodeJS.ErrnoException)?.code;
  const reason = (code && REASONS[code]) ?? (code ? `${code}` : (err as Error)?.message ?? String(err));
  return new FileError(`${path}: ${doing}: ${reason}${code && REASONS[code] ? ` (${code})` : ''}`);
}

/** The file at `path` opened for reading, with its stat; a FileError naming it if it cannot be (or is a directory). */
export async function openForReading(path: string): Promise<{ handle: FileHandle; stat: Stats }> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(path, 'r');
    const stat = await handle.stat();
    if (stat.isDirectory()) throw Object.assign(new Error('directory'), { code: 'EISDIR' });
    return { handle, stat };
  } catch (err) {
    await handle?.close();
    throw fileError(path, 'cannot read', err);
  }
}

/** Whether `err` is V8's refusal of a typed array or ArrayBuffer (too large, or no memory for it). */
export function isAllocationFailure(err: unknown): boolean {
  return err instanceof RangeError && /Array buffer allocation failed|Invalid (typed )?array( buffer)? length/.test(err.message);
}

/**
 * `err` as an OutOfMemoryError naming `what` was being allocated (with its size) if it is an
 * allocation failure; else `err` itself.
 */
export function allocationError(err: unknown, what: string): unknown {
  if (!isAllocationFailure(err)) return err;
  return new OutOfMemoryError(`out of memory allocating ${what} (${(err as Error).message}); free memory, raise the limit (ulimit -v) or use a smaller input`);
}

/** `bytes` in decimal units to 3 significant digits: "240 B", "17.2 GB", "128 GB". */
export function bytesText(bytes: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB', 'PB', 'EB'];
  let u = 0;
  while (u < units.length - 1 && bytes >= 1000 ** (u + 1)) u++;
  return `${u === 0 ? bytes : Number((bytes / 1000 ** u).toPrecision(3))} ${units[u]}`;
}
