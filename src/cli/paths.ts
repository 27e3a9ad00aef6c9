/**
 * Output paths, checked before any heavy work: an output must not be one of the inputs or another
 * output (compared by real path, and by device + inode where the file exists, so hard and symbolic
 * links are caught), its directory must exist and be writable, and temporary files and run folders
 * of the same output left by a killed run of this host are removed (and reported): a distributed
 * run whose producer was killed then has no folder, so its jobs, late or replayed, write nothing
 * over what this command writes (src/cli/cluster/job-files.ts).
 */
import { accessSync, constants, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileError } from '../io/file-error.js';
import { removeStaleTemps } from '../io/temp-files.js';

import { reportStaleRunFolders } from './cluster/job-files.js';
import { FileError, UsageError } from '../errors.js';

/** A path and the flag that gave it ("--out"). */
export interface PathFlag {
  flag: string;
  path: string;
}

function identity(path: string): { real: string; inode: string | null } {
  try {
    const st = statSync(path);
    return { real: realpathSync(path), inode: `${st.dev}:${st.ino}` };
  } catch {
    try {
      return { real: join(realpathSync(dirname(path)), basename(path)), inode: null };
    } catch {
      return { real: resolve(path), inode: null };
    }
  }
}

function sameFile(a: ReturnType<typeof identity>, b: ReturnType<typeof identity>): boolean {
  return a.real === b.real || (a.inode !== null && a.inode === b.inode);
}

/** Refuses (usage error) outputs that are inputs or each other; checks each output's directory. */
export function checkOutputs(outputs: PathFlag[], inputs: PathFlag[]): void {
  const ins = inputs.map((p) => ({ ...p, id: identity(p.path) }));
  const outs = outputs.map((p) => ({ ...p, id: identity(p.path) }));
  outs.forEach((o, i) => {
    for (const other of [...ins, ...outs.slice(0, i)]) {
      if (sameFile(o.id, other.id)) {
        throw new UsageError(`${o.flag} ${o.path} is the same file as ${other.flag} ${other.path}; choose another output path`);
      }
    }
  });
  for (const { path } of outputs) {
    let isDir = false;
    try {
      isDir = statSync(path).isDirectory();
    } catch {
      // does not exist yet: fine
    }
    if (isDir) throw new FileError(`${path}: cannot write: is a directory, not a file`);
    const dir = dirname(resolve(path));
    try {
      if (!statSync(dir).isDirectory()) throw Object.assign(new Error(), { code: 'ENOTDIR' });
      accessSync(dir, constants.W_OK);
    } catch (err) {
      throw fileError(path, `cannot write in directory ${dirname(path)}`, err);
    }
    for (const stale of removeStaleTemps(path)) process.stderr.write(`removed ${stale}, a temporary file left by an interrupted run\n`);
    reportStaleRunFolders(resolve(path));
  }
}

/** The path flags given, as [flag, path] pairs (undefined: not given, left out), for checkOutputs. */
export const pathFlags = (...flags: [string, string | undefined][]): PathFlag[] =>
  flags.filter((f): f is [string, string] => f[1] !== undefined).map(([flag, path]) => ({ flag, path }));
