#!/usr/bin/env node
// Flat and IVF search throughput in a real browser (headless chromium, scripts/browser-page.mjs):
// the browser build on the page's `webgpu`, `gpujs` (WebGL2) and `cpu` backends, on siftsmall (test/data) and on
// generated clustered data (100k x 128 by default), with recall@k against exact search (the same
// backend's Flat). Prints the adapter, a table, and one JSON line per configuration.
//
// Usage: npm run build && node scripts/browser-bench.mjs [--n 100000] [--nq 200] [--reps 3]
//        [--backends webgpu,gpujs,cpu] [--sets siftsmall,generated]
import { parseArgs } from 'node:util';
import { browserUnavailable, openPage, serve } from './browser-page.mjs';

const { values: o } = parseArgs({
  options: {
    n: { type: 'string', default: '100000' },
    nq: { type: 'string', default: '200' },
    reps: { type: 'string', default: '3' },
    backends: { type: 'string', default: 'webgpu,gpujs,cpu' },
    sets: { type: 'string', default: 'siftsmall,generated' },
  },
});
const K = 10;
const missing = browserUnavailable();
if (missing) {
  console.error(`browser-bench: ${missing}`);
  process.exit(1);
}
const n = Number(o.n);
const SETS = {
  siftsmall: { set: 'siftsmall', name: 'siftsmall 10k x 128', indexes: [{ type: 'Flat' }, { type: 'IVF', nlist: 64, nprobes: [8], seed: 1, niter: 10 }] },
  generated: {
    set: { n, d: 128, nq: Number(o.nq), clusters: 1000, seed: 7 },
    name: `generated ${n / 1000}k x 128`,
    // IVF trained on the first 20k rows (k-means over all rows would take longer than the searches).
    indexes: [{ type: 'Flat' }, { type: 'IVF', nlist: 256, nprobes: [16], seed: 1, niter: 5, trainRows: Math.min(n, 20_000) }],
  },
};

const { server, origin } = await serve();
const { browser, page } = await openPage(origin, (line) => console.error(line));
try {
  const adapter = await page.evaluate(() => globalThis.knn.adapterReport());
  console.log(`chromium ${browser.version()}; adapter ${JSON.stringify(adapter.info ?? adapter.error)}`);
  console.log(`limits: maxStorageBufferBindingSize ${adapter.limits?.maxStorageBufferBindingSize}, maxBufferSize ${adapter.limits?.maxBufferSize}, maxComputeInvocationsPerWorkgroup ${adapter.limits?.maxComputeInvocationsPerWorkgroup}, maxComputeWorkgroupStorageSize ${adapter.limits?.maxComputeWorkgroupStorageSize}`);
  const rows = [];
  for (const setName of o.sets.split(',')) {
    const s = SETS[setName];
    for (const backend of o.backends.split(',')) {
      const run = await page.evaluate((spec) => globalThis.knn.run(spec), { backend, set: s.set, k: K, indexes: s.indexes, reps: Number(o.reps) });
      const exact = run.results.find((r) => r.index === 'Flat').labels;
      for (const r of run.results) {
        const hits = r.labels.filter((id, i) => exact.slice(i - (i % K), i - (i % K) + K).includes(id)).length;
        const row = { set: s.name, backend, description: run.description, index: r.index, nprobe: r.nprobe, nq: run.nq, qps: Math.round(r.qps), searchMs: +r.searchMs.toFixed(1), buildMs: Math.round(r.buildMs), recall: +(hits / r.labels.length).toFixed(3) };
        rows.push(row);
        console.log(JSON.stringify(row));
      }
    }
  }
  console.log('\n| data | index | backend | queries/s | search ms | build ms | recall@10 vs Flat |\n|---|---|---|---:|---:|---:|---:|');
  for (const r of rows) console.log(`| ${r.set} | ${r.index}${r.nprobe ? ` nprobe ${r.nprobe}` : ''} | ${r.backend} | ${r.qps} | ${r.searchMs} | ${r.buildMs} | ${r.recall} |`);
} finally {
  await browser.close();
  server.close();
}
