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
/** What the suite's server hands out, below the repository root: nothing else is reachable. */
const SERVED = ['dist/browser/', 'test/browser/page/', 'test/data/'];
const TYPES = {
  '.js': 'text/javascript', '.mjs': 'text/javascript', '.html': 'text/html', '.css': 'text/css',
  '.map': 'application/json', '.json': 'application/json', '.png': 'image/png', '.svg': 'image/svg+xml',
};

/** Why the page cannot run here (no chromium, no build), or null. */
export function browserUnavailable() {
  if (!existsSync(CHROMIUM)) return `no chromium at ${CHROMIUM}; run scripts/setup-chromium.sh (as root it installs Debian's chromium)`;
  if (!existsSync(join(ROOT, BROWSER_BUNDLE))) return `no ${BROWSER_BUNDLE}; run npm run build`;
  return null;
}

/**
 * The file below ROOT that `urlPath` names when it lies in one of the `served` folders, else null.
 * The path is decoded, then normalised (so `..` and `%2e%2e` cannot climb out) before the check;
 * a malformed escape is null, not a crash.
 */
export function servedFile(urlPath, served = SERVED) {
  let decoded;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (decoded.includes('\0')) return null;
  const path = normalize(decoded).replace(/^[/\\]+/, '');
  const inside = served.some((dir) => path.startsWith(dir.split('/').join(sep))) && !path.split(/[/\\]/).includes('..');
  return inside ? join(ROOT, path) : null;
}

/**
 * A static server on 127.0.0.1 (`port` 0: a free one): the files of the `served` folders (default:
 * the suite's), `routes` (a pathname -> { type, body } of things made in memory), and `/` sent on
 * to `home` when given. Anything else is a 404. Returns { server, origin }.
 */
export async function serve({ served = SERVED, routes = {}, home = null, port = 0 } = {}) {
  const server = createServer((req, res) => {
    let pathname;
    try {
      pathname = new URL(req.url ?? '/', 'http://x').pathname;
    } catch {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('bad request');
      return;
    }
    if (home && pathname === '/') {
      res.writeHead(302, { location: home }).end();
      return;
    }
    const route = Object.hasOwn(routes, pathname) ? routes[pathname] : null;
    if (route) {
      res.writeHead(200, { 'content-type': route.type }).end(route.body);
      return;
    }
    const file = servedFile(pathname, served);
    if (!file || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not served');
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' }).end(readFileSync(file));
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  return { server, origin: `http://127.0.0.1:${server.address().port}` };
}

/**
 * Headless chromium with WebGPU on (--no-sandbox as root), and a page loaded (by default the
 * suite's; `path` another, which like it sets window.knnReady when it is ready): { browser, page }. The page's warnings and errors go to `log`.
 */
export async function openPage(origin, log = console.warn, path = '/test/browser/page/index.html') {
  const args = ['--headless=new', '--enable-unsafe-webgpu'];
  if (process.getuid?.() === 0) args.push('--no-sandbox');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args, headless: true });
  const page = await browser.newPage();
  page.on('console', (m) => {
    if (m.type() === 'warning' || m.type() === 'error') log(`[browser console] ${m.text()}`);
  });
  page.on('pageerror', (e) => log(`[browser page error] ${e.message}`));
  await page.goto(`${origin}${path}`);
  await page.waitForFunction(() => globalThis.knnReady === true, null, { timeout: 30_000 });
  return { browser, page };
}
