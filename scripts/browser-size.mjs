#!/usr/bin/env node
// What a page that uses only FlatIndex costs: the page below (createBackend, FlatIndex.add, search)
// bundled from dist/browser/webgpu-knn.js by esbuild as an app would be (minified, dynamic imports
// split), then the bytes (minified and gzipped) of what the page loads: its entry with the chunks
// it imports statically, and that plus the chunks createBackend loads for each backend
// (import('../gpu/gpu-device.js') and the rest). Prints one JSON object; `--check` exits 1 if
// the WebGPU page reaches gpu.js or ml-matrix (test/browser/bundle.test.ts runs it so).
// Usage: node scripts/browser-size.mjs [--check]   (after npm run build)
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-size-'));
try {
  writeFileSync(join(dir, 'page.js'), [
    `import { createBackend, FlatIndex } from ${JSON.stringify(join(root, 'dist/browser/webgpu-knn.js'))};`,
    'const backend = await createBackend();',
    'const index = new FlatIndex(backend, { dim: 4 });',
    'await index.add(new Float32Array(16));',
    'console.log(await index.search(new Float32Array(4), 1));',
    '',
  ].join('\n'));
  const out = join(dir, 'out');
  const r = await build({
    entryPoints: [join(dir, 'page.js')], outdir: out, absWorkingDir: root, bundle: true, splitting: true, minify: true,
    format: 'esm', platform: 'browser', target: 'es2022', metafile: true, logLevel: 'warning',
  });
  const outputs = r.metafile.outputs;
  const entry = Object.keys(outputs).find((o) => outputs[o].entryPoint);
  /** The outputs `from` loads: itself and, transitively, its static imports (and, with `dynamic`, its dynamic ones). */
  const closure = (from, dynamic) => {
    const seen = new Set([from]);
    const todo = [from];
    while (todo.length > 0) {
      for (const i of outputs[todo.pop()].imports) {
        if ((i.kind === 'import-statement' || dynamic) && !seen.has(i.path)) { seen.add(i.path); todo.push(i.path); }
      }
    }
    return seen;
  };
  /** The app's output holding our chunk `name` (dist/browser/chunks/NAME-HASH.js, named by the module the core imports lazily). */
  const chunkFor = (name) => Object.keys(outputs).find((o) => Object.keys(outputs[o].inputs).some((i) => i.includes(`dist/browser/chunks/${name}-`)));
  /**
   * What the page loads with that chunk and what the chunk imports, as it starts; a build without
   * it (one file, as before 2026-12-02) loads everything up front.
   */
  const withBackend = (name) => {
    const chunk = chunkFor(name);
    return new Set([...initial, ...(chunk ? closure(chunk, true) : [])]);
  };
  const measure = (files) => {
    const bytes = [...files].map((f) => readFileSync(join(root, f)));
    return { files: files.size, minified: bytes.reduce((s, b) => s + b.length, 0), gzipped: bytes.reduce((s, b) => s + gzipSync(b, { level: 9 }).length, 0) };
  };
  const initial = closure(entry, false);
  const webgpu = withBackend('gpu-device');
  const report = {
    page: 'createBackend + FlatIndex (scripts/browser-size.mjs)',
    initial: measure(initial),
    webgpu: measure(webgpu),
    cpu: measure(withBackend('cpu-device')),
    gpujs: measure(withBackend('gpujs-device')),
    everything: measure(closure(entry, true)),
  };
  console.log(JSON.stringify(report, null, 2));
  if (process.argv.includes('--check')) {
    // Each lazy import of the core a chunk of its own, and the WebGPU page loading none of gpu.js and ml-matrix.
    const missing = ['gpu-device', 'cpu-device', 'gpujs-device', 'gpu-browser.min', 'matrix'].filter((name) => !chunkFor(name));
    if (missing.length > 0) {
      console.error(`browser-size: dist/browser has no chunk ${missing.join(', ')}: the build no longer splits where the core imports lazily (or it imports them statically)`);
      process.exit(1);
    }
    const heavy = [...webgpu].filter((f) => f === chunkFor('gpu-browser.min') || f === chunkFor('matrix'));
    if (heavy.length > 0) {
      console.error(`browser-size: the Flat page on WebGPU loads ${heavy.join(', ')} (gpu.js or ml-matrix), which it never runs`);
      process.exit(1);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
