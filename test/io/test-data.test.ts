import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DERIVED_FILES, REAL_SETS, TEST_DATA, loadRealSet } from '../helpers/data.js';

// The real sets shipped in test/data: each file matches test/data/SHA256SUMS, every shipped data
// file (the sets and the derived reference data) is listed there, and the decoded sets have the
// shapes test/data/README.md documents.

const sums = readFileSync(join(TEST_DATA, 'SHA256SUMS'), 'utf8')
  .split('\n')
  .filter((l) => l.trim() !== '')
  .map((l) => {
    const m = /^([0-9a-f]{64}) [ *](.+)$/.exec(l);
    if (!m) throw new Error(`test/data/SHA256SUMS: malformed line '${l}'`);
    return { hash: m[1], path: m[2] };
  });

describe('test/data', () => {
  it('SHA256SUMS lists exactly the shipped data files (base, query, ground truth of each set; derived reference data)', () => {
    const sets = REAL_SETS.flatMap((s) => ['base.bvecs', 'query.bvecs', 'groundtruth.ivecs'].map((f) => `${s.folder}/${s.prefix}_${f}`));
    const want = [...sets, ...DERIVED_FILES].sort();
    expect(sums.map((s) => s.path).sort()).toEqual(want);
    const folders = new Set([...REAL_SETS.map((s) => s.folder), ...DERIVED_FILES.map((f) => f.split('/')[0])]);
    const onDisk = [...folders].flatMap((f) => readdirSync(join(TEST_DATA, f)).map((name) => `${f}/${name}`)).sort();
    expect(onDisk).toEqual(want);
  });

  for (const { hash, path } of sums) {
    it(`${path} matches its SHA-256`, () => {
      expect(createHash('sha256').update(readFileSync(join(TEST_DATA, path))).digest('hex')).toBe(hash);
    });
  }

  for (const s of REAL_SETS) {
    it(`${s.folder} decodes to ${s.n} x ${s.d} base, ${s.nq} queries, top-${s.gtK} ground truth`, () => {
      const set = loadRealSet(s.folder, s.prefix);
      expect([set.n, set.d, set.nq, set.gtK]).toEqual([s.n, s.d, s.nq, s.gtK]);
      expect(set.xb.length).toBe(s.n * s.d);
      expect(set.xq.length).toBe(s.nq * s.d);
      expect(set.gt.length).toBe(s.nq * s.gtK);
      // Ground truth: ids inside the base, no id twice in a row.
      for (let q = 0; q < s.nq; q++) {
        const row = set.gt.subarray(q * s.gtK, (q + 1) * s.gtK);
        expect(new Set(row).size, `${s.folder} ground-truth row ${q} repeats an id`).toBe(s.gtK);
        for (const id of row) if (id < 0 || id >= s.n) throw new Error(`${s.folder}: ground-truth row ${q} has id ${id} outside [0, ${s.n})`);
      }
      // The file sizes are those of uint8 rows (4 + d bytes each), a quarter of the original .fvecs.
      expect(statSync(join(TEST_DATA, s.folder, `${s.prefix}_base.bvecs`)).size).toBe(s.n * (4 + s.d));
    });
  }
});
