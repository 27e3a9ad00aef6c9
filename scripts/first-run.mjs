#!/usr/bin/env node
// createBackend({ backend: 'webgpu' })'s time in a fresh process: on first use (an empty
// kernel-choice cache, and with --no-driver-cache Mesa's shader cache off as on a new machine),
// then again with the choice cached. Each run is its own process; --runs N (default 3) rounds.
// Usage: node scripts/first-run.mjs [--runs 3] [--no-driver-cache] [--lib dist/index.js]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const arg = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : fallback;
};
const runs = Number(arg('--runs', '3'));
if (!(Number.isInteger(runs) && runs >= 1)) {
  console.error(`first-run: --runs must be a positive integer; got ${arg('--runs')}`);
  process.exit(2);
}
const lib = pathToFileURL(resolve(arg('--lib', 'dist/index.js'))).href;
const child = `
  const { createBackend } = await import(${JSON.stringify(lib)});
  const t = performance.now();
  const b = await createBackend({ backend: 'webgpu' });
  const ms = performance.now() - t;
  console.log(JSON.stringify({ ms, gemm: b.device.gemm }));
  b.dispose();`;
const once = (dir) => {
  const env = { ...process.env, WEBGPU_KNN_CACHE_DIR: dir };
  if (process.argv.includes('--no-driver-cache')) env.MESA_SHADER_CACHE_DISABLE = 'true';
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', child], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return JSON.parse(out.trim().split('\n').at(-1));
};
for (let r = 0; r < runs; r++) {
  const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-first-run-'));
  try {
    const first = once(dir);
    const cached = once(dir);
    console.log(JSON.stringify({
      firstMs: Math.round(first.ms), cachedMs: Math.round(cached.ms), variant: first.gemm.variant,
      measured: Object.fromEntries(Object.entries(first.gemm.ms).map(([v, ms]) => [v, +ms.toFixed(1)])),
    }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
