// The demo page (npm run demo:web): vectors from a dropped file or the bundled MiniLM embeddings;
// near-duplicate pairs (the library's dedup, cosine >= T, exact), a row's nearest neighbours
// (FlatIndex, cosine), and the same dedup and a batch search timed on every backend, drawn as an
// SVG bar chart. Everything runs in this tab on the browser build; the server only hands out files.
// The search's index is kept in IndexedDB (serialize) and reloaded on the next visit
// (deserializeIndex), so searching the same vectors again does not rebuild it.
import { FlatIndex, InvalidArgumentError, createBackend, dedup, deserializeIndex } from '/dist/browser/webgpu-knn.js';
import { ACCEPTED, parseVectorFile } from './formats.js';

/** Backends to offer, in this order; those createBackend does not accept (this build lacks them) are left out. */
const CANDIDATES = ['webgpu', 'gpujs', 'cpu'];
const COLORS = { webgpu: '#2563eb', gpujs: '#16a34a', cpu: '#f97316' };
/** Most pairs a dedup keeps (16 bytes each); more is an error that says to raise the threshold. */
const MAX_PAIRS = 1_000_000;
/** Most pairs listed in the table (the best first). */
const SHOW_PAIRS = 40;
/** The batch search of the timing: this many rows' TIMING_K nearest. */
const TIMING_QUERIES = 2000;
const TIMING_K = 10;
const WARMUP_ROWS = 64;

const $ = (id) => document.getElementById(id);
const backends = new Map(); // name -> Backend
const unavailable = new Map(); // name -> why not
const indexes = new Map(); // backend name -> FlatIndex of the current data
let data = null; // { name, x, n, d, titles }
let busy = false;

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  Object.assign(node, props);
  node.append(...children);
  return node;
}

const fmt = (x) => x.toLocaleString('en-US');
const ms = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
const titleOf = (i) => data.titles?.[i] || '';

function showError(err) {
  const box = $('error');
  box.textContent = err ? String(err.message ?? err) : '';
  box.hidden = !err;
}

/** Runs `job` with the buttons off and `label` shown; errors go to the error box. */
async function exclusive(label, job) {
  if (busy) return;
  busy = true;
  showError(null);
  $('busy').textContent = label;
  syncButtons();
  try {
    await job();
  } catch (err) {
    showError(err);
  } finally {
    busy = false;
    $('busy').textContent = '';
    syncButtons();
  }
}

function syncButtons() {
  const ready = !busy && data !== null && backends.size > 0;
  for (const id of ['run-dedup', 'run-search', 'run-timing']) $(id).disabled = !ready;
  $('load-minilm').disabled = busy;
}

// ---- backends ----

async function startBackends() {
  for (const name of CANDIDATES) {
    try {
      backends.set(name, await createBackend({ backend: name }));
    } catch (err) {
      if (err instanceof InvalidArgumentError) continue; // not a backend of this build
      unavailable.set(name, String(err.message).split('\n')[0]);
    }
  }
  const list = $('backends');
  list.replaceChildren();
  // A backend's description starts with its name: `webgpu (navigator.gpu: <adapter>; ...)`.
  for (const [name, b] of backends) {
    const rest = b.description.startsWith(name) ? b.description.slice(name.length) : `: ${b.description}`;
    list.append(el('li', {}, el('b', { textContent: name }), rest));
  }
  for (const [name, why] of unavailable) list.append(el('li', { className: 'off' }, el('b', { textContent: name }), ` unavailable: ${why}`));
  const select = $('backend');
  for (const name of backends.keys()) select.append(el('option', { value: name, textContent: name }));
  window.addEventListener('pagehide', () => {
    for (const b of backends.values()) b.dispose();
  });
}

const current = () => $('backend').value;

async function indexFor(name) {
  if (!indexes.has(name)) {
    const kept = await keptIndex();
    const fp = fingerprint(data.x);
    let index;
    if (kept && kept.fingerprint === fp && kept.n === data.n && kept.d === data.d) {
      index = await deserializeIndex(backends.get(name), kept.bytes);
      $('index-status').textContent = `Index of ${kept.data} reloaded from IndexedDB on ${name} (not rebuilt): ${describeIndex(index, kept.bytes)}.`;
    } else {
      index = new FlatIndex(backends.get(name), { dim: data.d, metric: 'cosine' });
      await index.add(data.x);
      const bytes = await index.serialize();
      const why = await keepIndex({ data: data.name, n: data.n, d: data.d, fingerprint: fp, bytes, savedAt: Date.now() });
      $('index-status').textContent = why
        ? `Index built on ${name} (${describeIndex(index, bytes)}); it could not be kept in IndexedDB: ${why}.`
        : `Index built on ${name} and kept in IndexedDB (${describeIndex(index, bytes)}): the next visit reloads it.`;
    }
    indexes.set(name, index);
  }
  return indexes.get(name);
}

