import { describe, expect, it } from 'vitest';
import { graphHashSlot, graphSearch } from '../../src/cpu/graph-search.js';
import { PAD_ID } from '../../src/kernel-facts.js';
import { InvalidArgumentError } from '../../src/errors.js';
import { randomSmallInts, rng } from '../../src/common/random.js';
import { maskOf, randomAllow } from '../helpers/mask.js';
import {
  bruteForce, completeNeighbours, graphCase, graphRows, gridNeighbours, pathNeighbours, randomGraph, searchOnDevice,
} from '../helpers/graph-search.js';
import { CpuDevice } from '../../src/cpu/cpu-device.js';
import { halfToFloat } from '../../src/common/fp16.js';
import { toHalf } from '../../src/stores/half-rows.js';

const PAD: [number, number] = [Infinity, PAD_ID];

/** A case's output as (score, id) pairs per row. */
function pairs(a: { outS: Float32Array; outI: Uint32Array; k: number; rows: number }): [number, number][][] {
  return Array.from({ length: a.rows }, (_, r) => Array.from({ length: a.k }, (_, j) => [a.outS[r * a.k + j], a.outI[r * a.k + j]] as [number, number]));
}

function expectBruteForce(a: ReturnType<typeof graphCase>, candidate?: (v: number) => boolean): void {
  const want = bruteForce(a, candidate);
  expect(Array.from(a.outI), 'ids').toEqual(want.i);
  expect(Array.from(a.outS), 'scores').toEqual(want.s);
}

/** Points 0 .. n - 1 on a line (x = i, one dimension). */
const line = (n: number) => Float32Array.from({ length: n }, (_, i) => i);

/** The nodes of a w x h grid at (x, y). */
function gridPoints(w: number, h: number): Float32Array {
  const x = new Float32Array(2 * w * h);
  for (let v = 0; v < w * h; v++) {
    x[2 * v] = v % w;
    x[2 * v + 1] = Math.floor(v / w);
  }
  return x;
}

