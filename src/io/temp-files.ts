/**
 * Temporary files of outputs being written. Every output goes to `.<name>.webgpu-knn-tmp-<pid>-<rand>`
 * in the output's own directory (so the final rename stays on one file system) and is renamed into
 * place when complete.
 *
 * - Live temporary files are registered here and removed on any exit of the process. The CLI also
 *   calls `removeTempsOnSignals()`, so that SIGINT / SIGTERM remove them too (the process then
 *   exits with 130 / 143, as a shell expects); the library itself leaves a host application's
 *   signal handling alone.
 * - After SIGKILL nothing can run: the next run that writes the same output removes the temporary
 *   files of that output whose process is gone (`removeStaleTemps`).
 */
import { readdirSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';

const live = new Set<string>();
let hooked = false;

/**
 * A hidden file beside `path` for this process: `.NAME.webgpu-knn-<kind>-<pid>-<rand>` (`tmp`: an
 * output being written; `old`: a replaced file kept aside until its replacement is committed).
 */
export function sideFile(path: string, kind: 'tmp' | 'old'): string {
  return join(dirname(path), `.${basename(path)}.webgpu-knn-${kind}-${process.pid}-${randomBytes(4).toString('hex')}`);
}

/** The temporary name for `path`; this process owns it until `releaseTemp`. */
export function claimTemp(path: string): string {
  const tmp = sideFile(path, 'tmp');
  live.add(tmp);
  hook();
  return tmp;
}

/** Forgets `tmp` (renamed into place or removed). */
export function releaseTemp(tmp: string): void {
  live.delete(tmp);
}

/** The temporary files this process has open (for tests). */
export function liveTemps(): string[] {
  return [...live];
}

function removeLive(): void {
  for (const tmp of live) rmSync(tmp, { force: true });
  live.clear();
}

function hook(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', removeLive);
}

/**
 * For a command-line program: on SIGINT / SIGTERM, remove the live temporary files and exit with
 * 130 / 143. A library never installs this by itself (it would take over the host's shutdown).
 */
export function removeTempsOnSignals(): void {
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    process.on(signal, () => {
      removeLive();
      process.exit(code);
    });
  }
}

/** Whether a process with this pid exists on this machine (EPERM: it exists, as another user's). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/**
 * Removes temporary files of `path` left by processes that no longer exist (killed with SIGKILL,
 * or by a power cut). Returns the names removed, for the caller to report.
 */
export function removeStaleTemps(path: string): string[] {
  const dir = dirname(path);
  const prefix = `.${basename(path)}.webgpu-knn-tmp-`;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const m = /^(\d+)-[0-9a-f]+$/.exec(name.slice(prefix.length));
    if (!m || Number(m[1]) === process.pid || processAlive(Number(m[1]))) continue;
    rmSync(join(dir, name), { force: true });
    removed.push(join(dir, name));
  }
  return removed;
}