// ---- the index kept in IndexedDB (serialize / deserializeIndex) ----

const DB_NAME = 'webgpu-knn-demo';
const DB_STORE = 'indexes';
const DB_KEY = 'search-index';

/** Runs `request(store)` in one transaction of the demo's database: its result, or null where IndexedDB is unavailable. */
function inDatabase(mode, request) {
  return new Promise((resolve, reject) => {
    if (!globalThis.indexedDB) return resolve(null);
    const open = indexedDB.open(DB_NAME, 1);
    open.onupgradeneeded = () => open.result.createObjectStore(DB_STORE);
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const db = open.result;
      const tx = db.transaction(DB_STORE, mode);
      const req = request(tx.objectStore(DB_STORE));
      tx.oncomplete = () => { db.close(); resolve(req.result ?? null); };
      tx.onerror = tx.onabort = () => { db.close(); reject(tx.error); };
    };
  });
}

/** The kept index ({ data, n, d, fingerprint, bytes, savedAt }), or null (none, or IndexedDB unreadable here). */
const keptIndex = () => inDatabase('readonly', (s) => s.get(DB_KEY)).catch(() => null);
/** Keeps `entry`; resolves to why it could not (a full or disabled storage), or '' when kept. */
const keepIndex = (entry) => inDatabase('readwrite', (s) => s.put(entry, DB_KEY)).then(() => (globalThis.indexedDB ? '' : 'no IndexedDB here'), (err) => String(err?.message ?? err));
const forgetIndex = () => inDatabase('readwrite', (s) => s.delete(DB_KEY)).catch(() => null);

/** A 32-bit FNV-1a hash of the vectors' words: the kept index is used only for the very vectors it was built of. */
function fingerprint(x) {
  const w = new Uint32Array(x.buffer, x.byteOffset, x.length);
  let h = 0x811c9dc5 ^ w.length;
  for (let i = 0; i < w.length; i++) h = Math.imul(h ^ w[i], 0x01000193);
  return h >>> 0;
}

const kib = (bytes) => `${fmt(Math.round(bytes / 1024))} KiB`;
function describeIndex(index, bytes) {
  const m = index.memoryBytes;
  return `${fmt(index.ntotal)} vectors, ${kib(bytes.byteLength)} serialized; holds ${kib(m.host)} on the host, ${kib(m.device)} on the device`;
}

/** On load: reads the index kept by an earlier visit back (checking it whole) and says so. */
async function reloadKept() {
  const kept = await keptIndex();
  if (!kept) return;
  const [name, backend] = backends.entries().next().value;
  try {
    const index = await deserializeIndex(backend, kept.bytes);
    const when = new Date(kept.savedAt).toLocaleString('en-US');
    $('index-status').textContent = `Reloaded from IndexedDB: the index of ${kept.data} kept on ${when} (${describeIndex(index, kept.bytes)}, read on ${name}); searching those vectors uses it.`;
    await index.dispose();
  } catch (err) {
    await forgetIndex();
    $('index-status').textContent = `The index kept in IndexedDB could not be read (${err.message}); it was dropped.`;
  }
}

// ---- data ----

async function useData(next) {
  for (const index of indexes.values()) await index.dispose();
  indexes.clear();
  data = next;
  const titles = data.titles ? 'with titles' : 'no titles (rows are shown by number)';
  $('data-status').textContent = `${data.name}: ${fmt(data.n)} vectors of ${data.d} dimensions, ${titles}.`;
  $('search-row').max = String(data.n - 1);
  for (const id of ['dedup-summary', 'search-summary', 'timing-summary']) $(id).textContent = '';
  for (const id of ['pairs', 'neighbours']) $(id).tBodies[0].replaceChildren();
  $('chart').replaceChildren();
}

async function loadMiniLM() {
  const [meta, bin] = await Promise.all([fetch('/data/minilm.json'), fetch('/data/minilm.bin')]);
  if (!meta.ok || !bin.ok) throw new Error(`the bundled embeddings: HTTP ${meta.status} / ${bin.status} from the demo server`);
  const { name, source, n, d, titles } = await meta.json();
  const x = new Float32Array(await bin.arrayBuffer());
  if (x.length !== n * d) throw new Error(`the bundled embeddings: ${x.length} floats; expected ${n} x ${d}`);
  await useData({ name: `${name} (${source})`, x, n, d, titles });
}

