import { afterAll, describe, expect, it } from 'vitest';
import type { KernelMetric } from '../../src/kernel-facts.js';
import { PAD_ID } from '../../src/kernel-facts.js';
import { GRAPH_HASH_MUL, type GraphSearchHost, type GraphSearchWork, graphSearch } from '../../src/cpu/graph-search.js';
import { GRAPH_SEARCH_WORKGROUP_BYTES, encodeGraphSearch } from '../../src/gpu/kernels/graph-search.js';
import {
  GRAPH_SEARCH_MAX_CANDIDATES, GRAPH_SEARCH_MAX_DPAD, GRAPH_SEARCH_MAX_HASH_BITS, GRAPH_SEARCH_MAX_ITOPK, GRAPH_SEARCH_MAX_TEAM, GRAPH_SEARCH_MAX_WIDTH, graphSearchTeam, halfRowWords,
} from '../../src/device.js';
import { InvalidArgumentError } from '../../src/errors.js';
import { createBackend } from '../../src/backend/create-backend.js';
import { shaderText } from '../../src/gpu/shaders.js';
import { randomSmallInts, rng } from '../../src/common/random.js';
import { expectIdentical } from '../helpers/compare.js';
import { type GpuBackend, disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { platform } from '../../src/platform/platform.js';
import { maskOf, randomAllow } from '../helpers/mask.js';
import { graphCase, randomGraph, searchOnDevice } from '../helpers/graph-search.js';
import { KernelHarness, POISON, withWorkgroupLimit } from './harness.js';

const gpu = await gpuBackend();

// A device with WebGPU's default limits (8 storage buffers a stage, 16 KiB of workgroup memory),
// as a page that hands its own device over makes one; the instance stays referenced while in use.
let instance: GPU | null = null;
async function defaultLimitsBackend(): Promise<GpuBackend | null> {
  if (!gpu) return null;
  instance ??= (await platform.requestGpu([])).gpu;
  const adapter = await instance.requestAdapter();
  return adapter && gpuBackend({ device: await adapter.requestDevice() });
}
const small = await defaultLimitsBackend();
afterAll(() => {
  disposeGpuBackends();
  (small?.device.ctx.device)?.destroy(); // adopted: ours to destroy
});

interface Shape {
  n: number;
  d: number;
  degree: number;
  itopk: number;
  searchWidth: number;
  k: number;
  nseeds: number;
  hashBits: number;
  nq: number;
  maxIterations?: number;
  /** Share of rows the mask allows (none: no mask). */
  allow?: number;
}

// Odd and even d; itopk 16 .. 128 and itopk > n; searchWidth 1 .. 4; hashes small enough to reset
// (64 slots for 16 + 8, 128 for 32 + 48) and not; a cut by maxIterations; masks.
const shapes: Shape[] = [
  { n: 1, d: 1, degree: 8, itopk: 16, searchWidth: 1, k: 1, nseeds: 1, hashBits: 6, nq: 1 },
  { n: 300, d: 5, degree: 8, itopk: 16, searchWidth: 1, k: 10, nseeds: 4, hashBits: 6, nq: 7 },
  { n: 2000, d: 16, degree: 32, itopk: 64, searchWidth: 2, k: 20, nseeds: 16, hashBits: 10, nq: 12 },
  { n: 1500, d: 9, degree: 12, itopk: 128, searchWidth: 4, k: 64, nseeds: 32, hashBits: 9, nq: 6 },
  { n: 800, d: 12, degree: 16, itopk: 32, searchWidth: 3, k: 32, nseeds: 8, hashBits: 7, nq: 9, allow: 0.5 },
  { n: 1000, d: 4, degree: 8, itopk: 16, searchWidth: 1, k: 16, nseeds: 1, hashBits: 10, nq: 5, maxIterations: 3 },
  { n: 20, d: 3, degree: 8, itopk: 64, searchWidth: 2, k: 30, nseeds: 3, hashBits: 8, nq: 4, allow: 0.3 },
  { n: 600, d: 7, degree: 24, itopk: 48, searchWidth: 1, k: 8, nseeds: 5, hashBits: 8, nq: 5, allow: 0 },
];

/**
 * A random case on small integers (every score exact in float32): the twin's call. With `half`
 * the rows go as halves; `inexact`, they are floats of magnitude in [1, 16), not exact in float16,
 * whose halves are multiples of 2^-10: products with the small-integer queries and their sums stay
 * exact in float32, so the GPU's decode and the twin's agree element for element there too.
 */
function randomCase(s: Shape, metric: KernelMetric, seed: number, half: 'half' | 'inexact' | false = false): GraphSearchHost {
  const r = rng(seed);
  const x = half === 'inexact'
    ? Float32Array.from({ length: s.n * s.d }, () => (r() < 0.5 ? -1 : 1) * (1 + 15 * r()))
    : randomSmallInts(s.n * s.d, seed);
  const xq = randomSmallInts((s.nq + 1) * s.d, seed + 1);
  // Each query's own seeds (PAD_ID among them, and repeats).
  const seeds = Array.from({ length: s.nq }, (_, q) => Array.from({ length: s.nseeds }, (_, j) => ((j + q) % 7 === 6 ? PAD_ID : Math.floor(r() * s.n))));
  const maskBit0 = seed % 50;
  const mask = s.allow === undefined ? null : maskOf(randomAllow(s.n, s.allow, r), maskBit0, r);
  // Rows 1 ..: q0 = 1.
  return graphCase({
    metric, x, xq, d: s.d, graph: randomGraph(s.n, s.degree, r), degree: s.degree, seeds, itopk: s.itopk, k: s.k, searchWidth: s.searchWidth,
    maxIterations: s.maxIterations ?? 1000, hashBits: s.hashBits, q0: 1, rows: s.nq, mask, maskBit0, half: !!half,
  });
}

/** Records the GPU call of a twin's case (outputs poisoned), returning its output buffers. */
function encodeCase(h: KernelHarness, a: GraphSearchHost, work = true) {
  const outS = h.output(a.rows * a.k, POISON);
  const outI = h.output(a.rows * a.k, POISON);
  const outWork = work ? h.output(2 * a.rows, POISON) : null;
  encodeGraphSearch(h.kernels, {
    ...a, xq: h.upload(a.xq), xb: h.upload(a.xb), xbHi: a.xbHi ? h.upload(a.xbHi) : null, xnorm: h.upload(a.xnorm), graph: h.upload(a.graph), seeds: h.upload(a.seeds.length ? a.seeds : new Uint32Array(1)),
    mask: a.mask && h.upload(a.mask), outS, outI, outWork,
  });
  return { outS, outI, outWork };
}

async function expectTwin(h: KernelHarness, a: GraphSearchHost, out: ReturnType<typeof encodeCase>, what: string): Promise<GraphSearchWork> {
  const work = graphSearch(a);
  const got = { distances: await h.readF32(out.outS, a.rows * a.k), labels: await h.readU32(out.outI, a.rows * a.k) };
  expectIdentical(got, { distances: a.outS, labels: a.outI }, what);
  if (out.outWork) expect(Array.from(await h.readU32(out.outWork, 2 * a.rows)), `${what}: iterations and distances`).toEqual(Array.from(a.outWork!));
  return work;
}

describe.skipIf(!gpu)('gpu graph-search vs cpu twin', () => {
  let seed = 100;
  for (const s of shapes) {
    for (const metric of ['l2', 'ip'] as KernelMetric[]) {
      const caseSeed = seed++;
      const name = `n=${s.n} d=${s.d} degree=${s.degree} itopk=${s.itopk} width=${s.searchWidth} k=${s.k} seeds=${s.nseeds} hashBits=${s.hashBits}` +
        `${s.maxIterations ? ` maxIterations=${s.maxIterations}` : ''}${s.allow !== undefined ? ` mask ${s.allow}` : ''} ${metric} (seed ${caseSeed})`;
      it(name, async () => {
        const h = new KernelHarness(gpu!);
        try {
          const a = randomCase(s, metric, caseSeed);
          const out = encodeCase(h, a);
          await h.run();
          const work = await expectTwin(h, a, out, name);
          // The cases do what they are there for: small hashes reset, masks leave results.
          if (s.hashBits <= 7 && s.n > 1) expect(work.resets, 'resets').toBeGreaterThan(0);
          if (s.allow !== 0) expect(a.outI.filter((v) => v !== PAD_ID).length, 'results').toBeGreaterThanOrEqual(a.rows * Math.min(a.k, s.n) * (s.allow ?? 1) * 0.5);
        } finally {
          h.dispose();
        }
      });
    }
  }

  // HALF: every shape (odd d: dpad / 4 odd, a half row's last four halves zero), on small integers
  // (halves exact) and on floats that are not.
  for (const s of shapes) {
    for (const [metric, half] of [['l2', 'half'], ['ip', 'inexact'], ['l2', 'inexact']] as [KernelMetric, 'half' | 'inexact'][]) {
      const caseSeed = seed++;
      const name = `HALF (${half === 'half' ? 'exact' : 'inexact'}) n=${s.n} d=${s.d} degree=${s.degree} itopk=${s.itopk} width=${s.searchWidth} k=${s.k}` +
        `${s.allow !== undefined ? ` mask ${s.allow}` : ''} ${metric} (seed ${caseSeed})`;
      it(name, async () => {
        const h = new KernelHarness(gpu!);
        try {
          const a = randomCase(s, metric, caseSeed, half);
          expect(a.half).toBe(true);
          const out = encodeCase(h, a);
          await h.run();
          await expectTwin(h, a, out, name);
          if (s.allow !== 0) expect(a.outI.filter((v) => v !== PAD_ID).length, 'results').toBeGreaterThanOrEqual(a.rows * Math.min(a.k, s.n) * (s.allow ?? 1) * 0.5);
        } finally {
          h.dispose();
        }
      });
    }
  }

  // Teams score each fresh id together (partial sums over vec4s t, t + team, ...; every case above
  // runs team 1, 32 is auto's largest, 64 the workgroup): several rounds of WG / team ids a batch
  // (64 ids at width 2 x degree 32, 48 at 4 x 12), rows of fewer vec4s than the team (d = 5) and
  // of more (d = 100). Small integers keep every float32 sum exact whatever its order, so the
  // kernel equals the twin element for element.
  for (const team of [2, 8, 32, 64]) {
    it(`team ${team}: float32 and HALF rows, masked and not, GPU = twin`, async () => {
      const h = new KernelHarness(gpu!);
      try {
        const cases: [Shape, KernelMetric, 'half' | false][] = [
          [shapes[2], 'l2', false],
          [shapes[3], 'ip', 'half'],
          [shapes[4], 'l2', false],
          [{ ...shapes[1], d: 100 }, 'l2', 'half'],
          [{ ...shapes[2], d: 100, allow: 0.2 }, 'ip', false],
        ];
        const runs = cases.map(([s, metric, half], i) => {
          const a = { ...randomCase(s, metric, 500 + 10 * team + i, half), team };
          return { a, out: encodeCase(h, a), name: `team ${team}, case ${i} (d=${s.d}, ${metric}${half ? ', HALF' : ''})` };
        });
        await h.run();
        for (const { a, out, name } of runs) await expectTwin(h, a, out, name);
      } finally {
        h.dispose();
      }
    });
  }

  it('a team through the GPU device\'s dispatch; the device\'s default team (1 on a software adapter)', async () => {
    expect(gpu!.device.tuning.graphTeam).toBe(gpu!.device.ctx.adapterInfo.isFallbackAdapter ? 1 : 'auto');
    const a = { ...randomCase({ ...shapes[2], d: 64 }, 'l2', 77), team: 16 };
    const got = await searchOnDevice(gpu!.device, a);
    graphSearch(a);
    expectIdentical({ distances: got.s, labels: got.i }, { distances: a.outS, labels: a.outI }, 'team 16 through the device');
  });

  it('HALF rows in two bindings (xbHi from rowSplit): the results of one binding, GPU = twin', async () => {
    for (const [split, mask] of [[1, undefined], [150, 0.6], [399, undefined]] as const) {
      const s: Shape = { n: 400, d: 20, degree: 16, itopk: 32, searchWidth: 2, k: 10, nseeds: 6, hashBits: 9, nq: 8, allow: mask };
      const whole = randomCase(s, 'l2', 40 + split, 'inexact');
      graphSearch(whole);
      const w = split * halfRowWords(whole.dpad);
      const words = whole.xb as Uint32Array;
      const a = { ...randomCase(s, 'l2', 40 + split, 'inexact'), xb: words.slice(0, w), xbHi: words.slice(w), rowSplit: split };
      const h = new KernelHarness(gpu!);
      try {
        const out = encodeCase(h, a);
        await h.run();
        await expectTwin(h, a, out, `split at ${split}`);
        expectIdentical({ distances: a.outS, labels: a.outI }, { distances: whole.outS, labels: whole.outI }, `split at ${split} = one binding`);
        expect(Array.from(a.outWork!)).toEqual(Array.from(whole.outWork!));
      } finally {
        h.dispose();
      }
    }
    const a = randomCase(shapes[1], 'l2', 3);
    expect(() => graphSearch({ ...a, xbHi: new Uint32Array(8), rowSplit: 1 })).toThrow('graph-search: xbHi holds half rows: it needs half');
    const b = randomCase(shapes[1], 'l2', 3, 'half');
    expect(() => graphSearch({ ...b, xbHi: new Uint32Array(8), rowSplit: 0 })).toThrow('graph-search: rowSplit must be an integer in [1, 300] (the first row in xbHi, at most n); got 0');
  });

  it('HALF through the GPU device\'s dispatch, and dpad at the cap', async () => {
    for (const d of [GRAPH_SEARCH_MAX_DPAD, GRAPH_SEARCH_MAX_DPAD - 4]) {
      const a = randomCase({ n: 40, d, degree: 8, itopk: 16, searchWidth: 2, k: 8, nseeds: 2, hashBits: 7, nq: 3, allow: 0.7 }, 'l2', 14 + d, 'inexact');
      const got = await searchOnDevice(gpu!.device, a);
      graphSearch(a);
      expectIdentical({ distances: got.s, labels: got.i }, { distances: a.outS, labels: a.outI }, `device d=${d}`);
      expect(Array.from(got.work)).toEqual(Array.from(a.outWork!));
    }
  });

  it('without iteration counts (the seeds bound as they are), and two calls in one submit sharing the scratch', async () => {
    const h = new KernelHarness(gpu!);
    try {
      const a = randomCase(shapes[1], 'l2', 7);
      const b = randomCase({ ...shapes[4], nseeds: 3 }, 'ip', 8);
      const c = randomCase(shapes[2], 'l2', 9);
      // c before b: b's seeds and counts fit the scratch c's made.
      const outA = encodeCase(h, a, false);
      const outC = encodeCase(h, c);
      const outB = encodeCase(h, b);
      await h.run();
      await expectTwin(h, a, outA, 'no work counts');
      await expectTwin(h, c, outC, 'first of two');
      await expectTwin(h, b, outB, 'second of two');
    } finally {
      h.dispose();
    }
  });

  it('through the GPU device\'s dispatch (the registry\'s encoder)', async () => {
    const a = randomCase(shapes[4], 'ip', 13);
    const got = await searchOnDevice(gpu!.device, a);
    graphSearch(a);
    expectIdentical({ distances: got.s, labels: got.i }, { distances: a.outS, labels: a.outI }, 'device');
    expect(Array.from(got.work)).toEqual(Array.from(a.outWork!));
  });

  it('on a device with the default limits', async () => {
    expect(small!.device.ctx.limits.maxComputeWorkgroupStorageSize).toBe(16384);
    const h = new KernelHarness(small!);
    try {
      const a = randomCase(shapes[4], 'l2', 12);
      const out = encodeCase(h, a);
      await h.run();
      await expectTwin(h, a, out, 'default limits');
    } finally {
      h.dispose();
    }
  });

  it('folds rows past maxComputeWorkgroupsPerDimension', async () => {
    await withWorkgroupLimit(gpu!, 4, async (h, dispatch) => {
      const a = randomCase({ ...shapes[1], nq: 11 }, 'l2', 5);
      const out = encodeCase(h, a);
      expect(dispatch.mock.calls[0][4]).toEqual([4, 3]);
      await h.run();
      await expectTwin(h, a, out, 'folded');
    });
  });
});

describe('graph-search caps', () => {
  it('the shader declares the caps, the hash multiplier and the workgroup memory the TypeScript states', () => {
    const text = shaderText('graph-search');
    const value = (name: string) => Number(new RegExp(`^const ${name}: u32 = (0x[0-9a-f]+|\\d+)u;`, 'm').exec(text)![1]);
    expect(value('PAD_ID')).toBe(PAD_ID);
    expect(value('HASH_MUL')).toBe(GRAPH_HASH_MUL);
    expect(value('MAX_ITOPK')).toBe(GRAPH_SEARCH_MAX_ITOPK);
    expect(value('MAX_CAND')).toBe(GRAPH_SEARCH_MAX_CANDIDATES);
    expect(value('MAX_WIDTH')).toBe(GRAPH_SEARCH_MAX_WIDTH);
    expect(value('MAX_HASH')).toBe(2 ** GRAPH_SEARCH_MAX_HASH_BITS);
    expect(value('MAX_DPAD4')).toBe(GRAPH_SEARCH_MAX_DPAD / 4);
    // A team is at most the workgroup; the partial sums hold two rounds of it.
    expect(value('WG')).toBe(GRAPH_SEARCH_MAX_TEAM);
    expect(value('PARTS')).toBe(2 * GRAPH_SEARCH_MAX_TEAM);
    // Every workgroup variable: 4 bytes a scalar, 16 a vec4, times the array length.
    let bytes = 0;
    for (const m of text.matchAll(/^var<workgroup> \w+: (?:array<(\w+(?:<\w+>)?), (\w+)>|(\w+(?:<\w+>)?));/gm)) {
      const type = m[1] ?? m[3];
      const len = m[2] ? value(m[2]) : 1;
      bytes += (type.startsWith('vec4') ? 16 : 4) * len;
    }
    expect(bytes).toBe(GRAPH_SEARCH_WORKGROUP_BYTES);
    expect(bytes).toBeLessThanOrEqual(16384);
    expect(text.match(/^var<workgroup>/gm)!.length).toBe(13);
  });

  it('the team: auto by the row\'s width (about 64 bytes a lane), or a power of two up to the workgroup; anything else refused', async () => {
    // vec4s a row: 128 floats 32 -> 8; as halves 16 -> 4; 784 as halves 98 -> 32 (the cap); 4 floats -> 1.
    expect([graphSearchTeam('auto', 128, false), graphSearchTeam('auto', 128, true), graphSearchTeam('auto', 784, true), graphSearchTeam('auto', 4, false)]).toEqual([8, 4, 32, 1]);
    expect(graphSearchTeam(16, 4, false)).toBe(16);
    for (const team of [0, 3, 128, 1.5]) {
      expect(() => graphSearch({ ...randomCase(shapes[1], 'l2', 3), team })).toThrow(`graph-search: team must be a power of two in [1, 64] (GRAPH_SEARCH_MAX_TEAM); got ${team}`);
      await expect(createBackend({ backend: 'cpu', tuning: { graphTeam: team } })).rejects.toThrow(`tuning.graphTeam must be auto or a power of two in [1, 64]; got ${team}`);
    }
  });

  it.skipIf(!gpu)('fits the device\'s workgroup memory', () => {
    expect(gpu!.device.ctx.limits.maxComputeWorkgroupStorageSize).toBeGreaterThanOrEqual(GRAPH_SEARCH_WORKGROUP_BYTES);
  });

  const cases: [string, Partial<Shape>, RegExp][] = [
    ['itopk above 256', { itopk: 300, k: 10 }, /itopk must be an integer in \[1, 256\].*got 300/],
    ['searchWidth * degree above 512', { searchWidth: 17, degree: 32 }, /searchWidth \* degree must be at most 512/],
    ['a hash too small for itopk + a batch', { hashBits: 4 }, /hashBits 4 \(16 slots\) is too small/],
    ['hashBits above 10', { hashBits: 11 }, /hashBits must be an integer in \[1, 10\]/],
  ];
  for (const [what, change, message] of cases) {
    it.skipIf(!gpu)(`the encoder throws on ${what}`, () => {
      const h = new KernelHarness(gpu!);
      try {
        const a = randomCase(shapes[1], 'l2', 1);
        const call = () => encodeCase(h, { ...a, ...change } as GraphSearchHost);
        expect(call).toThrow(InvalidArgumentError);
        expect(call).toThrow(message);
        expect(h.kernels.recorder.pending).toBe(false);
      } finally {
        h.dispose();
      }
    });
  }
});
