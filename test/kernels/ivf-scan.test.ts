import { afterAll, describe, expect, it } from 'vitest';
import type { KernelMetric } from '../../src/kernel-facts.js';
import { ivfScan } from '../../src/cpu/ivf-scan.js';
import { PAD_ID } from '../../src/kernel-facts.js';
import { padRows, paddedDim } from '../../src/device.js';
import { norms } from '../../src/cpu/norms.js';
import { encodeIvfScan } from '../../src/gpu/kernels/ivf-scan.js';
import { encodeHalfRows } from '../../src/stores/half-rows.js';
import { halfToFloat } from '../../src/common/fp16.js';
import { randomFloats, randomSmallInts, rng } from '../../src/common/random.js';
import { expectIdentical } from '../helpers/compare.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { maskOf, randomAllow } from '../helpers/mask.js';
import { KernelHarness, POISON } from './harness.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);

// [n, d, nlist, nq, nprobe, nseg, k]: k larger than lists (padding), empty lists, odd d, segments.
const shapes: number[][] = [
  [1, 1, 1, 1, 1, 1, 1],
  [200, 5, 7, 4, 3, 2, 10],
  [1000, 16, 40, 9, 40, 1, 5],
  [600, 9, 100, 3, 7, 3, 64],
  // k = 16, 8 and 3: full sorted lists (K_CAP 16, 8) and one under its capacity (K_CAP 4); the
  // shapes above keep k = 10 and 5 in a list of 16 or 8 and k = 64 in a heap (src/gpu/shaders.ts).
  [900, 12, 30, 6, 5, 2, 16],
  [500, 10, 25, 4, 6, 2, 8],
  [300, 7, 20, 5, 4, 2, 3],
];

/** Rows of `x` grouped by list (stable), their ids (`id0 + row`) and `offsets[nlist + 1]`, as an index file lays lists out. */
function toCsr(x: Float32Array, n: number, d: number, nlist: number, listOf: Uint32Array, id0: number) {
  const offsets = new Uint32Array(nlist + 1);
  for (let i = 0; i < n; i++) offsets[listOf[i] + 1]++;
  for (let l = 0; l < nlist; l++) offsets[l + 1] += offsets[l];
  const at = offsets.slice(0, nlist);
  const xb = new Float32Array(n * d);
  const ids = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const p = at[listOf[i]]++;
    xb.set(x.subarray(i * d, (i + 1) * d), p * d);
    ids[p] = id0 + i;
  }
  return { xb, ids, offsets };
}

/**
 * Which positions a masked case allows: `none` (no mask), `half` and `tenth` (random bits),
 * `nothing`, or `one` (a single position inside a list the queries probe).
 */
type MaskKind = 'none' | 'half' | 'tenth' | 'nothing' | 'one';

/** Rows (`n * d`) as halves (encodeHalfRows) and their values back, as the HALF scan reads them. */
function halves(x: Float32Array, n: number, d: number): { words: Uint32Array; values: Float32Array } {
  const { words } = encodeHalfRows(x, n, d);
  const w = words.length / Math.max(1, n);
  const values = Float32Array.from({ length: n * d }, (_, t) => halfToFloat((words[Math.floor(t / d) * w + ((t % d) >>> 1)] >>> (16 * ((t % d) & 1))) & 0xffff));
  return { words, values };
}

/**
 * Runs one random case on the GPU and the twin and checks GPU = twin (exactly on small-integer
 * data, within rounding on floats) and twin = a full sort of each segment's allowed rows; with
 * `half`, both score the rows as halves (shaders/ivf-scan.wgsl, HALF), and the sort their values.
 */
