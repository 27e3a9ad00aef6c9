/**
 * The demo page (npm run demo:web; scripts/demo-web.mjs serves demo/web/). Its server hands out
 * the page, the browser build and the bundled MiniLM embeddings and nothing else (no path climbs
 * out). In headless chromium (the suite's harness) the page loads the MiniLM embeddings, finds the
 * pairs at cosine >= 0.95 on WebGPU (the same count as the Node CPU twin, each with both titles),
 * searches a row's neighbours and times every backend; then it is photographed: to docs/demo-web.png
 * with WEBGPU_KNN_SCREENSHOT=1 (the figure in docs/browser.md), else to the temp folder, so that a test run
 * never changes the tree.
 */
import { existsSync, renameSync } from 'node:fs';
import { request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_PAGE, serveDemo } from '../../scripts/demo-web.mjs';
import { loadFioriCorpus } from '../../src/cli/demo.js';
import { createBackend } from '../../src/backend/create-backend.js';
import { npyHeader } from '../../src/io/npy.js';
import { dedup } from '../../src/jobs/dedup.js';
import { BROWSER_BUNDLE, ROOT, browserMissing, openPage } from '../helpers/browser.js';

const THRESHOLD = 0.95;
const K = 5;
const SCREENSHOT = process.env.WEBGPU_KNN_SCREENSHOT === '1' ? join(ROOT, 'docs/demo-web.png') : join(tmpdir(), 'webgpu-knn-demo-web.png');
const built = existsSync(join(ROOT, BROWSER_BUNDLE)) && existsSync(join(ROOT, 'dist/cli/demo.js'));

/** GET `path` sent as it is (no URL clean-up on the way): [status, body]. */
function rawGet(origin: string, path: string): Promise<[number, string]> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, path, method: 'GET' }, (res) => {
      let body = '';
      res.setEncoding('latin1');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve([res.statusCode ?? 0, body]));
    });
    req.on('error', reject);
    req.end();
  });
}

const closeServer = (server: Server | undefined): Promise<unknown> => new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));

describe.skipIf(!built)('demo server (scripts/demo-web.mjs)', () => {
  let server: Server;
  let origin: string;
  beforeAll(async () => ({ server, origin } = await serveDemo()));
  afterAll(() => closeServer(server));

  it('serves the page, the browser build and the MiniLM data', async () => {
    expect((await rawGet(origin, '/'))[0]).toBe(302);
    expect((await rawGet(origin, DEMO_PAGE))[0]).toBe(200);
    expect((await rawGet(origin, '/demo/web/app.js'))[0]).toBe(200);
    expect((await rawGet(origin, `/${BROWSER_BUNDLE}`))[0]).toBe(200);
    const [status, body] = await rawGet(origin, '/data/minilm.json');
    expect(status).toBe(200);
    const meta = JSON.parse(body) as { n: number; d: number; titles: string[] };
    expect([meta.n, meta.d, meta.titles.length]).toEqual([778, 384, 778]);
    const [binStatus, bin] = await rawGet(origin, '/data/minilm.bin');
    expect([binStatus, bin.length]).toEqual([200, 778 * 384 * 4]);
  });

  it('serves nothing outside its folders (no path traversal), and survives bad paths', async () => {
    const outside = [
      '/package.json', '/dist/browser/../../package.json', '/demo/web/../../package.json',
      '/demo/web/%2e%2e/%2e%2e/package.json', '/demo/web/..%2f..%2fpackage.json', '/demo/web/..%5c..%5cpackage.json',
      '/dist/browser/%2e%2e%2f%2e%2e%2fscripts/demo-web.mjs', '//etc/passwd', '/demo/web/%00index.html',
      '/test/data/siftsmall/siftsmall_base.bvecs', '/node_modules/@sap-ux/fiori-docs-embeddings/package.json',
      '/dist/cli/demo.js', '/demo/web/', '/demo/web/%E0%A4%A', '/demo/web/..',
    ];
    for (const path of outside) {
      const [status] = await rawGet(origin, path);
      expect(status, path).toBeGreaterThanOrEqual(400);
    }
    expect((await rawGet(origin, DEMO_PAGE))[0], 'still serving').toBe(200);
  });
});

const missing = built ? browserMissing() : 'no build';

