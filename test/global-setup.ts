/**
 * Keeps the suite off the user's home: GPU devices store their measured kernel choice
 * (src/gpu/kernel-choice.ts) in a temporary directory for the run, removed at its end. Set here,
 * before the test workers start, so every worker and every CLI the tests spawn inherits it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-test-cache-'));
  process.env.WEBGPU_KNN_CACHE_DIR = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}