async function randomCase(shape: number[], metric: KernelMetric, kind: 'int' | 'float', maskKind: MaskKind, maskBit0: number, half = false): Promise<void> {
  const [n, d, nlist, nq, nprobe, nseg, k] = shape;
  const h = new KernelHarness(gpu!);
  const gen = kind === 'int' ? randomSmallInts : randomFloats;
  const x = gen(n * d, n);
  const xq = gen(nq * d, nq);
  const r = rng(nlist);
  // Lists skewed towards low numbers, so that some lists are empty.
  const listOf = Uint32Array.from({ length: n }, () => Math.floor(r() ** 2 * nlist));
  const csr = toCsr(x, n, d, nlist, listOf, 100);
  const dpad = paddedDim(d);
  const host = { ...csr, xnorm: norms(csr.xb, n, d) };
  const dev = { ...host, xb: padRows(host.xb, n, d, dpad) };
  const probes = Uint32Array.from({ length: nq * nprobe }, (_, i) => (i % 5 === 4 && nprobe > 1 ? PAD_ID : Math.floor(r() * nlist)));
  const qpad = new Float32Array(nq * dpad);
  for (let i = 0; i < nq; i++) qpad.set(xq.subarray(i * d, (i + 1) * d), i * dpad);
  const allow = allowedPositions(maskKind, n, probes, host.offsets, r);
  const mask = allow && maskOf(allow, maskBit0, r);
  const len = nq * nprobe * nseg * k;
  const outS = h.output(len, POISON);
  const outI = h.output(len, POISON);
  // Rows 1.. of the queries and probes, to exercise q0 and probe0 (past the lists' ranges).
  const rows = Math.max(1, nq - 1);
  const q0 = nq - rows;
  const lists = listWords(dev.offsets, probes);
  const probe0 = 2 * nlist + q0 * nprobe;
  encodeIvfScan(h.kernels, {
    metric, mask: mask && h.upload(mask), maskBit0, xq: h.upload(qpad), lists: h.upload(lists), probe0,
    xb: h.upload(dev.xb), xh: half ? h.upload(halves(dev.xb, n, dpad).words) : null, xnorm: h.upload(dev.xnorm), ids: h.upload(dev.ids), outS, outI,
    rows, k, nprobe, nseg, dpad, q0,
  });
  await h.run();
  const wS = new Float32Array(rows * nprobe * nseg * k);
  const wI = new Uint32Array(rows * nprobe * nseg * k);
  const hostHalves = half ? halves(host.xb, n, d) : null;
  ivfScan(metric, xq, q0, rows, listWords(host.offsets, probes), probe0, nprobe, nseg, host.xb, hostHalves?.words ?? null, host.xnorm, host.ids, mask, maskBit0, d, k, wS, wI);
  const gS = await h.readF32(outS, wS.length);
  const gI = await h.readU32(outI, wI.length);
  h.dispose();
  if (kind === 'int') {
    expect(Array.from(gI)).toEqual(Array.from(wI));
    expect(Array.from(gS)).toEqual(Array.from(wS));
  } else {
    for (let i = 0; i < wS.length; i++) {
      if (wI[i] === PAD_ID) expect(gI[i]).toBe(PAD_ID);
      else expect(Math.abs(gS[i] - wS[i]), `entry ${i}`).toBeLessThanOrEqual(1e-5 * (2 + d));
    }
  }
  const want = scanReference(metric, xq, q0, rows, probes, nprobe, nseg, host.offsets, hostHalves?.values ?? host.xb, host.xnorm, host.ids, d, k, allow);
  expect(Array.from(wI), 'twin vs reference: ids').toEqual(Array.from(want.i));
  expect(Array.from(wS), 'twin vs reference: scores').toEqual(Array.from(want.s));
  if (maskKind === 'nothing') expect(wI.every((id) => id === PAD_ID)).toBe(true);
  if (maskKind === 'one') expect(wI.filter((id) => id !== PAD_ID).length).toBeGreaterThan(0);
}

describe.skipIf(!gpu)('gpu ivf-scan vs cpu twin', () => {
  for (const shape of shapes) {
    const [n, d, nlist, , nprobe, nseg, k] = shape;
    for (const metric of ['l2', 'ip'] as KernelMetric[]) {
      for (const kind of ['int', 'float'] as const) {
        it(`n=${n} d=${d} nlist=${nlist} nprobe=${nprobe} nseg=${nseg} k=${k} ${metric} ${kind}`, () => randomCase(shape, metric, kind, 'none', 0));
      }
    }
  }
});

// Random floats in [0, 1) round to halves; small integers are halves exactly.
describe.skipIf(!gpu)('gpu ivf-scan on half rows vs cpu twin', () => {
  for (const shape of shapes) {
    const [n, d, nlist, , nprobe, nseg, k] = shape;
    for (const metric of ['l2', 'ip'] as KernelMetric[]) {
      for (const kind of ['int', 'float'] as const) {
        it(`n=${n} d=${d} nlist=${nlist} nprobe=${nprobe} nseg=${nseg} k=${k} ${metric} ${kind}`, () => randomCase(shape, metric, kind, 'none', 0, true));
      }
    }
  }
  it('with a mask', () => randomCase(shapes[1], 'l2', 'float', 'half', 77, true));
});

// [mask, maskBit0]: bit0 0, past a word boundary and not a multiple of 32.
const maskCases: [MaskKind, number][] = [['half', 0], ['tenth', 45], ['half', 77], ['nothing', 13], ['one', 33]];

