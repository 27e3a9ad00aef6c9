// The CAGRA walk's profile: per itopk, recall@k, queries/s, and the walk's work per query
// (iterations, distances computed, from timings.walk: the same on every device, the CPU twin takes
// the kernel's steps) and its time per iteration; and the build: how the intermediate graph was
// made (exact or IVF) and, for IVF, its recall, and the seconds of each of its phases (phaseSeconds:
// from the progress buildGraph reports). One JSON line per row.
//   node scripts/graph-profile.mjs --data siftsmall|fashion-mnist|clustered|uniform [--n 1000000 --d 128]
//        [--backend webgpu|cpu] [--degree 32] [--itopk 16,32,64] [--k 10] [--nq 1000] [--batch 1000]
//        [--intermediate auto|exact|ivf] [--intermediate-nprobe P (default: the build chooses)] [--no-truth] [--check-cpu]
//        [--graph-team auto|1|2|...|64 (tuning.graphTeam: the walk's lanes a row; default the device's)]
// --check-cpu: the index saved, loaded on the CPU backend and searched with the same queries:
// labelsEqual says whether every label is the same (the CPU walks with the kernel's twin).
// Needs `npm run build` first (it runs dist/). Not interleaved: the comparison against the peers
// is `bench compare`. Recall is against a Flat index of the same rows (skipped with --no-truth).
import { parseArgs } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FlatIndex, GraphIndex, createBackend, loadIndex } from '../dist/index.js';
import { loadData, recallAt, seconds, timedSearch as timedIn } from './graph-kit.mjs';

const { values: v } = parseArgs({
  options: {
    data: { type: 'string', default: 'siftsmall' },
    backend: { type: 'string', default: 'webgpu' },
    degree: { type: 'string', default: '32' },
    itopk: { type: 'string', default: '16,32,64' },
    k: { type: 'string', default: '10' },
    nq: { type: 'string' },
    n: { type: 'string', default: '100000' },
    d: { type: 'string', default: '128' },
    batch: { type: 'string', default: '1000' },
    intermediate: { type: 'string', default: 'auto' },
    'intermediate-nprobe': { type: 'string' },
    'no-truth': { type: 'boolean', default: false },
    'check-cpu': { type: 'boolean', default: false },
    'graph-team': { type: 'string' },
  },
});
const k = Number(v.k);
const batch = Number(v.batch);
const data = await loadData(v);
const graphTeam = v['graph-team'] === undefined ? undefined : v['graph-team'] === 'auto' ? 'auto' : Number(v['graph-team']);
const backend = await createBackend({ backend: v.backend, tuning: graphTeam === undefined ? {} : { graphTeam } });
const log = (o) => console.log(JSON.stringify({ data: data.name, n: data.n, d: data.d, nq: data.nq, k, batch, backend: backend.kind, graphTeam: backend.device.tuning.graphTeam, ...o }));
const round = (x, p = 3) => Number(x.toFixed(p));

/** As graph-kit's timedSearch, with the timed batches' timings (the untimed first batch left out). */
async function timedSearch(index, params) {
  const timings = { uploadMs: 0, computeMs: 0, readbackMs: 0 };
  await index.search(data.xq.subarray(0, Math.min(batch, data.nq) * data.d), k, params); // warm
  return { ...(await timedIn(index, data, k, batch, { ...params, timings }, false)), timings };
}

let truth = null;
if (!v['no-truth']) {
  const flat = new FlatIndex(backend, { dim: data.d });
  await flat.add(data.xb);
  truth = (await timedSearch(flat, {})).labels;
  await flat.dispose();
}
const recall = (labels) => (truth ? recallAt(labels, truth, data.nq, k) : null);

const t0 = performance.now();
const index = new GraphIndex(backend, {
  dim: data.d,
  degree: Number(v.degree),
  intermediateGraph: v.intermediate,
  intermediateNprobe: v['intermediate-nprobe'] === undefined ? undefined : Number(v['intermediate-nprobe']),
});
await index.add(data.xb);
// Each phase's seconds, from its first progress report to the next phase's (the last to the end).
const phases = [];
await index.buildGraph({
  onProgress: (p) => {
    if (phases[phases.length - 1]?.phase !== p.phase) phases.push({ phase: p.phase, t: performance.now() });
  },
});
const tEnd = performance.now();
const phaseSeconds = Object.fromEntries(phases.map((p, i) => [p.phase, round(((phases[i + 1]?.t ?? tEnd) - p.t) / 1000, 1)]));
log({ build: true, buildSeconds: round(seconds(t0), 1), phaseSeconds, intermediate: index.lastIntermediate, unreachable: index.unreachableRows });
let onCpu = null;
let cpu = null;
const dir = mkdtempSync(join(tmpdir(), 'graph-profile-'));
if (v['check-cpu']) {
  await index.save(join(dir, 'g.idx'));
  cpu = await createBackend({ backend: 'cpu' });
  onCpu = await loadIndex(cpu, join(dir, 'g.idx'));
}
for (const itopk of v.itopk.split(',').map(Number)) {
  const r = await timedSearch(index, { itopk });
  let labelsEqual;
  if (onCpu) {
    const c = await onCpu.search(data.xq.subarray(0, data.nq * data.d), k, { itopk });
    labelsEqual = c.labels.every((x, i) => x === r.labels[i]);
  }
  const w = r.timings.walk;
  log({
    itopk,
    recall: recall(r.labels),
    qps: round(r.qps, 1),
    iterationsPerQuery: round(w.iterations / w.queries, 1),
    maxIterations: w.maxIterations,
    distancesPerQuery: round(w.distances / w.queries, 1),
    // A batch's queries walk side by side: the search's time over its longest walks.
    msPerIteration: round(r.ms / Math.ceil(data.nq / batch) / w.maxIterations, 3),
    usPerQueryIteration: round((1000 * r.ms) / w.iterations, 2),
    ...(onCpu ? { labelsEqual } : {}),
  });
}
await onCpu?.dispose();
rmSync(dir, { recursive: true, force: true });
await index.dispose();
await backend.dispose?.();
