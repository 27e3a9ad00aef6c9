#!/usr/bin/env node
// Writes the data set that `bench compare --data clustered --n N --d D --nq NQ --seed S` generates
// to two .npy files, base (N rows) and queries (NQ rows), for scripts/device-check.sh. The check
// needs the data as files so that an exact ground truth computed outside Node (scripts/device-gt.py,
// on the GPU) can be handed to `bench compare --gt`: the benchmark's own float64 reference is one
// JavaScript thread, hours at n = 1e6, nq = 1e4. The rows come from the benchmark's own generator
// (dist/bench/data.js), so they are the very rows `--data clustered` measures.
// usage: node scripts/device-data.mjs APP_DIR N D NQ SEED BASE.npy QUERY.npy
// APP_DIR: a built copy of this package (the repo root, or the unpacked .device/app.tar.xz).
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [app, nArg, dArg, nqArg, seedArg, basePath, queryPath] = process.argv.slice(2);
const ints = [nArg, dArg, nqArg, seedArg].map(Number);
if (!queryPath || !ints.every((v) => Number.isInteger(v) && v >= 1) || !basePath.endsWith('.npy') || !queryPath.endsWith('.npy')) {
  console.error('usage: node scripts/device-data.mjs APP_DIR N D NQ SEED BASE.npy QUERY.npy (N, D, NQ, SEED integers >= 1)');
  process.exit(2);
}
const [n, d, nq, seed] = ints;
const dataJs = join(resolve(app), 'dist', 'bench', 'data.js');
const indexJs = join(resolve(app), 'dist', 'index.js');
for (const f of [dataJs, indexJs]) {
  if (!existsSync(f)) {
    console.error(`device-data: ${f} not found: APP_DIR must hold a built webgpu-knn (npm run build)`);
    process.exit(1);
  }
}
const { loadBenchData } = await import(pathToFileURL(dataJs).href);
const { writeVectors } = await import(pathToFileURL(indexJs).href);
const t = performance.now();
const data = await loadBenchData('clustered', n, d, nq, seed);
writeVectors(basePath, data.xb, data.n, data.d);
writeVectors(queryPath, data.xq, data.nq, data.d);
console.log(`device-data: ${data.name}, n=${data.n} d=${data.d} nq=${data.nq} seed=${seed} -> ${basePath}, ${queryPath} in ${((performance.now() - t) / 1000).toFixed(1)} s`);