describe.skipIf(!gpu)('gpu ivf-scan with a mask vs cpu twin', () => {
  for (const shape of shapes.slice(1)) {
    const [n, , nlist, , nprobe, nseg, k] = shape;
    for (const [maskKind, maskBit0] of maskCases) {
      for (const metric of ['l2', 'ip'] as KernelMetric[]) {
        const kind = metric === 'l2' ? 'int' : 'float';
        it(`n=${n} nlist=${nlist} nprobe=${nprobe} nseg=${nseg} k=${k} ${metric} ${kind}, mask ${maskKind} from bit ${maskBit0}`, () =>
          randomCase(shape, metric, kind, maskKind, maskBit0));
      }
    }
  }
});

/** Positions a case allows (null: no mask). */
function allowedPositions(kind: MaskKind, n: number, probes: Uint32Array, offsets: Uint32Array, r: () => number): boolean[] | null {
  switch (kind) {
    case 'none':
      return null;
    case 'half':
    case 'tenth':
      return randomAllow(n, kind === 'half' ? 0.5 : 0.1, r);
    case 'nothing':
      return randomAllow(n, 0, r);
    case 'one': {
      // The middle of the last non-empty list the queries probe.
      const list = [...probes].reverse().find((l) => l !== PAD_ID && offsets[l + 1] > offsets[l])!;
      const allow = randomAllow(n, 0, r);
      allow[(offsets[list] + offsets[list + 1]) >> 1] = true;
      return allow;
    }
  }
}

/**
 * The twin's lists by a full sort: each (query, probe, segment)'s allowed rows (all where `allow`
 * is null), scored as the twin scores them, sorted by (score, id), the first k, padded.
 */
function scanReference(
  metric: KernelMetric, xq: Float32Array, q0: number, rows: number, probes: Uint32Array, nprobe: number, nseg: number,
  offsets: Uint32Array, xb: Float32Array, xnorm: Float32Array, ids: Uint32Array, d: number, k: number, allow: boolean[] | null,
): { s: Float32Array; i: Uint32Array } {
  const s = new Float32Array(rows * nprobe * nseg * k).fill(Infinity);
  const i = new Uint32Array(rows * nprobe * nseg * k).fill(PAD_ID);
  for (let r = 0; r < rows; r++) {
    for (let p = 0; p < nprobe; p++) {
      const list = probes[(q0 + r) * nprobe + p];
      if (list === PAD_ID) continue;
      const [start, end] = [offsets[list], offsets[list + 1]];
      const segLen = Math.ceil((end - start) / nseg);
      for (let g = 0; g < nseg; g++) {
        const found: [number, number][] = [];
        for (let v = start + g * segLen; v < Math.min(end, start + (g + 1) * segLen); v++) {
          if (allow && !allow[v]) continue;
          let dot = 0;
          for (let j = 0; j < d; j++) dot += xq[(q0 + r) * d + j] * xb[v * d + j];
          found.push([Math.fround(metric === 'l2' ? xnorm[v] - 2 * dot : -dot), ids[v]]);
        }
        found.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
        const off = ((r * nprobe + p) * nseg + g) * k;
        found.slice(0, k).forEach(([score, id], j) => {
          s[off + j] = score;
          i[off + j] = id;
        });
      }
    }
  }
  return { s, i };
}