async function loadFile(file) {
  const parsed = await parseVectorFile(file.name, await file.arrayBuffer());
  await useData({ name: file.name, ...parsed });
}

// ---- dedup ----

/** A row cell: its number, a link that searches from it. */
function rowLink(i) {
  const a = el('a', { href: '#', textContent: `#${i}`, title: 'nearest neighbours of this row' });
  a.addEventListener('click', (e) => {
    e.preventDefault();
    $('search-row').value = String(i);
    exclusive('searching…', runSearch);
  });
  return el('td', { className: 'num' }, a);
}

async function runDedup() {
  const threshold = Number($('threshold').value);
  if (!(threshold >= -1 && threshold <= 1)) throw new Error(`the threshold is a cosine, between -1 and 1; got ${$('threshold').value}`);
  const name = current();
  const t0 = performance.now();
  const r = await dedup(backends.get(name), data.x, data.d, {
    metric: 'cosine', threshold, maxPairs: MAX_PAIRS,
    onProgress: (p) => { $('busy').textContent = `dedup on ${name}: ${fmt(p.rowsDone)} of ${fmt(p.n)} rows`; },
  });
  const took = performance.now() - t0;
  const order = Array.from(r.score.keys()).sort((a, b) => r.score[b] - r.score[a] || r.i[a] - r.i[b] || r.j[a] - r.j[b]);
  const shown = order.slice(0, SHOW_PAIRS);
  $('dedup-summary').textContent =
    `${fmt(r.pairs)} pairs at cosine ≥ ${threshold} in ${fmt(r.clusters.length)} groups; keeping the first row of each group drops ${fmt(r.drop.length)}. ` +
    `${ms(took)} ms on ${name}.${r.pairs > shown.length ? ` The ${shown.length} closest:` : ''}`;
  $('pairs').tBodies[0].replaceChildren(...shown.map((p) => el('tr', {},
    el('td', { className: 'num', textContent: r.score[p].toFixed(4) }),
    rowLink(r.i[p]), el('td', { className: 'title', textContent: titleOf(r.i[p]) }),
    rowLink(r.j[p]), el('td', { className: 'title', textContent: titleOf(r.j[p]) }))));
}

// ---- search ----

async function runSearch() {
  const row = Number($('search-row').value);
  const k = Number($('search-k').value);
  if (!Number.isInteger(row) || row < 0 || row >= data.n) throw new Error(`row must be a row number from 0 to ${data.n - 1}; got ${$('search-row').value}`);
  if (!Number.isInteger(k) || k < 1 || k > 100) throw new Error(`k must be a whole number from 1 to 100; got ${$('search-k').value}`);
  const name = current();
  const index = await indexFor(name);
  const t0 = performance.now();
  // One more than k: the row itself comes back too (cosine 1), and is left out.
  const { labels, distances } = await index.search(data.x.subarray(row * data.d, (row + 1) * data.d), Math.min(k + 1, data.n));
  const took = performance.now() - t0;
  const hits = [];
  for (let j = 0; j < labels.length && hits.length < k; j++) if (labels[j] !== row && labels[j] >= 0) hits.push([labels[j], distances[j]]);
  const title = titleOf(row);
  $('search-summary').textContent = `The ${hits.length} nearest rows to #${row}${title ? ` “${title}”` : ''}: ${ms(took)} ms on ${name}.`;
  $('neighbours').tBodies[0].replaceChildren(...hits.map(([id, score], rank) => el('tr', {},
    el('td', { className: 'num', textContent: String(rank + 1) }),
    el('td', { className: 'num', textContent: score.toFixed(4) }),
    rowLink(id), el('td', { className: 'title', textContent: titleOf(id) }))));
}

// ---- timing ----