describe('cpu graph-search: hand-made graphs', () => {
  it('walks a path from its end to the query (greedy steps, ties on the smaller id)', () => {
    // l2 score of node i for q = 17: i^2 - 34 i, falling to -289 at 17; 16 and 18 tie at -288.
    const a = graphCase({ metric: 'l2', x: line(40), xq: Float32Array.of(17), d: 1, graph: graphRows(pathNeighbours(40), 2), degree: 2, seeds: [0], itopk: 4, k: 3 });
    graphSearch(a);
    expect(pairs(a)).toEqual([[[-289, 17], [-288, 16], [-288, 18]]]);
    // Iteration t expands node t - 1 (adding t) up to node 17; then 18, whose new neighbour 19
    // (-285) loses the tie with 15 for the fourth place; the list is all expanded after 19.
    expect(a.outWork![0]).toBe(19);
  });

  it('maxIterations 1: the seeds and the first parent\'s neighbours', () => {
    const a = graphCase({ metric: 'l2', x: line(40), xq: Float32Array.of(17), d: 1, graph: graphRows(pathNeighbours(40), 2), degree: 2, seeds: [5], itopk: 4, k: 4, maxIterations: 1 });
    graphSearch(a);
    // 6: 36 - 204 = -168, 5: 25 - 170 = -145, 4: 16 - 136 = -120.
    expect(pairs(a)).toEqual([[[-168, 6], [-145, 5], [-120, 4], PAD]]);
    expect(a.outWork![0]).toBe(1);
  });

  it('maxIterations 0: the seeds only, PAD and repeated seeds skipped', () => {
    const a = graphCase({ metric: 'ip', x: line(10), xq: Float32Array.of(1), d: 1, graph: graphRows(pathNeighbours(10), 2), degree: 2, seeds: [3, PAD_ID, 7, 3, 1], itopk: 8, k: 5, maxIterations: 0 });
    const work = graphSearch(a);
    expect(pairs(a)).toEqual([[[-7, 7], [-3, 3], [-1, 1], PAD, PAD]]);
    expect(a.outWork![0]).toBe(0);
    expect(work.scored).toBe(3);
  });

  it('finds the k nearest on a grid from a far corner, with searchWidth 1 and 3', () => {
    const w = 12;
    const h = 9;
    const xq = Float32Array.of(8, 6, 2.5, 1, 10, 8, 0, 0);
    const iterations: number[] = [];
    for (const searchWidth of [1, 3]) {
      const a = graphCase({ metric: 'l2', x: gridPoints(w, h), xq, d: 2, graph: graphRows(gridNeighbours(w, h), 4), degree: 4, seeds: [w * h - 1], itopk: 16, k: 6, searchWidth });
      graphSearch(a);
      expectBruteForce(a);
      iterations.push(Math.max(...a.outWork!.filter((_, i) => i % 2 === 0)));
    }
    // Three parents an iteration: fewer iterations.
    expect(iterations[1]).toBeLessThan(iterations[0]);
  });

  it('stays in the components its seeds reach', () => {
    // Two paths: nodes 0..9 at x = 0..9, nodes 10..19 at x = 100..109. The query sits by the second.
    const x = Float32Array.from({ length: 20 }, (_, i) => (i < 10 ? i : 90 + i));
    const graph = graphRows([...pathNeighbours(10), ...pathNeighbours(10, 10)], 2);
    const xq = Float32Array.of(104);
    const one = graphCase({ metric: 'l2', x, xq, d: 1, graph, degree: 2, seeds: [0], itopk: 8, k: 4 });
    graphSearch(one);
    expectBruteForce(one, (v) => v < 10);
    const both = graphCase({ metric: 'l2', x, xq, d: 1, graph, degree: 2, seeds: [0, 19], itopk: 8, k: 4 });
    graphSearch(both);
    expectBruteForce(both);
    expect(Array.from(both.outI)).toEqual([14, 13, 15, 12]);
  });

  it('starts each query row from its own seeds', () => {
    // The two paths again; both queries sit by the second, row 0 seeded in the first path, row 1 in the second.
    const x = Float32Array.from({ length: 20 }, (_, i) => (i < 10 ? i : 90 + i));
    const graph = graphRows([...pathNeighbours(10), ...pathNeighbours(10, 10)], 2);
    const a = graphCase({ metric: 'l2', x, xq: Float32Array.of(104, 104), d: 1, graph, degree: 2, seeds: [[0], [19]], itopk: 8, k: 4 });
    graphSearch(a);
    expect(Array.from(a.outI)).toEqual([9, 8, 7, 6, 14, 13, 15, 12]);
  });

  it('breaks ties between equal vectors on the smaller id', () => {
    // Nodes 2, 5 and 7 are the same vector, 1 and 6 another; listed in the graph out of id order.
    const x = Float32Array.of(0, 0, 2, 0, 1, 1, 3, 1, 4, 4, 1, 1, 2, 0, 1, 1);
    const neighbours = [[7, 5, 2, 6, 1, 4, 3], [0], [0], [0], [0], [0], [0], [0]];
    for (const metric of ['l2', 'ip'] as const) {
      const a = graphCase({ metric, x, xq: Float32Array.of(1, 1), d: 2, graph: graphRows(neighbours, 7), degree: 7, seeds: [0], itopk: 8, k: 8 });
      graphSearch(a);
      expectBruteForce(a);
    }
    const a = graphCase({ metric: 'l2', x, xq: Float32Array.of(1, 1), d: 2, graph: graphRows(neighbours, 7), degree: 7, seeds: [0], itopk: 3, k: 3 });
    graphSearch(a);
    // ||x||^2 - 2 q.x: (1, 1) -> -2 for nodes 2, 5, 7; 0 for 0, 1, 6; itopk 3 keeps 2, 5, 7.
    expect(pairs(a)).toEqual([[[-2, 2], [-2, 5], [-2, 7]]]);
  });

  it('itopk > n: every node once, then padding; all expanded, the search stops', () => {
    const n = 5;
    for (const searchWidth of [1, 2]) {
      const a = graphCase({ metric: 'l2', x: line(n), xq: Float32Array.of(3), d: 1, graph: graphRows(completeNeighbours(n), n - 1), degree: n - 1, seeds: [0], itopk: 16, k: 8, searchWidth });
      graphSearch(a);
      expect(pairs(a)).toEqual([[[-9, 3], [-8, 2], [-8, 4], [-5, 1], [0, 0], PAD, PAD, PAD]]);
      expect(a.outWork![0]).toBe(Math.ceil(n / searchWidth));
    }
  });

  it('a mask keeps disallowed nodes out of the results, not out of the walk', () => {
    // On a path, disallowing every odd node: the walk must pass through them to reach the query.
    const n = 30;
    const allowEven = Array.from({ length: n }, (_, v) => v % 2 === 0);
    const maskBit0 = 37;
    const mask = maskOf(allowEven, maskBit0, rng(3));
    const a = graphCase({ metric: 'l2', x: line(n), xq: Float32Array.of(20.2), d: 1, graph: graphRows(pathNeighbours(n), 2), degree: 2, seeds: [0], itopk: 6, k: 4, mask, maskBit0 });
    graphSearch(a);
    expect(Array.from(a.outI)).toEqual([20, 22, 18, PAD_ID]); // 21, 19 are walked through; 6 entries hold 3 even
    // Allowing nothing: no results, and the very same walk as without a mask.
    const unmasked = graphCase({ metric: 'l2', x: line(n), xq: Float32Array.of(20.2), d: 1, graph: graphRows(pathNeighbours(n), 2), degree: 2, seeds: [0], itopk: 6, k: 4 });
    graphSearch(unmasked);
    expect(Array.from(unmasked.outI)).toEqual([20, 21, 19, 22]);
    const nothing = { ...unmasked, mask: maskOf(randomAllow(n, 0, rng(4)), 5, rng(5)), maskBit0: 5, outWork: new Uint32Array(2) };
    graphSearch(nothing);
    expect(pairs(nothing)).toEqual([[PAD, PAD, PAD, PAD]]);
    expect(Array.from(nothing.outWork)).toEqual(Array.from(unmasked.outWork!));
    expect(a.outWork![0]).toBe(unmasked.outWork![0]);
  });

  it('resets the visited hash when it is more than half full, with the same results', () => {
    const w = 12;
    const h = 12;
    const xq = Float32Array.of(8, 6, 2.5, 1, 10, 8, 0, 0, 6, 11);
    const run = (hashBits: number) => {
      const a = graphCase({ metric: 'l2', x: gridPoints(w, h), xq, d: 2, graph: graphRows(gridNeighbours(w, h), 4), degree: 4, seeds: [w * h - 1, 0], itopk: 8, k: 5, hashBits });
      return { a, work: graphSearch(a) };
    };
    const big = run(10);
    // 16 slots: reset past 8 ids (itopk 8 + 4 new a batch fit 16).
    const small = run(4);
    expect(big.work.resets).toBe(0);
    expect(small.work.resets).toBeGreaterThan(10);
    expect(small.work.scored).toBeGreaterThan(big.work.scored); // dropped ids are scored again
    expect(Array.from(small.a.outI)).toEqual(Array.from(big.a.outI));
    expect(Array.from(small.a.outS)).toEqual(Array.from(big.a.outS));
    // The same iterations; more ids scored a query (outWork's odd entries), their sum the work's.
    const iterationsOf = (w: Uint32Array) => Array.from(w).filter((_, i) => i % 2 === 0);
    const scoredOf = (w: Uint32Array) => Array.from(w).filter((_, i) => i % 2 === 1);
    expect(iterationsOf(small.a.outWork!)).toEqual(iterationsOf(big.a.outWork!));
    scoredOf(small.a.outWork!).forEach((s, r) => expect(s).toBeGreaterThanOrEqual(scoredOf(big.a.outWork!)[r]));
    expect(scoredOf(small.a.outWork!).reduce((a, b) => a + b)).toBe(small.work.scored);
    expect(scoredOf(big.a.outWork!).reduce((a, b) => a + b)).toBe(big.work.scored);
    expectBruteForce(big.a);
  });

  it('hash slots: the top hashBits bits of id * 0x9e3779b1 mod 2^32', () => {
    expect(graphHashSlot(0, 10)).toBe(0);
    expect(graphHashSlot(1, 10)).toBe(Math.floor(0x9e3779b1 / 2 ** 22));
    expect(graphHashSlot(3, 4)).toBe(Math.floor(((3 * 0x9e3779b1) % 2 ** 32) / 2 ** 28));
    expect(graphHashSlot(0xfffffffe, 1)).toBe(Math.floor(Number((BigInt(0xfffffffe) * BigInt(0x9e3779b1)) % 2n ** 32n) / 2 ** 31));
  });
});

