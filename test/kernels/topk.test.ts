import { afterAll, describe, expect, it } from 'vitest';
import { topk } from '../../src/cpu/topk.js';
import { topkMerge } from '../../src/cpu/topk-merge.js';
import { encodeTopk } from '../../src/gpu/kernels/topk.js';
import { TOPK_MAX_K } from '../../src/kernel-facts.js';
import { encodeTopkMerge } from '../../src/gpu/kernels/topk-merge.js';
import { rng } from '../../src/common/random.js';
import { expectIdentical } from '../helpers/compare.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { KernelHarness, POISON } from './harness.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);

type ScoreKind = 'ties' | 'floats' | 'infs';

/** Scores with many exact ties (integers), distinct floats, or ties with about a third +Infinity (rows a mask ruled out). */
function scoresFor(len: number, seed: number, kind: ScoreKind): Float32Array {
  const r = rng(seed);
  const out = new Float32Array(len);
  for (let i = 0; i < len; i++) {
    const v = r();
    out[i] = kind === 'floats' ? v * 2 - 1 : kind === 'infs' && v < 1 / 3 ? Infinity : Math.floor(v * 16) - 8;
  }
  return out;
}

// [rows, cols, ldc, k, nseg]: k = 1, k = max, k > segment (padding), one segment, uneven segments;
// k <= 16 in a sorted list of K_CAP 2, 4, 8 or 16 (k = 3, 9 and 10 below the capacity; 4, 8 and 16
// at it), larger k in a heap (k = 17: the smallest heap).
const shapes: number[][] = [
  [1, 1, 1, 1, 1],
  [3, 50, 53, 1, 4],
  [4, 100, 100, 10, 3],
  [4, 90, 95, 3, 2],
  [2, 30, 30, 4, 2],
  [3, 64, 64, 8, 2],
  [2, 40, 40, 9, 1],
  [3, 300, 301, 16, 3],
  [2, 120, 128, 17, 2],
  [2, 33, 40, 50, 2],
  [5, 700, 700, 64, 5],
  [2, 2100, 2100, TOPK_MAX_K, 2],
];

