#!/usr/bin/env node
// `npm run demo:web` (after the build): the demo page, demo/web/, served from 127.0.0.1 with the
// browser build and the bundled MiniLM embeddings (npm @sap-ux/fiori-docs-embeddings, read by the
// CLI demo's loadFioriCorpus) as /data/minilm.json (n, d, titles) and /data/minilm.bin (float32
// rows). Nothing else is served. `--port N` picks the port (default: a free one).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BROWSER_BUNDLE, ROOT, serve } from './browser-page.mjs';

export const DEMO_PAGE = '/demo/web/index.html';
/** The folders the demo server hands out; the data come from routes. */
export const DEMO_SERVED = ['dist/browser/', 'demo/web/'];

/** The demo server on 127.0.0.1: { server, origin }; the page is at origin + DEMO_PAGE. */
export async function serveDemo({ port = 0 } = {}) {
  for (const file of [BROWSER_BUNDLE, 'dist/cli/demo.js']) {
    if (!existsSync(join(ROOT, file))) throw new Error(`no ${file}; run npm run build`);
  }
  const { loadFioriCorpus } = await import(pathToFileURL(join(ROOT, 'dist/cli/demo.js')).href);
  const { x, n, d, titles } = loadFioriCorpus();
  const meta = {
    name: 'SAP Fiori docs, all-MiniLM-L6-v2',
    source: 'npm @sap-ux/fiori-docs-embeddings',
    n,
    d,
    titles,
  };
  const routes = {
    '/data/minilm.json': { type: 'application/json', body: JSON.stringify(meta) },
    '/data/minilm.bin': { type: 'application/octet-stream', body: new Uint8Array(x.buffer, x.byteOffset, x.byteLength) },
  };
  return serve({ served: DEMO_SERVED, routes, home: DEMO_PAGE, port });
}

function parsePort(argv) {
  const at = argv.findIndex((a) => a === '--port' || a.startsWith('--port='));
  if (at < 0) return 0;
  const text = argv[at].includes('=') ? argv[at].split('=')[1] : argv[at + 1];
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port takes a port number (0-65535; 0: a free one); got ${text}`);
  return port;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    const unknown = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--port') && all[i - 1] !== '--port');
    if (unknown.length > 0) throw new Error(`unknown argument ${unknown.join(' ')}; usage: npm run demo:web [-- --port N]`);
    const { origin } = await serveDemo({ port: parsePort(process.argv.slice(2)) });
    console.log(`webgpu-knn demo page: ${origin}${DEMO_PAGE}`);
    console.log('(WebGPU needs a browser with it on; Chromium: --enable-unsafe-webgpu where it is off. Ctrl-C stops the server.)');
  } catch (err) {
    console.error(`demo:web: ${err.message}`);
    process.exit(1);
  }
}
