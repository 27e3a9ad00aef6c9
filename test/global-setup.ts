/**
 * Keeps the suite's files in one temporary folder for the run, removed at its end:
 *   - TMPDIR: every temporary file and folder the tests, their workers and the CLIs they spawn make
 *     (os.tmpdir() reads it). Test files make their folders when loaded and do not all remove them;
 *     before this, each full run left about 170 MB in /tmp.
 *   - WEBGPU_KNN_CACHE_DIR: GPU devices store their measured kernel choice there
 *     (src/gpu/kernel-choice.ts), never in the user's home.
 * Set here, before the test workers start, so every worker and every CLI the tests spawn inherits it.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const run = mkdtempSync(join(tmpdir(), 'webgpu-knn-test-'));
  for (const sub of ['tmp', 'cache']) mkdirSync(join(run, sub));
  process.env.TMPDIR = join(run, 'tmp');
  process.env.WEBGPU_KNN_CACHE_DIR = join(run, 'cache');
  return () => rmSync(run, { recursive: true, force: true });
}