describe.skipIf(!gpu)('gpu topk and topk-merge vs cpu twins', () => {
  for (const [rows, cols, ldc, k, nseg] of shapes) {
    for (const kind of ['ties', 'floats', 'infs'] as const) {
      for (const withBound of [false, true]) {
        it(`rows=${rows} cols=${cols} k=${k} nseg=${nseg} ${kind}${withBound ? ', bounded by a running list' : ''}`, async () => {
          const h = new KernelHarness(gpu!);
          const scores = scoresFor(rows * ldc, rows * cols + k, kind);
          const segLen = Math.ceil(cols / nseg);
          const id0 = 1000;
          const len = rows * nseg * k;
          // A running list from an earlier tile (ids below id0), for the bound and the merge.
          const prevS = new Float32Array(rows * k);
          const prevI = new Uint32Array(rows * k);
          const prevScores = scoresFor(rows * 3 * k, 99, kind);
          const prevPart = { s: new Float32Array(rows * k), i: new Uint32Array(rows * k) };
          topk(prevScores, 3 * k, rows, 3 * k, 0, k, 1, 3 * k, prevPart.s, prevPart.i);
          topkMerge(prevPart.s, prevPart.i, rows, 1, k, null, null, prevS, prevI);
          const prevSBuf = h.upload(prevS);
          const prevIBuf = h.upload(prevI);
          const partS = h.output(len, POISON);
          const partI = h.output(len, POISON);
          encodeTopk(h.kernels, {
            scores: h.upload(scores), outS: partS, outI: partI, rows, cols, ldc, k, nseg, segLen, id0,
            bound: withBound ? { s: prevSBuf, i: prevIBuf, row0: 0 } : null,
          });
          const runOutS = h.output(rows * k, POISON);
          const runOutI = h.output(rows * k, POISON);
          encodeTopkMerge(h.kernels, {
            partS, partI, runInS: prevSBuf, runInI: prevIBuf, runOutS, runOutI, rows, k, nseg, first: false, row0: 0,
          });
          await h.run();
          const wantS = new Float32Array(len);
          const wantI = new Uint32Array(len);
          topk(scores, ldc, rows, cols, id0, k, nseg, segLen, wantS, wantI, withBound ? { s: prevS, i: prevI, row0: 0 } : null);
          expect(Array.from(await h.readU32(partI, len)), 'topk ids').toEqual(Array.from(wantI));
          expect(Array.from(await h.readF32(partS, len)), 'topk scores').toEqual(Array.from(wantS));
          // The merged result never depends on the bound: compare with the unbounded twin.
          const fullS = new Float32Array(len);
          const fullI = new Uint32Array(len);
          topk(scores, ldc, rows, cols, id0, k, nseg, segLen, fullS, fullI);
          const mergedS = new Float32Array(rows * k);
          const mergedI = new Uint32Array(rows * k);
          topkMerge(fullS, fullI, rows, nseg, k, prevS, prevI, mergedS, mergedI);
          expect(Array.from(await h.readU32(runOutI, rows * k)), 'merge ids').toEqual(Array.from(mergedI));
          expect(Array.from(await h.readF32(runOutS, rows * k)), 'merge scores').toEqual(Array.from(mergedS));
          h.dispose();
        });
      }
    }
  }

  // A self-join tile selected along its columns, with the candidates' norms added: [tile rows, tile cols, ldc, k, nseg].
  for (const [tileRows, tileCols, ldc, k, nseg] of [
    [7, 5, 9, 3, 1],
    [40, 33, 40, 10, 3],
    [70, 64, 70, 65, 2],
  ]) {
    for (const transposed of [false, true]) {
      it(`${transposed ? 'transposed' : 'row-wise'}, with a bias: tile ${tileRows} x ${tileCols}, k=${k}, nseg=${nseg}, bounded`, async () => {
        const h = new KernelHarness(gpu!);
        const scores = scoresFor(tileRows * ldc, tileRows + k, 'floats');
        const bias = scoresFor(tileRows + 5, 7, 'floats').map((v) => (v + 1) * 3);
        const [rows, cols] = transposed ? [tileCols, tileRows] : [tileRows, tileCols];
        const segLen = Math.ceil(cols / nseg);
        const len = rows * nseg * k;
        // A running list to bound by (rows 2 .. of it: row0 = 2).
        const boundS = Float32Array.from({ length: (rows + 2) * k }, (_, i) => (i % k) * 0.5);
        const boundI = Uint32Array.from({ length: (rows + 2) * k }, (_, i) => 5000 + i);
        const partS = h.output(len, POISON);
        const partI = h.output(len, POISON);
        const args = { rows, cols, ldc, k, nseg, segLen, id0: 300, transposed };
        encodeTopk(h.kernels, {
          ...args, scores: h.upload(scores), outS: partS, outI: partI,
          bound: { s: h.upload(boundS), i: h.upload(boundI), row0: 2 }, bias: { buf: h.upload(bias), bias0: 5 },
        });
        await h.run();
        const wantS = new Float32Array(len);
        const wantI = new Uint32Array(len);
        topk(scores, ldc, rows, cols, 300, k, nseg, segLen, wantS, wantI, { s: boundS, i: boundI, row0: 2 }, transposed, { s: bias, bias0: 5 });
        expect(Array.from(await h.readU32(partI, len)), 'ids').toEqual(Array.from(wantI));
        expect(Array.from(await h.readF32(partS, len)), 'scores').toEqual(Array.from(wantS));
        h.dispose();
      });
    }
  }

  it('merge with first = true ignores the running list', async () => {
    const h = new KernelHarness(gpu!);
    const k = 4;
    const partS = new Float32Array([3, 5, Infinity, Infinity, 1, 3, 4, 9]);
    const partI = new Uint32Array([7, 2, 0xffffffff, 0xffffffff, 8, 9, 1, 3]);
    const outS = h.output(k, POISON);
    const outI = h.output(k, POISON);
    const junk = h.upload(new Float32Array(k).fill(-100));
    encodeTopkMerge(h.kernels, {
      partS: h.upload(partS), partI: h.upload(partI), runInS: junk, runInI: h.upload(new Uint32Array(k)),
      runOutS: outS, runOutI: outI, rows: 1, k, nseg: 2, first: true, row0: 0,
    });
    await h.run();
    expect(Array.from(await h.readF32(outS, k))).toEqual([1, 3, 3, 4]);
    expect(Array.from(await h.readU32(outI, k))).toEqual([8, 7, 9, 1]);
    h.dispose();
  });
});

describe('topk twin: transposed and with a bias', () => {
  it('row r of a transposed tile is its column r; the bias is the tile row\'s, the candidate\'s', () => {
    // A 3 x 2 tile (ldc 2): column 0 is [4, 1, 3], column 1 [0, 2, 2]; biases of tile rows 0..2: 10, 20, 0.5.
    const scores = new Float32Array([4, 0, 1, 2, 3, 2]);
    const bias = new Float32Array([99, 10, 20, 0.5]); // bias0 = 1
    const outS = new Float32Array(2 * 2);
    const outI = new Uint32Array(2 * 2);
    topk(scores, 2, 2, 3, 100, 2, 1, 3, outS, outI, null, true, { s: bias, bias0: 1 });
    // Column 0: 4 + 10, 1 + 20, 3 + 0.5 -> (3.5, 102), (14, 100); column 1: 10, 22, 2.5 -> (2.5, 102), (10, 100).
    expect(Array.from(outS)).toEqual([3.5, 14, 2.5, 10]);
    expect(Array.from(outI)).toEqual([102, 100, 102, 100]);
    // Row-wise, the bias is the row's own: row 1 is [1, 2] + 20.
    const rs = new Float32Array(6);
    const ri = new Uint32Array(6);
    topk(scores, 2, 3, 2, 100, 2, 1, 2, rs, ri, null, false, { s: bias, bias0: 1 });
    expect(Array.from(rs)).toEqual([10, 14, 21, 22, 2.5, 3.5]);
    expect(Array.from(ri)).toEqual([101, 100, 100, 101, 101, 100]);
  });
});

