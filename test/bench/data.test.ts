import { describe, expect, it } from 'vitest';
import { loadBenchData } from '../../bench/data.js';
import { REAL_SETS, loadRealSet } from '../helpers/data.js';

// `bench --data siftsmall | fashion-mnist-small` reads the project's copy in test/data and decodes
// it to the very Float32Arrays the tests use, with the published ground truth.
describe('bench data: the real sets', () => {
  for (const s of REAL_SETS) {
    it(`--data ${s.folder} gives the shipped set with its ground truth`, async () => {
      const b = await loadBenchData(s.folder, 0, 0, undefined, 1);
      const t = loadRealSet(s.folder, s.prefix);
      expect([b.n, b.d, b.nq]).toEqual([s.n, s.d, s.nq]);
      expect(b.xb).toBeInstanceOf(Float32Array);
      expect(Buffer.from(b.xb.buffer, b.xb.byteOffset, b.xb.byteLength).equals(Buffer.from(t.xb.buffer))).toBe(true);
      expect(Buffer.from(b.xq.buffer, b.xq.byteOffset, b.xq.byteLength).equals(Buffer.from(t.xq.buffer))).toBe(true);
      expect(b.groundTruth?.k).toBe(s.gtK);
      expect(Array.from(b.groundTruth!.ids)).toEqual(Array.from(t.gt));
      expect(b.groundTruth!.source).toMatch(new RegExp(`test/data/${s.folder}/`));
      // nq cuts the query set.
      expect((await loadBenchData(s.folder, 0, 0, 7, 1)).nq).toBe(7);
    });
  }
});
