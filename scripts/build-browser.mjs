#!/usr/bin/env node
// The browser build (npm run build runs it after tsc): src/browser.ts bundled by esbuild into one
// ES module, dist/browser/webgpu-knn.js, with no imports at all. Two things differ from Node, and
// only here: src/platform/platform.ts (files, Dawn, stderr) is replaced by src/platform/browser.ts,
// and the WGSL files are inlined (as __WEBGPU_KNN_SHADERS__, name -> text). The build fails if the
// bundle still imports anything (a `node:` module or a package): test/browser/bundle.test.ts
// checks the file the same way.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
export const BROWSER_BUNDLE = 'dist/browser/webgpu-knn.js';

const shaders = Object.fromEntries(
  readdirSync(`${root}shaders`)
    .filter((f) => f.endsWith('.wgsl'))
    .sort()
    .map((f) => [f.slice(0, -'.wgsl'.length), readFileSync(`${root}shaders/${f}`, 'utf8')]),
);

/** Resolves the core's `platform/platform.js` to the browser's platform. */
const browserPlatform = {
  name: 'browser-platform',
  setup(b) {
    b.onResolve({ filter: /(^|\/)platform\/platform\.js$/ }, () => ({ path: `${root}src/platform/browser.ts` }));
  },
};

const result = await build({
  entryPoints: [`${root}src/browser.ts`],
  outfile: `${root}${BROWSER_BUNDLE}`,
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  sourcemap: true,
  metafile: true,
  logLevel: 'warning',
  define: { __WEBGPU_KNN_SHADERS__: JSON.stringify(shaders) },
  // The gpujs backend's gpu.js is bundled (the build has no imports to resolve at run time): its
  // minified browser build, which carries its own parser, about 0.6 MB of the bundle.
  alias: { 'gpu.js': 'gpu.js/dist/gpu-browser.min.js' },
  plugins: [browserPlatform],
});
const imports = Object.values(result.metafile.outputs).flatMap((o) => o.imports.map((i) => i.path));
if (imports.length > 0) {
  console.error(`build-browser: ${BROWSER_BUNDLE} still imports ${imports.join(', ')}; the core must not reach Node-only code`);
  process.exit(1);
}