// Hand-written tie cases: several scores exactly equal, the expected (score, id) lists written out
// below by hand (ties break on the smaller id; short lists padded with (+Infinity, 0xffffffff)).
// Both the kernel and its CPU twin must give them, so a spec bug the two share is caught too.
describe('topk: hand-written ties', () => {
  const PAD: [number, number] = [Infinity, 0xffffffff];
  const id0 = 100;
  const [rows, cols, ldc] = [2, 7, 8];
  // ids:          100 101 102 103 104 105 106 | column 7 is outside the tile and must be ignored
  const scores = new Float32Array([
    2, 1, 2, 1, 3, 1, 2, -100,
    5, 4, 5, 4, 4, 5, 5, -100,
  ]);
  interface Case {
    name: string;
    k: number;
    nseg: number;
    /** The k-th entries of each row's running list, when bounded. */
    bound: [number, number][] | null;
    want: [number, number][][];
  }
  const cases: Case[] = [
    {
      name: 'k = 3, one segment', k: 3, nseg: 1, bound: null,
      want: [
        [[1, 101], [1, 103], [1, 105]],
        [[4, 101], [4, 103], [4, 104]],
      ],
    },
    {
      // Heap evictions among equals: (1, 105) must not displace (1, 103).
      name: 'k = 2, one segment', k: 2, nseg: 1, bound: null,
      want: [
        [[1, 101], [1, 103]],
        [[4, 101], [4, 103]],
      ],
    },
    {
      name: 'k = 5, two segments of 4 and 3 columns', k: 5, nseg: 2, bound: null,
      want: [
        [[1, 101], [1, 103], [2, 100], [2, 102], PAD],
        [[1, 105], [2, 106], [3, 104], PAD, PAD],
        [[4, 101], [4, 103], [5, 100], [5, 102], PAD],
        [[4, 104], [5, 105], [5, 106], PAD, PAD],
      ],
    },
    {
      // Bound (2, 101) on row 0 and (5, 102) on row 1: only strictly better (score, id) pass, so
      // (2, 100) and (5, 100) do, and (2, 102), (5, 102), (5, 105) do not.
      name: 'k = 5, bounded by running lists', k: 5, nseg: 1, bound: [[2, 101], [5, 102]],
      want: [
        [[1, 101], [1, 103], [1, 105], [2, 100], PAD],
        [[4, 101], [4, 103], [4, 104], [5, 100], PAD],
      ],
    },
  ];
  const expected = (c: Case) => {
    const flat = c.want.flat();
    return { distances: Float32Array.from(flat, (p) => p[0]), labels: Int32Array.from(flat, (p) => p[1] | 0) };
  };
  /** Running lists of k entries per row whose last (k-th) entry is the bound. */
  const boundLists = (c: Case) => {
    const s = new Float32Array(rows * c.k).fill(-1000);
    const i = new Uint32Array(rows * c.k).map((_, e) => e);
    c.bound!.forEach(([bs, bi], r) => {
      s[r * c.k + c.k - 1] = bs;
      i[r * c.k + c.k - 1] = bi;
    });
    return { s, i, row0: 0 };
  };
  const segLen = (c: Case) => Math.ceil(cols / c.nseg);

  for (const c of cases) {
    it(`cpu twin: ${c.name}`, () => {
      const len = rows * c.nseg * c.k;
      const outS = new Float32Array(len);
      const outI = new Uint32Array(len);
      topk(scores, ldc, rows, cols, id0, c.k, c.nseg, segLen(c), outS, outI, c.bound ? boundLists(c) : null);
      expectIdentical({ distances: outS, labels: new Int32Array(outI.buffer) }, expected(c), c.name);
    });

    it.skipIf(!gpu)(`gpu kernel: ${c.name}`, async () => {
      const h = new KernelHarness(gpu!);
      const len = rows * c.nseg * c.k;
      const outS = h.output(len, POISON);
      const outI = h.output(len, POISON);
      const b = c.bound ? boundLists(c) : null;
      encodeTopk(h.kernels, {
        scores: h.upload(scores), outS, outI, rows, cols, ldc, k: c.k, nseg: c.nseg, segLen: segLen(c), id0,
        bound: b ? { s: h.upload(b.s), i: h.upload(b.i), row0: 0 } : null,
      });
      await h.run();
      const got = { distances: await h.readF32(outS, len), labels: new Int32Array((await h.readU32(outI, len)).buffer) };
      h.dispose();
      expectIdentical(got, expected(c), c.name);
    });
  }
});
