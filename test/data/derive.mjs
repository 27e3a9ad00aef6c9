#!/usr/bin/env node
/**
 * Derives the compact copies in this folder from the original TEXMEX files (see README.md for
 * where they come from): `node test/data/derive.mjs <originals folder>`. Run by hand, never by the
 * tests (they read only this folder).
 *
 * Base and query .fvecs become .bvecs (uint8): every value must be an integer in 0..255 (and not
 * -0), else it stops. It then checks that the .bvecs decodes back to a byte-identical copy of the
 * original .fvecs (same dims, same float32 bits). Ground-truth .ivecs are copied unchanged.
 * Finally it writes SHA256SUMS for the shipped files (keeping the lines of other scripts' files).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const src = process.argv[2];
if (!src) {
  console.error('usage: node test/data/derive.mjs <folder holding siftsmall/ and fashion-mnist-small/>');
  process.exit(2);
}

const SETS = [
  ['siftsmall', 'siftsmall'],
  ['fashion-mnist-small', 'fmnistsmall'],
];

function fvecsToBvecs(path) {
  const buf = readFileSync(path);
  const d = buf.readInt32LE(0);
  const row = 4 + 4 * d;
  if (buf.length % row !== 0) throw new Error(`${path}: not whole rows of dim ${d}`);
  const n = buf.length / row;
  const out = Buffer.alloc(n * (4 + d));
  for (let i = 0; i < n; i++) {
    if (buf.readInt32LE(i * row) !== d) throw new Error(`${path}: row ${i} has another dim`);
    out.writeInt32LE(d, i * (4 + d));
    for (let j = 0; j < d; j++) {
      const v = buf.readFloatLE(i * row + 4 + 4 * j);
      if (!Number.isInteger(v) || v < 0 || v > 255 || Object.is(v, -0)) throw new Error(`${path}: row ${i} col ${j} is ${v}, not an integer in 0..255`);
      out[i * (4 + d) + 4 + j] = v;
    }
  }
  // Decode back to .fvecs bytes: must equal the original file exactly.
  const back = Buffer.alloc(buf.length);
  for (let i = 0; i < n; i++) {
    back.writeInt32LE(out.readInt32LE(i * (4 + d)), i * row);
    for (let j = 0; j < d; j++) back.writeFloatLE(out[i * (4 + d) + 4 + j], i * row + 4 + 4 * j);
  }
  if (!back.equals(buf)) throw new Error(`${path}: the uint8 copy does not decode to the original bytes`);
  return { out, n, d };
}

const sums = [];
for (const [folder, prefix] of SETS) {
  mkdirSync(join(here, folder), { recursive: true });
  for (const part of ['base', 'query']) {
    const { out, n, d } = fvecsToBvecs(join(src, folder, `${prefix}_${part}.fvecs`));
    const rel = `${folder}/${prefix}_${part}.bvecs`;
    writeFileSync(join(here, rel), out);
    sums.push([rel, out]);
    console.log(`${rel}: ${n} x ${d}, ${out.length} bytes`);
  }
  const rel = `${folder}/${prefix}_groundtruth.ivecs`;
  const gt = readFileSync(join(src, rel));
  writeFileSync(join(here, rel), gt);
  sums.push([rel, gt]);
  console.log(`${rel}: copied, ${gt.length} bytes`);
}
// Lines for files this script does not write (derive-sq.py's reference data) are kept.
const mine = new Set(sums.map(([rel]) => rel));
const sumsPath = join(here, 'SHA256SUMS');
const others = (existsSync(sumsPath) ? readFileSync(sumsPath, 'utf8') : '').split('\n').filter((l) => l.trim() !== '' && !mine.has(l.slice(66)));
const lines = [...sums.map(([rel, b]) => `${createHash('sha256').update(b).digest('hex')}  ${rel}`), ...others];
writeFileSync(sumsPath, lines.map((l) => `${l}\n`).join(''));
