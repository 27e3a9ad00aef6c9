// The browser harness shared by the browser suite (test/helpers/browser.ts) and
// scripts/browser-bench.mjs: Debian's chromium driven by playwright-core (which downloads
// nothing), on test/browser/page/ served with the browser build and test/data from 127.0.0.1 (a
// secure context: navigator.gpu exists there, not on about:blank).
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const CHROMIUM = process.env.WEBGPU_KNN_CHROMIUM ?? '/usr/lib/chromium/chromium';
export const BROWSER_BUNDLE = 'dist/browser/webgpu-knn.js';
/** What the server hands out, below the repository root: nothing else is reachable. */
const SERVED = ['dist/browser/', 'test/browser/page/', 'test/data/'];
const TYPES = { '.js': 'text/javascript', '.html': 'text/html', '.map': 'application/json' };

/** Why the page cannot run here (no chromium, no build), or null. */
export function browserUnavailable() {
  if (!existsSync(CHROMIUM)) return `no chromium at ${CHROMIUM}; run scripts/setup-chromium.sh (as root it installs Debian's chromium)`;
  if (!existsSync(join(ROOT, BROWSER_BUNDLE))) return `no ${BROWSER_BUNDLE}; run npm run build`;
  return null;
}

/** A static server of SERVED on 127.0.0.1, on a free port: { server, origin }. */
export async function serve() {
  const server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)).replace(/^[/\\]+/, '');
    const file = join(ROOT, path);
    const allowed = SERVED.some((dir) => path.startsWith(dir.split('/').join(sep))) && !path.includes('..');
    if (!allowed || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404).end(`not served: ${path}`);
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' }).end(readFileSync(file));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${server.address().port}` };
}

/**
 * Headless chromium with WebGPU on (--no-sandbox as root), and the test page loaded (window.knn
 * ready): { browser, page }. The page's warnings and errors go to `log`.
 */
export async function openPage(origin, log = console.warn) {
  const args = ['--headless=new', '--enable-unsafe-webgpu'];
  if (process.getuid?.() === 0) args.push('--no-sandbox');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args, headless: true });
  const page = await browser.newPage();
  page.on('console', (m) => {
    if (m.type() === 'warning' || m.type() === 'error') log(`[browser console] ${m.text()}`);
  });
  page.on('pageerror', (e) => log(`[browser page error] ${e.message}`));
  await page.goto(`${origin}/test/browser/page/index.html`);
  await page.waitForFunction(() => globalThis.knnReady === true, null, { timeout: 30_000 });
  return { browser, page };
}