async function runTiming() {
  const threshold = Number($('threshold').value);
  if (!(threshold >= -1 && threshold <= 1)) throw new Error(`the threshold is a cosine, between -1 and 1; got ${$('threshold').value}`);
  const { x, n, d } = data;
  const nq = Math.min(n, TIMING_QUERIES);
  const opts = { metric: 'cosine', threshold, maxPairs: MAX_PAIRS };
  const rows = [];
  for (const [name, backend] of backends) {
    $('busy').textContent = `timing ${name}…`;
    await dedup(backend, x.subarray(0, Math.min(n, WARMUP_ROWS) * d), d, opts);
    let t = performance.now();
    const r = await dedup(backend, x, d, opts);
    const dedupMs = performance.now() - t;
    const index = new FlatIndex(backend, { dim: d, metric: 'cosine' });
    try {
      await index.add(x);
      await index.search(x.subarray(0, d), TIMING_K);
      t = performance.now();
      await index.search(x.subarray(0, nq * d), TIMING_K);
      rows.push({ name, dedupMs, searchMs: performance.now() - t, pairs: r.pairs });
    } finally {
      await index.dispose();
    }
  }
  drawChart([
    { label: `dedup: all ${fmt((n * (n - 1)) / 2)} pairs, cosine ≥ ${threshold}`, values: rows.map((r) => [r.name, r.dedupMs]) },
    { label: `batch search: ${fmt(nq)} rows’ ${TIMING_K} nearest of ${fmt(n)}`, values: rows.map((r) => [r.name, r.searchMs]) },
  ]);
  const agree = rows.every((r) => r.pairs === rows[0].pairs);
  $('timing-summary').textContent = `Milliseconds in this tab (shorter is faster), after one warm-up each. Pairs found: ${rows.map((r) => `${r.name} ${fmt(r.pairs)}`).join(', ')}${agree ? ' (the same)' : ' (they differ!)'}.`;
}

/** Horizontal bars, one group per task, each scaled to its slowest backend, labelled in ms. */
function drawChart(groups) {
  const NS = 'http://www.w3.org/2000/svg';
  const width = 1100;
  const labelW = 80;
  const barMax = 860;
  const barH = 20;
  const gap = 6;
  let y = 0;
  const parts = [];
  const text = (x, yy, s, attrs = {}) => {
    const t = document.createElementNS(NS, 'text');
    Object.entries({ x, y: yy, 'font-size': 13, fill: '#1f2933', ...attrs }).forEach(([k, v]) => t.setAttribute(k, String(v)));
    t.textContent = s;
    return t;
  };
  for (const g of groups) {
    y += 18;
    parts.push(text(0, y, g.label, { 'font-weight': 600 }));
    y += 8;
    const max = Math.max(...g.values.map(([, v]) => v), 1e-9);
    for (const [name, v] of g.values) {
      const w = Math.max(2, (v / max) * barMax);
      parts.push(text(0, y + barH - 6, name));
      const rect = document.createElementNS(NS, 'rect');
      Object.entries({ x: labelW, y, width: w, height: barH, rx: 3, fill: COLORS[name] ?? '#7b8794' }).forEach(([k, val]) => rect.setAttribute(k, String(val)));
      rect.dataset.backend = name;
      parts.push(rect);
      const inside = w > 90;
      parts.push(text(inside ? labelW + w - 6 : labelW + w + 6, y + barH - 6, `${ms(v)} ms`, inside ? { 'text-anchor': 'end', fill: '#fff' } : {}));
      y += barH + gap;
    }
    y += 6;
  }
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('viewBox', `0 0 ${width} ${y}`);
  svg.setAttribute('width', String(width));
  svg.setAttribute('height', String(y));
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', 'milliseconds per backend');
  svg.append(...parts);
  $('chart').replaceChildren(svg);
}

// ---- wiring ----

function wire() {
  $('load-minilm').addEventListener('click', () => exclusive('loading the MiniLM embeddings…', loadMiniLM));
  $('file').addEventListener('change', (e) => {
    const file = e.target.files?.[0];
    if (file) exclusive(`reading ${file.name}…`, () => loadFile(file));
    e.target.value = '';
  });
  const drop = $('drop');
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    const files = [...(e.dataTransfer?.files ?? [])];
    if (files.length !== 1) {
      showError(new Error(`drop one file (${ACCEPTED.join(', ')}); got ${files.length}`));
      return;
    }
    exclusive(`reading ${files[0].name}…`, () => loadFile(files[0]));
  });
  $('run-dedup').addEventListener('click', () => exclusive('finding pairs…', runDedup));
  $('run-search').addEventListener('click', () => exclusive('searching…', runSearch));
  $('run-timing').addEventListener('click', () => exclusive('timing…', runTiming));
  $('backend').addEventListener('change', () => { $('search-summary').textContent = ''; });
}

wire();
syncButtons();
await startBackends();
if (backends.size === 0) showError(new Error('no backend could start here'));
else await reloadKept();
syncButtons();
window.knnReady = true;
