/**
 * Temporary files of outputs being written. Every output goes to
 * `.<name>.webgpu-knn-tmp-<host>-<pid>-<rand>` in the output's own directory (so the final rename
 * stays on one file system) and is renamed into place when complete.
 *
 * - Live temporary files are registered here and removed on any exit of the process. The CLI also
 *   calls `removeTempsOnSignals()`, so that SIGINT / SIGTERM remove them too (the process then
 *   exits with 130 / 143, as a shell expects); the library itself leaves a host application's
 *   signal handling alone.
 * - After SIGKILL nothing can run: the next run that writes the same output removes the temporary
 *   files of that output whose process is gone (`removeStaleTemps`). Only this host's files can be
 *   judged: in a folder shared between machines, another host's pid says nothing here, so its
 *   files are left for a run on that host (or a person) to remove, as its locks and run folders are.
 */
import { readdirSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

const live = new Set<string>();
let hooked = false;

/**
 * This host as it appears in a side file's name: its name with anything but letters, digits and
 * `-._~!*'()` percent-encoded (a host name may hold any byte; `/` would make the name a path).
 */
export function hostInName(): string {
  return encodeURIComponent(hostname());
}

/**
 * A hidden file beside `path` for this process: `.NAME.webgpu-knn-<kind>-<host>-<pid>-<rand>`
 * (`tmp`: an output being written; `old`: a replaced file kept aside until its replacement is
 * committed), `<rand>` 8 hex digits.
 */
export function sideFile(path: string, kind: 'tmp' | 'old'): string {
  return join(dirname(path), `.${basename(path)}.webgpu-knn-${kind}-${hostInName()}-${process.pid}-${randomBytes(4).toString('hex')}`);
}

/** What a side file's name says: the file it lies beside, its kind, and the host and pid of the process that made it. */
export interface SideFileName {
  /** The name (in the same folder) of the file it belongs to. */
  of: string;
  kind: 'tmp' | 'old';
  /** As hostInName writes it. */
  host: string;
  pid: number;
}

/**
 * Reads a side file's name (see sideFile): `.NAME.webgpu-knn-KIND-HOST-PID-RAND`, the host holding
 * any dashes and dots (the last two fields are the pid and 8 hex digits); `...-KIND-PID-RAND`, as
 * earlier versions wrote it, is taken as this host's. Null for any other name.
 */
export function parseSideFile(name: string): SideFileName | null {
  const m = /^\.(.+)\.webgpu-knn-(tmp|old)-(.+)$/.exec(name);
  if (!m) return null;
  const named = /^(.+)-(\d+)-[0-9a-f]{8}$/.exec(m[3]);
  const older = named ? null : /^(\d+)-[0-9a-f]+$/.exec(m[3]);
  if (!named && !older) return null;
  return { of: m[1], kind: m[2] as 'tmp' | 'old', host: named ? named[1] : hostInName(), pid: Number(named ? named[2] : older![1]) };
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
 * Removes temporary files of `path` left by processes of this host that no longer exist (killed
 * with SIGKILL, or by a power cut); another host's are left alone. Returns the names removed, for
 * the caller to report.
 */
export function removeStaleTemps(path: string): string[] {
  const dir = dirname(path);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const side = parseSideFile(name);
    if (!side || side.kind !== 'tmp' || side.of !== basename(path)) continue;
    if (side.host !== hostInName() || side.pid === process.pid || processAlive(side.pid)) continue;
    rmSync(join(dir, name), { force: true });
    removed.push(join(dir, name));
  }
  return removed;
}
