/**
 * The browser build (scripts/build-browser.mjs): one ES module with no imports at all (no `node:`
 * module, no package), every WGSL kernel inlined, the core's API exported.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { BROWSER_BUNDLE, ROOT } from '../helpers/browser.js';

const file = join(ROOT, BROWSER_BUNDLE);

describe('browser bundle', () => {
  it.skipIf(!existsSync(file))(`${BROWSER_BUNDLE} imports nothing, inlines every shader, exports the core`, async () => {
    const text = readFileSync(file, 'utf8');
    // esbuild parses the file and lists every import it makes (static, dynamic, require), each left unresolved.
    const parsed = await build({
      entryPoints: [file], bundle: true, write: false, metafile: true, format: 'esm', logLevel: 'silent',
      plugins: [{ name: 'list-only', setup: (b) => b.onResolve({ filter: /.*/ }, (a) => (a.kind === 'entry-point' ? undefined : { path: a.path, external: true })) }],
    });
    const specifiers = Object.values(parsed.metafile.inputs).flatMap((i) => i.imports.map((imp) => imp.path));
    expect(specifiers, 'imports left in the bundle').toEqual([]);
    expect(text.match(/["'`]node:[a-z_/]+["'`]/g) ?? [], 'node: modules named in the bundle').toEqual([]);
    expect(text).not.toMatch(/\bprocess\.(env|stderr|platform|pid)\b/);
    for (const f of readdirSync(join(ROOT, 'shaders')).filter((n) => n.endsWith('.wgsl'))) {
      // The file's first line (its header comment) appears in the bundle, as JSON-escaped text.
      const first = readFileSync(join(ROOT, 'shaders', f), 'utf8').split('\n')[0];
      expect(text.includes(JSON.stringify(first).slice(1, -1)), `${f} inlined`).toBe(true);
    }
    const api = await import(file);
    for (const name of ['createBackend', 'FlatIndex', 'IvfFlatIndex', 'KMeans', 'BatchScheduler', 'dedup', 'knnGraph', 'arraySource', 'indexFactory']) {
      expect(typeof api[name], name).toBe('function');
    }
    // The package's "./browser" export names this file.
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    expect(pkg.exports['./browser'].import).toBe(`./${BROWSER_BUNDLE}`);
  });
});