describe('cpu graph-search: a complete graph with itopk >= n is a brute-force k-NN', () => {
  for (const [n, d, k, metric] of [[40, 5, 10, 'l2'], [64, 8, 64, 'ip'], [30, 3, 7, 'ip'], [50, 12, 20, 'l2']] as const) {
    it(`n=${n} d=${d} k=${k} ${metric}`, () => {
      const x = randomSmallInts(n * d, n);
      const xq = randomSmallInts(6 * d, n + 1);
      const a = graphCase({ metric, x, xq, d, graph: graphRows(completeNeighbours(n), n - 1), degree: n - 1, seeds: [n >> 1], itopk: Math.max(n, k), k, q0: 1, rows: 5 });
      graphSearch(a);
      expectBruteForce(a);
    });
  }

  it('with a mask allowing half the nodes, and one allowing none', () => {
    const n = 60;
    const d = 6;
    const r = rng(11);
    const x = randomSmallInts(n * d, 1);
    const xq = randomSmallInts(4 * d, 2);
    for (const p of [0.5, 0]) {
      const allow = randomAllow(n, p, r);
      const a = graphCase({ metric: 'l2', x, xq, d, graph: graphRows(completeNeighbours(n), n - 1), degree: n - 1, seeds: [3], itopk: n, k: 12, mask: maskOf(allow, 70, r), maskBit0: 70 });
      graphSearch(a);
      expectBruteForce(a, (v) => allow[v]);
    }
  });
});

