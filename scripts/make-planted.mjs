#!/usr/bin/env node
// Writes the `planted` set of 'bench clustered-dedup' (generated blobs with 5% planted near-copies;
// see plantedDuplicates in bench/data.ts) to a vector file, for the CLI's dedup measurements in the
// README: usage: node scripts/make-planted.mjs ROWS DIM OUT [SEED] (after npm run build).
import { writeVectors } from '../dist/index.js';
import { plantedDuplicates } from '../dist/bench/data.js';

const [rowsArg, dimArg, out, seedArg = '1'] = process.argv.slice(2);
const rows = Number(rowsArg);
const dim = Number(dimArg);
if (!Number.isInteger(rows) || rows < 1 || !Number.isInteger(dim) || dim < 1 || !out) {
  console.error('usage: node scripts/make-planted.mjs ROWS DIM OUT [SEED]');
  process.exit(2);
}
writeVectors(out, plantedDuplicates(rows, dim, Number(seedArg)), rows, dim);
console.error(`wrote ${out}: ${rows} x ${dim}`);
