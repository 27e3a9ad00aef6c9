/**
 * The root a worker is confined to (`worker --root DIR`): every path a job names must resolve
 * inside it, checked before the job runs.
 *
 * - A path must be absolute (commands queue resolved paths) and in normal form, with no `..`
 *   component and nothing `path.resolve` would change.
 * - It must lie inside the root as written, and as the file system resolves it: the real path of
 *   its longest existing prefix (symbolic links followed) must be inside the root's real path, so
 *   a link inside the root that leads out of it is refused.
 * - An output whose final component exists as a symbolic link is refused (outputs are written
 *   through a temporary file renamed over the name, which would replace the link, but a job that
 *   names a link is not one a command queued).
 *
 * What this cannot stop: someone who can write inside the root and swaps a directory for a link
 * between the check and the write. Such a user can already change every file the jobs read.
 */
import { lstatSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { UsageError } from '../../errors.js';

/** How a job uses a path: reads it, writes it, or works in it (a run's tiles folder, which must exist). */
export type PathRole = 'input' | 'output' | 'folder';

export interface JobPath {
  /** The payload field it came from ("out", "shards[2].path"). */
  field: string;
  path: string;
  role: PathRole;
}

export interface Root {
  /** The root as given, resolved. */
  path: string;
  /** Its real path. */
  real: string;
}

/** `--root DIR`: an existing directory (a usage error otherwise). */
export function openRoot(dir: string): Root {
  let real: string;
  try {
    real = realpathSync(dir);
  } catch {
    throw new UsageError(`--root ${dir}: no such directory`);
  }
  if (!statSync(real).isDirectory()) throw new UsageError(`--root ${dir}: not a directory`);
  return { path: resolve(dir), real };
}

function inside(path: string, root: string): boolean {
  const r = relative(root, path);
  return r === '' || (!r.startsWith(`..${sep}`) && r !== '..' && !isAbsolute(r));
}

/** The real path of `path`'s longest existing prefix, joined with the rest (null: a dangling link on the way). */
function realPath(path: string): string | null {
  let head = path;
  const rest: string[] = [];
  for (;;) {
    let exists = true;
    try {
      lstatSync(head);
    } catch {
      exists = false;
    }
    if (exists) {
      try {
        return join(realpathSync(head), ...rest.reverse());
      } catch {
        return null; // it exists but does not resolve: a dangling link
      }
    }
    const up = dirname(head);
    if (up === head) return join(head, ...rest.reverse());
    rest.push(head.slice(up.length).replace(/^\//, ''));
    head = up;
  }
}

/** Why `p` may not be used under `root`, or null when it may. */
export function refusePath(root: Root, p: JobPath): string | null {
  const { field, path, role } = p;
  const named = `${field} ${JSON.stringify(path)}`;
  if (!isAbsolute(path)) return `${named} is not an absolute path`;
  if (path.split('/').includes('..')) return `${named} has a '..' component`;
  if (resolve(path) !== path) return `${named} is not in normal form (${resolve(path)})`;
  if (!inside(path, root.path) && !inside(path, root.real)) return `${named} is outside the worker's root ${root.path}`;
  const real = realPath(path);
  if (real === null) return `${named} is a dangling symbolic link, or passes through one`;
  if (!inside(real, root.real)) return `${named} leads outside the worker's root ${root.path} through a symbolic link (to ${real})`;
  if (role === 'output') {
    let link = false;
    try {
      link = lstatSync(path).isSymbolicLink();
    } catch {
      // not there yet: fine
    }
    if (link) return `${named} is a symbolic link; an output must be a plain file`;
  }
  if (role === 'folder') {
    let dir = false;
    try {
      dir = statSync(path).isDirectory();
    } catch {
      // gone
    }
    // A run's folder exists from its start to its end: a job of a run that has ended (a replay) has none.
    if (!dir) return `${named} is not a folder: the run that queued this job has ended`;
  }
  return null;
}