describe.skipIf(missing)('the demo page in chromium (MiniLM)', () => {
  let server: Server;
  let browser: Browser;
  let page: Page;
  let twinPairs = 0;

  beforeAll(async () => {
    let origin: string;
    ({ server, origin } = await serveDemo());
    ({ browser, page } = await openPage(origin, console.warn, DEMO_PAGE));
    await page.setViewportSize({ width: 1280, height: 900 });
    const { x, d } = loadFioriCorpus();
    const cpu = await createBackend({ backend: 'cpu' });
    twinPairs = (await dedup(cpu, x, d, { metric: 'cosine', threshold: THRESHOLD })).pairs;
    cpu.dispose();
  });

  afterAll(async () => {
    await browser?.close();
    await closeServer(server);
  });

  /** Clicks `selector` and waits until the page's job is done (the buttons are back), then checks no error shows. */
  async function act(selector: string): Promise<void> {
    await page.click(selector);
    await page.waitForFunction("!document.getElementById('load-minilm').disabled", null, { timeout: 300_000 });
    const error = await page.evaluate<string>("document.getElementById('error').hidden ? '' : document.getElementById('error').textContent");
    expect(error, `the page's error after ${selector}`).toBe('');
  }

  const cells = (selector: string): Promise<string[][]> =>
    page.$$eval(`${selector} tbody tr`, (rows) => rows.map((r) => [...r.querySelectorAll('td')].map((c) => c.textContent ?? '')));

  it('finds the MiniLM near-duplicates with titles, a row\'s neighbours, and times each backend', async () => {
    const offered = await page.$$eval('#backend option', (os) => os.map((o) => o.getAttribute('value') ?? ''));
    const described = await page.$$eval('#backends li', (lis) => lis.map((li) => li.textContent));
    console.log(`[demo page] backends: ${described.join('; ')}`);
    expect(offered).toContain('webgpu');
    expect(offered).toContain('cpu');

    await act('#load-minilm');
    expect(await page.textContent('#data-status')).toContain('778 vectors of 384 dimensions, with titles');

    await page.selectOption('#backend', 'webgpu');
    await page.fill('#threshold', String(THRESHOLD));
    await act('#run-dedup');
    const summary = (await page.textContent('#dedup-summary')) ?? '';
    console.log(`[demo page] ${summary}`);
    expect(summary.startsWith(`${twinPairs} pairs at cosine ≥ ${THRESHOLD}`), `${summary} (the Node CPU twin finds ${twinPairs})`).toBe(true);
    const pairs = await cells('#pairs');
    expect(pairs.length).toBe(Math.min(twinPairs, 40));
    for (const [score, i, ti, j, tj] of pairs) {
      expect(Number(score)).toBeGreaterThanOrEqual(THRESHOLD);
      expect(i).toMatch(/^#\d+$/);
      expect(j).toMatch(/^#\d+$/);
      expect(ti.length > 0 && tj.length > 0, `titles of ${i} and ${j}`).toBe(true);
    }

    // A row of the first pair: its link fills in the row and searches.
    await act('#pairs tbody tr:first-child td:nth-child(2) a');
    const hits = await cells('#neighbours');
    expect(hits.length).toBe(K);
    const scores = hits.map((h) => Number(h[1]));
    expect(scores[0]).toBeGreaterThanOrEqual(Number(pairs[0][0]) - 1e-4);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    for (const h of hits) expect(h[3].length).toBeGreaterThan(0);
    expect(await page.textContent('#search-summary')).toContain(`nearest rows to ${pairs[0][1]}`);

    await act('#run-timing');
    const bars = await page.$$eval('#chart svg rect', (rs) => rs.map((r) => r.getAttribute('data-backend')));
    expect(bars.filter((b) => b === 'webgpu').length).toBe(2);
    expect(bars.filter((b) => b === 'cpu').length).toBe(2);
    const timing = (await page.textContent('#timing-summary')) ?? '';
    const chart = await page.$$eval('#chart svg text', (ts) => ts.map((t) => t.textContent).join(' '));
    console.log(`[demo page] chart: ${chart}. ${timing}`);
    expect(timing).toContain('(the same)');

    const part = `${SCREENSHOT}.part.png`;
    await page.screenshot({ path: part, fullPage: true });
    renameSync(part, SCREENSHOT);
    console.log(`[demo page] screenshot: ${SCREENSHOT}`);
  }, 600_000);

  it('keeps the search index in IndexedDB (serialize) and reloads it on the next visit (deserializeIndex)', async () => {
    await page.evaluate("new Promise((resolve) => { const r = indexedDB.deleteDatabase('webgpu-knn-demo'); r.onsuccess = r.onerror = resolve; })");
    const search = async (): Promise<string[][]> => {
      await act('#load-minilm');
      await page.selectOption('#backend', 'cpu');
      await page.fill('#search-row', '7');
      await act('#run-search');
      return cells('#neighbours');
    };
    const built = await search();
    const keptLine = (await page.textContent('#index-status')) ?? '';
    console.log(`[demo page] ${keptLine}`);
    expect(keptLine).toMatch(/^Index built on cpu and kept in IndexedDB \(778 vectors, [\d,]+ KiB serialized; holds [\d,]+ KiB on the host, 0 KiB on the device\): the next visit reloads it\.$/);

    await page.reload();
    await page.waitForFunction(() => (globalThis as { knnReady?: boolean }).knnReady === true, null, { timeout: 60_000 });
    const reloadLine = (await page.textContent('#index-status')) ?? '';
    console.log(`[demo page] ${reloadLine}`);
    expect(reloadLine).toMatch(/^Reloaded from IndexedDB: the index of .*MiniLM.* kept on .*778 vectors.*; searching those vectors uses it\.$/);
    const again = await search();
    expect(await page.textContent('#index-status')).toMatch(/^Index of .* reloaded from IndexedDB on cpu \(not rebuilt\): 778 vectors/);
    expect(again, 'the reloaded index finds the same neighbours').toEqual(built);
  }, 120_000);

  /** Hands the page's file input a file made here, waits for the page, and returns [data status, error]. */
  async function give(name: string, bytes: Uint8Array | string): Promise<[string, string]> {
    await page.setInputFiles('#file', { name, mimeType: 'application/octet-stream', buffer: Buffer.from(bytes) });
    await page.waitForFunction("!document.getElementById('load-minilm').disabled", null, { timeout: 60_000 });
    const error = await page.evaluate<string>("document.getElementById('error').hidden ? '' : document.getElementById('error').textContent");
    return [(await page.textContent('#data-status')) ?? '', error];
  }

  it('reads .npy, .fvecs and .jsonl files, and names the file and the fault of a bad one', async () => {
    const rows = new Float32Array([1, 0, 0, 0, 0.99, 0.1, 0, 0, 0, 0, 1, 0]);
    const npy = new Uint8Array([...npyHeader('float', 3, 4), ...new Uint8Array(rows.buffer)]);
    expect(await give('three.npy', npy)).toEqual(['three.npy: 3 vectors of 4 dimensions, no titles (rows are shown by number).', '']);
    const fvecs = new DataView(new ArrayBuffer(3 * 20));
    for (let i = 0; i < 3; i++) {
      fvecs.setInt32(i * 20, 4, true);
      for (let j = 0; j < 4; j++) fvecs.setFloat32(i * 20 + 4 + 4 * j, rows[i * 4 + j], true);
    }
    expect((await give('three.fvecs', new Uint8Array(fvecs.buffer)))[1]).toBe('');
    const jsonl = '{"title":"one","vector":[1,0,0]}\n\n{"title":"one again","embedding":[0.99,0.1,0]}\n[0,0,1]\n';
    expect(await give('three.jsonl', jsonl)).toEqual(['three.jsonl: 3 vectors of 3 dimensions, with titles.', '']);
    await act('#run-dedup');
    expect(await cells('#pairs')).toEqual([[expect.stringMatching(/^0\.99/), '#0', 'one', '#1', 'one again']]);

    const bad: [string, Uint8Array | string, string][] = [
      ['short.fvecs', new Uint8Array(fvecs.buffer, 0, 50), 'short.fvecs: 50 bytes is not a whole number of rows of 20 bytes (dim 4)'],
    ['zero.fvecs', new Uint8Array(8), "zero.fvecs: the first row's dim (int32 at byte 0) is 0"],
      ['mixed.jsonl', '[1,2]\n{"vector":[1,2,3]}\n', 'mixed.jsonl: line 2 has 3 values; expected 2'],
      ['broken.jsonl', '[1,2]\n[1,2\n', 'broken.jsonl: line 2 is not valid JSON'],
      ['words.jsonl', '{"text":"no vector"}\n', "words.jsonl: line 1 is neither an array of numbers nor an object with a numeric 'embedding'"],
      ['fake.npy', 'not numpy at all', 'fake.npy: not a .npy file'],
      ['cut.npy', npy.subarray(0, npy.length - 4), 'cut.npy: truncated'],
      ['notes.txt', 'hello', "notes.txt: unknown file type '.txt'"],
    ];
    for (const [name, bytes, want] of bad) {
      const [status, error] = await give(name, bytes);
      expect(error.startsWith(want), `${name}: ${error}`).toBe(true);
      expect(status, 'the good data stay loaded').toContain('three.jsonl');
    }
  }, 120_000);
});