describe('cpu graph-search: random graphs', () => {
  it('never repeats an id, scores every result right, and keeps them in order', () => {
    const n = 500;
    const d = 9;
    const r = rng(21);
    const x = randomSmallInts(n * d, 3);
    const xq = randomSmallInts(8 * d, 4);
    const a = graphCase({ metric: 'l2', x, xq, d, graph: randomGraph(n, 12, r), degree: 12, seeds: [1, 2, 3, PAD_ID, 2], itopk: 32, k: 16, searchWidth: 2, hashBits: 7 });
    const work = graphSearch(a);
    expect(work.resets).toBeGreaterThan(0);
    const exact = bruteForce({ ...a, k: n });
    for (let q = 0; q < a.rows; q++) {
      const score = new Map(exact.i.slice(q * n, (q + 1) * n).map((v, j) => [v, exact.s[q * n + j]]));
      const ids = Array.from(a.outI.subarray(q * a.k, (q + 1) * a.k)).filter((v) => v !== PAD_ID);
      expect(new Set(ids).size).toBe(ids.length);
      ids.forEach((v, j) => {
        expect(a.outS[q * a.k + j]).toBe(score.get(v));
        if (j > 0) expect(a.outS[q * a.k + j - 1] < a.outS[q * a.k + j] || (a.outS[q * a.k + j - 1] === a.outS[q * a.k + j] && ids[j - 1] < v)).toBe(true);
      });
    }
  });
});

