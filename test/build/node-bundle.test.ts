/**
 * The Node build's bundled forms (scripts/build-browser.mjs): an app bundled with esbuild from the
 * ES build, run from a folder with no shaders/, still searches on WebGPU (the WGSL is inlined in
 * dist/platform/shader-files.js), and require() of the CommonJS build (dist/index.cjs) does too.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/import-graph.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

const built = existsSync(join(ROOT, 'dist/index.cjs')) && existsSync(join(ROOT, 'dist/index.js'));

/** The app: the backend `auto` picked and the labels of one search, as a JSON line. */
const app = (from: string, load: string) => `${load}
(async () => {
  const backend = await knn.createBackend({ backend: 'auto' });
  const index = new knn.FlatIndex(backend, { dim: 4 });
  await index.add(new Float32Array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]));
  const { labels } = await index.search(new Float32Array([1, 1, 1, 1.1]), 2);
  console.log(JSON.stringify({ kind: backend.kind, labels: Array.from(labels) }));
  backend.dispose();
})();
// ${from}
`;

describe.skipIf(!built)('Node build, bundled', () => {
  let dir = '';
  let gpu = false;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-bundle-'));
    gpu = (await gpuBackend()) !== null;
    disposeGpuBackends();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const run = (file: string) => JSON.parse(execFileSync(process.execPath, [file], { cwd: dir, encoding: 'utf8', timeout: 120_000 }).trim().split('\n').at(-1)!);

  it('dist/platform/shader-files.js holds the shaders, not a path to them', () => {
    const text = readFileSync(join(ROOT, 'dist/platform/shader-files.js'), 'utf8');
    expect(text).not.toMatch(/readFileSync|import\.meta/);
    const first = readFileSync(join(ROOT, 'shaders/gemm-scores.wgsl'), 'utf8').split('\n')[0];
    expect(text.includes(JSON.stringify(first).slice(1, -1))).toBe(true);
  });

  it('an esbuild-bundled app run without shaders/ searches on WebGPU', async () => {
    const entry = join(dir, 'entry.mjs');
    writeFileSync(entry, app('esm', `import * as knn from ${JSON.stringify(join(ROOT, 'dist/index.js'))};`));
    const out = join(dir, 'app.mjs');
    await build({
      entryPoints: [entry], outfile: out, bundle: true, format: 'esm', platform: 'node', logLevel: 'silent',
      // Dawn is a native module, so webgpu (like the optional packages) stays an import.
      external: ['webgpu', 'bullmq', 'ioredis', 'gpu.js'],
    });
    expect(existsSync(join(dir, 'shaders'))).toBe(false);
    // webgpu resolves from the app's folder: link the project's node_modules there.
    execFileSync('ln', ['-s', join(ROOT, 'node_modules'), join(dir, 'node_modules')]);
    const result = run(out);
    expect(result.labels).toEqual([1, 2]);
    expect(result.kind).toBe(gpu ? 'webgpu' : 'cpu');
  }, 180_000);

  it('require() of dist/index.cjs searches on WebGPU', () => {
    const file = join(dir, 'app.cjs');
    writeFileSync(file, app('cjs', `const knn = require(${JSON.stringify(join(ROOT, 'dist/index.cjs'))});`));
    const result = run(file);
    expect(result.labels).toEqual([1, 2]);
    expect(result.kind).toBe(gpu ? 'webgpu' : 'cpu');
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    expect(pkg.exports['.'].require).toBe('./dist/index.cjs');
  }, 180_000);
});