// Hand-written tie cases: one query q = (1, 0) against three inverted lists whose ids are not in
// position order, with several exactly equal scores; the expected (score, id) lists are written
// out by hand (ties break on the smaller id; padding (+Infinity, 0xffffffff)). Both the kernel and
// its CPU twin must give them, so a spec bug the two share is caught too.
describe('ivf-scan: hand-written ties', () => {
  const PAD: [number, number] = [Infinity, 0xffffffff];
  const d = 2;
  const xq = new Float32Array([1, 0]);
  //                 position:  0       1       2       3       4        5       6
  //                 id:        50      40      30      20      10       7       3
  const xb = new Float32Array([1, 0,  2, 2,  1, 0,  2, 1,  2, -1,  3, 1,  3, -1]);
  const ids = new Uint32Array([50, 40, 30, 20, 10, 7, 3]);
  // l2 = ||x||^2 - 2 q.x:       -1      4      -1      1       1        4       4
  // ip = -q.x:                  -1     -2      -1     -2      -2       -3      -3
  const xnorm = new Float32Array([1, 8, 1, 5, 5, 10, 10]);
  const offsets = new Uint32Array([0, 5, 7, 7]); // list 0: positions 0..4, list 1: 5..6, list 2: empty
  const probes = new Uint32Array([1, PAD_ID, 0, 2]);
  const nprobe = probes.length;
  interface Case {
    metric: KernelMetric;
    k: number;
    nseg: number;
    /** One list per (probe, segment). */
    want: [number, number][][];
  }
  const cases: Case[] = [
    {
      metric: 'l2', k: 4, nseg: 1,
      want: [
        [[4, 3], [4, 7], PAD, PAD],
        [PAD, PAD, PAD, PAD],
        [[-1, 30], [-1, 50], [1, 10], [1, 20]],
        [PAD, PAD, PAD, PAD],
      ],
    },
    {
      metric: 'ip', k: 4, nseg: 1,
      want: [
        [[-3, 3], [-3, 7], PAD, PAD],
        [PAD, PAD, PAD, PAD],
        [[-2, 10], [-2, 20], [-2, 40], [-1, 30]],
        [PAD, PAD, PAD, PAD],
      ],
    },
    {
      // Heap evictions among equals: later (-2, 20) and (-2, 10) must displace (-2, 40).
      metric: 'ip', k: 2, nseg: 1,
      want: [
        [[-3, 3], [-3, 7]],
        [PAD, PAD],
        [[-2, 10], [-2, 20]],
        [PAD, PAD],
      ],
    },
    {
      // Segments: list 1 (2 vectors) in segments of 1, list 0 (5 vectors) in segments of 3 and 2.
      metric: 'l2', k: 4, nseg: 2,
      want: [
        [[4, 7], PAD, PAD, PAD], [[4, 3], PAD, PAD, PAD],
        [PAD, PAD, PAD, PAD], [PAD, PAD, PAD, PAD],
        [[-1, 30], [-1, 50], [4, 40], PAD], [[1, 10], [1, 20], PAD, PAD],
        [PAD, PAD, PAD, PAD], [PAD, PAD, PAD, PAD],
      ],
    },
  ];
  const expected = (c: Case) => {
    const flat = c.want.flat();
    return { distances: Float32Array.from(flat, (p) => p[0]), labels: Int32Array.from(flat, (p) => p[1] | 0) };
  };

  for (const c of cases) {
    const name = `${c.metric} k=${c.k} nseg=${c.nseg}`;
    it(`cpu twin: ${name}`, () => {
      const len = nprobe * c.nseg * c.k;
      const outS = new Float32Array(len);
      const outI = new Uint32Array(len);
      ivfScan(c.metric, xq, 0, 1, listWords(offsets, probes), 6, nprobe, c.nseg, xb, null, xnorm, ids, null, 0, d, c.k, outS, outI);
      expectIdentical({ distances: outS, labels: new Int32Array(outI.buffer) }, expected(c), name);
    });

    // Small integers are halves exactly: HALF scores them the same.
    it(`cpu twin on half rows: ${name}`, () => {
      const len = nprobe * c.nseg * c.k;
      const outS = new Float32Array(len);
      const outI = new Uint32Array(len);
      ivfScan(c.metric, xq, 0, 1, listWords(offsets, probes), 6, nprobe, c.nseg, xb, halves(xb, ids.length, d).words, xnorm, ids, null, 0, d, c.k, outS, outI);
      expectIdentical({ distances: outS, labels: new Int32Array(outI.buffer) }, expected(c), name);
    });

    for (const half of [false, true]) it.skipIf(!gpu)(`gpu kernel${half ? ' on half rows' : ''}: ${name}`, async () => {
      const h = new KernelHarness(gpu!);
      const dpad = paddedDim(d);
      const pad = (a: Float32Array, n: number): Float32Array => {
        const out = new Float32Array(n * dpad);
        for (let i = 0; i < n; i++) out.set(a.subarray(i * d, (i + 1) * d), i * dpad);
        return out;
      };
      const len = nprobe * c.nseg * c.k;
      const outS = h.output(len, POISON);
      const outI = h.output(len, POISON);
      encodeIvfScan(h.kernels, {
        metric: c.metric, mask: null, maskBit0: 0, xq: h.upload(pad(xq, 1)), lists: h.upload(listWords(offsets, probes)), probe0: 6, xb: h.upload(pad(xb, ids.length)),
        xh: half ? h.upload(halves(pad(xb, ids.length), ids.length, dpad).words) : null, xnorm: h.upload(xnorm), ids: h.upload(ids), outS, outI, rows: 1, k: c.k, nprobe, nseg: c.nseg, dpad, q0: 0,
      });
      await h.run();
      const got = { distances: await h.readF32(outS, len), labels: new Int32Array((await h.readU32(outI, len)).buffer) };
      h.dispose();
      expectIdentical(got, expected(c), name);
    });
  }
});

/** ivf-scan's lists binding: CSR offsets (nlist + 1) as the per-list [start, end) ranges, then the probes (from 2 nlist). */
function listWords(offsets: Uint32Array, probes: Uint32Array): Uint32Array {
  const nlist = offsets.length - 1;
  const r = new Uint32Array(2 * nlist + probes.length);
  for (let l = 0; l < nlist; l++) {
    r[2 * l] = offsets[l];
    r[2 * l + 1] = offsets[l + 1];
  }
  r.set(probes, 2 * nlist);
  return r;
}
