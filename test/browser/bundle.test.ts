/**
 * The browser build (scripts/build-browser.mjs): ES modules (dist/browser/webgpu-knn.js and its
 * chunks) that import nothing but each other (no `node:` module, no package), every WGSL kernel
 * inlined whole as scripts/wgsl-strip.mjs strips it, the core's API exported; and a page that uses only FlatIndex
 * on WebGPU loads neither gpu.js nor ml-matrix (scripts/browser-size.mjs --check).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { BROWSER_BUNDLE, ROOT } from '../helpers/browser.js';
import { stripWgsl } from '../../scripts/wgsl-strip.mjs';

const file = join(ROOT, BROWSER_BUNDLE);
const chunkDir = join(ROOT, 'dist/browser/chunks');

describe('browser bundle', () => {
  it.skipIf(!existsSync(file))(`${BROWSER_BUNDLE} and its chunks import only each other, inline every shader, export the core`, async () => {
    const files = [file, ...readdirSync(chunkDir).filter((f) => f.endsWith('.js')).map((f) => join(chunkDir, f))];
    const texts = files.map((f) => readFileSync(f, 'utf8'));
    for (const [i, f] of files.entries()) {
      // esbuild parses the file and lists every import it makes (static, dynamic, require), each left unresolved.
      const parsed = await build({
        entryPoints: [f], bundle: true, write: false, metafile: true, format: 'esm', logLevel: 'silent',
        plugins: [{ name: 'list-only', setup: (b) => b.onResolve({ filter: /.*/ }, (a) => (a.kind === 'entry-point' ? undefined : { path: a.path, external: true })) }],
      });
      const specifiers = Object.values(parsed.metafile.inputs).flatMap((inp) => inp.imports.map((imp) => imp.path));
      const foreign = specifiers.filter((s) => !/^\.\.?\/(chunks\/)?[\w.-]+\.js$/.test(s) || !existsSync(join(f, '..', s)));
      expect(foreign, `imports of ${f} that are not chunks of the build`).toEqual([]);
      expect(texts[i].match(/["'`]node:[a-z_/]+["'`]/g) ?? [], `node: modules named in ${f}`).toEqual([]);
      expect(texts[i]).not.toMatch(/\bprocess\.(env|stderr|platform|pid)\b/);
    }
    const all = texts.join('\n');
    for (const f of readdirSync(join(ROOT, 'shaders')).filter((n) => n.endsWith('.wgsl'))) {
      // Each shader whole, as the build strips it, as one string literal (JSON and esbuild quote ASCII alike).
      const stripped = stripWgsl(readFileSync(join(ROOT, 'shaders', f), 'utf8'), f);
      expect(all.includes(JSON.stringify(stripped)), `${f}, stripped, inlined whole`).toBe(true);
      expect(stripped, `${f}: a comment left after stripping`).not.toMatch(/\/\/(?!!include )/);
    }
    const api = await import(file);
    for (const name of ['createBackend', 'FlatIndex', 'IvfFlatIndex', 'GraphIndex', 'KMeans', 'BatchScheduler', 'dedup', 'knnGraph', 'arraySource', 'indexFactory']) {
      expect(typeof api[name], name).toBe('function');
    }
    // The CPU backend runs from the files (Node imports the chunks as a browser would).
    const backend = await api.createBackend({ backend: 'cpu' });
    const index = new api.FlatIndex(backend, { dim: 2 });
    await index.add(Float32Array.from([0, 0, 5, 5, 1, 1]));
    expect(Array.from((await index.search(Float32Array.from([0.9, 0.9]), 2)).labels)).toEqual([2, 0]);
    backend.dispose();
    // The package's "./browser" export names the entry.
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    expect(pkg.exports['./browser'].import).toBe(`./${BROWSER_BUNDLE}`);
  });

  it.skipIf(!existsSync(file))('a page that uses only FlatIndex loads neither gpu.js nor ml-matrix on WebGPU', () => {
    const out = execFileSync(process.execPath, [join(ROOT, 'scripts/browser-size.mjs'), '--check'], { encoding: 'utf8' });
    const report = JSON.parse(out);
    expect(report.webgpu.files).toBeGreaterThan(report.initial.files);
    expect(report.everything.minified).toBeGreaterThan(report.webgpu.minified);
  });
});
