/**
 * File problems the user can fix (a missing input, a directory given as a file, a full disk), as
 * one line that names the user's path and what went wrong, instead of Node's raw error.
 */
import { readFileSync, statSync } from 'node:fs';

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

/** The whole file at `path`, or a FileError naming it. */
export function readFileOrFail(path: string): Buffer {
  try {
    if (statSync(path).isDirectory()) throw Object.assign(new Error('directory'), { code: 'EISDIR' });
    return readFileSync(path);
  } catch (err) {
    throw fileError(path, 'cannot read', err);
  }
}