describe('cpu graph-search on half rows', () => {
  it('walks as on the float rows where the halves are exact (small integers)', () => {
    const n = 500;
    for (const [d, metric, allow] of [[9, 'l2', undefined], [8, 'ip', undefined], [5, 'l2', 0.6], [13, 'ip', 0.4]] as const) {
      const r = rng(40 + d);
      const graph = randomGraph(n, 12, r);
      const mask = allow === undefined ? null : maskOf(randomAllow(n, allow, r), 3, r);
      const make = (half: boolean) => graphCase({
        metric, x: randomSmallInts(n * d, d, 15), xq: randomSmallInts(9 * d, d + 1, 15), d, graph, degree: 12, seeds: [1, 2, 3, PAD_ID, 2], itopk: 32, k: 16,
        searchWidth: 2, hashBits: 7, q0: 1, rows: 8, mask, maskBit0: 3, half,
      });
      const f = make(false);
      const h = make(true);
      expect(h.xb).toBeInstanceOf(Uint32Array);
      expect(h.xb.length).toBe(n * 4 * Math.ceil(f.dpad / 8));
      expect(Array.from(h.xnorm)).toEqual(Array.from(f.xnorm));
      const wf = graphSearch(f);
      const wh = graphSearch(h);
      expect(wh).toEqual(wf);
      expect(Array.from(h.outI)).toEqual(Array.from(f.outI));
      expect(Array.from(h.outS)).toEqual(Array.from(f.outS));
      expect(Array.from(h.outWork!)).toEqual(Array.from(f.outWork!));
    }
  });

  it('scores the rows as their halves decode (rounded to nearest even), dimensions in order past a word', () => {
    // Halves: 2049 -> 2048 and 2051 -> 2052 (ties to even, 2 apart there), 0.1 -> 0.0999755859375.
    const h = halfToFloat(toHalf(0.1));
    expect(h).toBe(0.0999755859375);
    const x = Float32Array.of(1, 2049, 3, 0.1, 0, 0, 2051, 0, -1);
    const xq = Float32Array.of(1, 10, 100);
    const graph = graphRows(completeNeighbours(3), 2);
    const ip = graphCase({ metric: 'ip', x, xq, d: 3, graph, degree: 2, seeds: [0], itopk: 3, k: 3, half: true });
    graphSearch(ip);
    // -(1 + 10 * 2048 + 100 * 3), -(2052 - 100), -h (float rows: -20791, -1951, -0.1).
    expect(pairs(ip)).toEqual([[[-20781, 0], [-1952, 2], [-Math.fround(h), 1]]]);
    const l2 = graphCase({ metric: 'l2', x, xq, d: 3, graph, degree: 2, seeds: [0], itopk: 3, k: 3, half: true });
    // The norms of the halves: 1 + 2048^2 + 9, h^2, 2052^2 + 1.
    expect(Array.from(l2.xnorm)).toEqual([4194314, Math.fround(h * h), 4210705]);
    graphSearch(l2);
    expect(pairs(l2)).toEqual([[[Math.fround(Math.fround(h * h) - 2 * h), 1], [4194314 - 2 * 20781, 0], [4210705 - 2 * 1952, 2]]]);
  });

  it('through the CPU device', async () => {
    const n = 200;
    const d = 7;
    const r = rng(32);
    const x = Float32Array.from({ length: n * d }, () => (r() - 0.5) * 20);
    const a = graphCase({
      metric: 'l2', x, xq: randomSmallInts(5 * d, 7), d, graph: randomGraph(n, 10, r), degree: 10, seeds: [4, 9], itopk: 24, k: 8,
      searchWidth: 2, hashBits: 7, q0: 1, rows: 4, half: true,
    });
    const device = new CpuDevice();
    const got = await searchOnDevice(device, a);
    device.dispose();
    graphSearch(a);
    expect(Array.from(got.i)).toEqual(Array.from(a.outI));
    expect(Array.from(got.s)).toEqual(Array.from(a.outS));
  });

  it('xb must match half', () => {
    const a = graphCase({ metric: 'l2', x: line(8), xq: Float32Array.of(1), d: 1, graph: graphRows(pathNeighbours(8), 2), degree: 2, seeds: [0], itopk: 4, k: 2 });
    expect(() => graphSearch({ ...a, half: true })).toThrow(/xb must be the half rows' words/);
    const h = graphCase({ metric: 'l2', x: line(8), xq: Float32Array.of(1), d: 1, graph: graphRows(pathNeighbours(8), 2), degree: 2, seeds: [0], itopk: 4, k: 2, half: true });
    expect(() => graphSearch({ ...h, half: false })).toThrow(/xb must be float32 rows/);
  });
});

describe('cpu graph-search through the CPU device', () => {
  it('dispatches the twin on the buffers\' memory', async () => {
    const n = 200;
    const d = 6;
    const r = rng(31);
    const a = graphCase({
      metric: 'ip', x: randomSmallInts(n * d, 5), xq: randomSmallInts(5 * d, 6), d, graph: randomGraph(n, 10, r), degree: 10, seeds: [4, 9], itopk: 24, k: 8,
      searchWidth: 2, hashBits: 7, q0: 2, rows: 3, mask: maskOf(randomAllow(n, 0.7, r), 9, r), maskBit0: 9,
    });
    const device = new CpuDevice();
    const got = await searchOnDevice(device, a);
    device.dispose();
    graphSearch(a);
    expect(Array.from(got.i)).toEqual(Array.from(a.outI));
    expect(Array.from(got.s)).toEqual(Array.from(a.outS));
    expect(Array.from(got.work)).toEqual(Array.from(a.outWork!));
  });
});

describe('cpu graph-search: argument checks', () => {
  const base = () => graphCase({ metric: 'l2', x: line(8), xq: Float32Array.of(1), d: 1, graph: graphRows(pathNeighbours(8), 2), degree: 2, seeds: [0], itopk: 4, k: 2 });
  const cases: [string, Partial<ReturnType<typeof base>>, RegExp][] = [
    ['itopk above the cap', { itopk: 300, hashBits: 10 }, /itopk must be an integer in \[1, 256\].*got 300/],
    ['k above itopk', { k: 5 }, /k must be an integer in \[1, 4\].*got 5/],
    ['k 0', { k: 0 }, /k must be/],
    ['searchWidth above the cap', { searchWidth: 33 }, /searchWidth must be an integer in \[1, 32\].*got 33/],
    ['a batch above the cap', { searchWidth: 17, degree: 32 }, /searchWidth \* degree must be at most 512.*got 17 \* 32 = 544/],
    ['too many seeds', { nseeds: 513 }, /nseeds must be an integer in \[0, 512\].*got 513/],
    ['hashBits above the cap', { hashBits: 11 }, /hashBits must be an integer in \[1, 10\].*got 11/],
    ['a hash too small', { hashBits: 2 }, /hashBits 2 \(4 slots\) is too small/],
    ['dpad not a multiple of 4', { dpad: 6 }, /dpad must be a multiple of 4 in \[4, 1024\].*got 6/],
    ['dpad above the cap', { dpad: 1028 }, /dpad must be/],
  ];
  for (const [what, change, message] of cases) {
    it(what, () => {
      const a = { ...base(), ...change };
      expect(() => graphSearch(a)).toThrow(InvalidArgumentError);
      expect(() => graphSearch(a)).toThrow(message);
    });
  }
});
