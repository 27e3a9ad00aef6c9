#!/usr/bin/env node
// One compact table of a scripts/device-check.sh run: per k, every configuration `bench compare`
// measured (queries/s, recall) and the torch baseline's queries/s, each row with its ratio to torch
// at the same k (above 1 = faster than cuBLAS GEMM + torch.topk; for IVF rows an approximate search
// against an exact one, so read it with the recall beside it).
// usage: node scripts/device-summary.mjs RESULTS_DIR TITLE
// RESULTS_DIR holds compare-k<K>/compare.jsonl (bench compare --out) or, for a run cut short,
// compare-k<K>/stdout.jsonl (its stdout), the same for the graph index in
// compare-k10-graph-team<T> (its index named with the team), and torch.jsonl (torch_flat.py's
// stdout); any may be missing or partial: what is there is shown.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const [dir, title = 'device check'] = process.argv.slice(2);
if (!dir || !existsSync(dir)) {
  console.error(`usage: node scripts/device-summary.mjs RESULTS_DIR [TITLE]: ${dir ?? 'no RESULTS_DIR'} not found`);
  process.exit(2);
}

/** JSON objects of a file's lines that hold one; other lines (progress, nvidia-smi) are skipped. */
function jsonLines(path) {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .flatMap((l) => {
      try {
        return [JSON.parse(l)];
      } catch {
        return [];
      }
    });
}

const partial = [];
const ours = readdirSync(dir)
  .filter((f) => /^compare-k\d+(-graph-team\w+)?$/.test(f))
  .sort()
  .flatMap((f) => {
    const team = /-graph-team(\w+)$/.exec(f)?.[1];
    const named = (records) => (team ? records.map((r) => ({ ...r, index: `${r.index} team ${team}` })) : records);
    // compare.jsonl is written when a run ends; a run cut short leaves only its stdout's records.
    if (existsSync(join(dir, f, 'compare.jsonl'))) return named(jsonLines(join(dir, f, 'compare.jsonl')));
    partial.push(f.replace('compare-', ''));
    return named(jsonLines(join(dir, f, 'stdout.jsonl')));
  });
const torch = jsonLines(join(dir, 'torch.jsonl'));
const ks = [...new Set([...ours.map((r) => r.k), ...torch.map((r) => r.k)])].sort((a, b) => a - b);

const fix = (v, digits) => (v === null || v === undefined ? '-' : v.toFixed(digits));
const rows = [];
for (const k of ks) {
  const base = torch.find((r) => r.k === k);
  const ratio = (qps) => (base ? `${(qps / base.qps).toFixed(2)}x` : '-');
  for (const r of ours.filter((o) => o.k === k)) {
    rows.push([String(k), `${r.engine} ${r.backend}`, r.index, r.param, fix(r.recall1, 3), fix(r.recall10, 3), fix(r.recall100, 3), fix(r.qps, 0), ratio(r.qps), fix(r.buildSeconds, 1)]);
  }
  // Exact by construction (not scored: its data is its own); recall@r needs r <= k.
  const exact = (r) => (r <= k ? 'exact' : '-');
  if (base) rows.push([String(k), 'torch (cuBLAS+topk)', base.method.replace(/^torch-/, ''), '-', exact(1), exact(10), exact(100), fix(base.qps, 0), '1.00x', '-']);
}
const header = ['k', 'engine', 'index', 'param', 'recall@1', 'recall@10', 'recall@100', 'queries/s', 'vs torch', 'build s'];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
const line = (cells) => cells.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd();

const out = [`## ${title}`, ''];
const adapter = ours.find((r) => r.backend === 'webgpu')?.device;
if (adapter) out.push(`adapter: ${adapter}`);
if (torch[0]) out.push(`torch: ${torch[0].gpu}, ${torch[0].method} (its own random normal data, same n, d, nq)`);
out.push('');
if (rows.length) {
  out.push('```', line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line), '```');
  for (const k of partial) out.push(`${k}: that bench did not finish; its rows are the records it printed before it stopped`);
} else {
  out.push('nothing was measured (see the step lines below and device-check.log)');
}
console.log(out.join('\n'));
