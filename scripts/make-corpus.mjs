#!/usr/bin/env node
// Writes a clustered float32 .npy corpus of any size block by block (for the scale measurements in
// the README): usage: node scripts/make-corpus.mjs ROWS DIM OUT.npy [SEED]. Rows are one of 1024
// seeded centres (uniform in [0, 1)) plus uniform noise of +-0.05 in each coordinate.
import { closeSync, openSync, writeSync } from 'node:fs';

const [rowsArg, dimArg, out, seedArg = '1'] = process.argv.slice(2);
const rows = Number(rowsArg);
const dim = Number(dimArg);
if (!Number.isInteger(rows) || rows < 1 || !Number.isInteger(dim) || dim < 1 || !out?.endsWith('.npy')) {
  console.error('usage: node scripts/make-corpus.mjs ROWS DIM OUT.npy [SEED]');
  process.exit(2);
}
/** A seeded xorshift32 generator of floats in [0, 1). */
function xorshift(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
}
const centres = Float32Array.from({ length: 1024 * dim }, xorshift(0x5eed));
const random = xorshift(Number(seedArg) * 2654435761);
let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${rows}, ${dim}), }`;
const total = Math.ceil((10 + header.length + 1) / 64) * 64;
header = header.padEnd(total - 11, ' ') + '\n';
const head = Buffer.alloc(total);
head.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]);
head.writeUInt16LE(header.length, 8);
head.write(header, 10, 'latin1');
const fd = openSync(out, 'w');
writeSync(fd, head);
const blockRows = Math.max(1, Math.floor((16 << 20) / (4 * dim)));
const block = new Float32Array(blockRows * dim);
for (let r0 = 0; r0 < rows; r0 += blockRows) {
  const n = Math.min(blockRows, rows - r0);
  for (let i = 0; i < n; i++) {
    const c = Math.floor(random() * 1024) * dim;
    for (let j = 0; j < dim; j++) block[i * dim + j] = centres[c + j] + (random() - 0.5) * 0.1;
  }
  writeSync(fd, new Uint8Array(block.buffer, 0, n * dim * 4));
}
closeSync(fd);
console.error(`wrote ${out}: ${rows} x ${dim} float32`);
