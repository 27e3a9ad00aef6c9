/**
 * File problems the user can fix (a missing input, a directory given as a file, a full disk), as
 * one line that names the user's path and what went wrong, instead of Node's raw error.
 */
import type { Stats } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';

export class FileError extends Error {
  override name = 'FileError';
}

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
