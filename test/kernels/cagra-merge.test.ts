import { afterAll, describe, expect, it } from 'vitest';
import { cagraMerge } from '../../src/cpu/cagra-merge.js';
import { cagraOffsets } from '../../src/cpu/cagra-offsets.js';
import { cagraPrune } from '../../src/cpu/cagra-prune.js';
import { cagraReverse } from '../../src/cpu/cagra-reverse.js';
import { encodeCagraMerge } from '../../src/gpu/kernels/cagra-merge.js';
import { encodeCagraOffsets } from '../../src/gpu/kernels/cagra-offsets.js';
import { encodeCagraReverse } from '../../src/gpu/kernels/cagra-reverse.js';
import { rng } from '../../src/common/random.js';
import { CpuDevice } from '../../src/cpu/cpu-device.js';
import type { Device } from '../../src/device.js';
import { PAD_ID } from '../../src/kernel-facts.js';
import { clusteredKnn, geometricKnn, randomKnn } from '../helpers/cagra.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { KernelHarness, POISON, withWorkgroupLimit } from './harness.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);

type Kind = 'geometric' | 'random' | 'clustered';

/** A pruned graph, by the prune twin, of a kNN graph of `kind`. */
function pruned(kind: Kind, n: number, kin: number, degree: number, seed: number): Uint32Array {
  const knn = kind === 'geometric' ? geometricKnn(n, kin, seed) : kind === 'random' ? randomKnn(n, kin, seed) : clusteredKnn(n, kin, seed, kin + 8);
  const out = new Uint32Array(n * degree);
  cagraPrune(knn, 0, knn, 0, n, n, kin, degree, 0, n, true, true, new Uint32Array(n * kin), out, 0);
  return out;
}

/** The twins as a plan runs them. */
function twins(graph: Uint32Array, n: number, degree: number): { offsets: Uint32Array; edges: Uint32Array; out: Uint32Array } {
  const counts = new Uint32Array(n);
  const offsets = new Uint32Array(n + 1);
  const edges = new Uint32Array(Math.max(1, n * degree));
  cagraReverse(graph, n, degree, 0, n, false, counts, offsets, edges);
  cagraOffsets(counts, n, offsets);
  cagraReverse(graph, n, degree, 0, n, true, counts, offsets, edges);
  const out = new Uint32Array(n * degree);
  cagraMerge(graph, offsets, edges, n, degree, 0, n, out, 0);
  return { offsets, edges, out };
}

/** Each target's range of edges, sorted (the set; the slots within a range are the atomics'). */
function ranges(offsets: Uint32Array, edges: Uint32Array, n: number): number[][] {
  return Array.from({ length: n }, (_, t) => Array.from(edges.subarray(offsets[t], offsets[t + 1])).sort((x, y) => x - y));
}

function firstDifference(got: Uint32Array, want: Uint32Array): string | null {
  if (got.length !== want.length) return `length ${got.length}, want ${want.length}`;
  for (let i = 0; i < want.length; i++) if (got[i] !== want[i]) return `element ${i}: got ${got[i]}, want ${want[i]}`;
  return null;
}

/**
 * The build after the kNN graph, through Device.dispatch, as a plan calls it: prune in tiles, count
 * the reverse edges, offsets, scatter, merge. Returns the final graph.
 */
async function build(device: Device, knn: Uint32Array, n: number, kin: number, degree: number, tile: number): Promise<Uint32Array> {
  const words = (label: string, len: number) => device.buffer(label, Math.max(1, len) * 4);
  const kb = words('knn', n * kin);
  device.upload(kb, 0, knn);
  const graph = words('pruned', n * degree);
  const detours = words('detours', tile * kin);
  for (let node0 = 0; node0 < n; node0 += tile) {
    const nodes = Math.min(tile, n - node0);
    device.dispatch({ kernel: 'cagra-prune', a: kb, a0: node0, d: kb, d0: 0, drows: n, detours, out: graph, out0: node0, n, kin, degree, node0, nodes, first: true, last: true });
  }
  const counts = words('counts', n);
  const offsets = words('offsets', n + 1);
  const edges = words('edges', n * degree);
  const out = words('graph', n * degree);
  device.clear(counts);
  const common = { graph, counts, offsets, edges, n, degree, node0: 0, nodes: n };
  device.dispatch({ kernel: 'cagra-reverse', ...common, scatter: false });
  device.dispatch({ kernel: 'cagra-offsets', counts, offsets, n });
  device.dispatch({ kernel: 'cagra-reverse', ...common, scatter: true });
  device.dispatch({ kernel: 'cagra-merge', graph, offsets, edges, out, out0: 0, n, degree, node0: 0, nodes: n });
  const [bytes] = await device.read([{ buffer: out, offset: 0, bytes: n * degree * 4 }]);
  for (const b of [kb, graph, detours, counts, offsets, edges, out]) device.release(b);
  return new Uint32Array(bytes);
}

describe.skipIf(!gpu)('gpu cagra-reverse, cagra-offsets, cagra-merge vs cpu twins', () => {
  it('the whole build through Device.dispatch: the same graph on the CPU device and on WebGPU', async () => {
    const [n, kin, degree] = [120, 32, 16];
    const knn = geometricKnn(n, kin, 3);
    const cpu = new CpuDevice({});
    try {
      const want = await build(cpu, knn, n, kin, degree, 50);
      expect(firstDifference(await build(gpu!.device, knn, n, kin, degree, 50), want)).toBeNull();
      expect(want.includes(PAD_ID)).toBe(false);
    } finally {
      cpu.dispose();
    }
  });

  it('cagra-offsets: prefix sums of fewer counts than invocations, and of many more', async () => {
    for (const n of [0, 1, 5, 255, 256, 257, 70001]) {
      const r = rng(n + 1);
      const counts = Uint32Array.from({ length: Math.max(1, n) }, () => Math.floor(r() * 40));
      const want = new Uint32Array(n + 1);
      cagraOffsets(counts, n, want);
      const h = new KernelHarness(gpu!);
      try {
        const offsets = h.output(n + 2, POISON);
        encodeCagraOffsets(h.kernels, { counts: h.upload(counts), offsets, n });
        await h.run();
        const got = await h.readU32(offsets, n + 2);
        expect(firstDifference(got.subarray(0, n + 1), want), `n=${n}`).toBeNull();
        expect(got[n + 1], `n=${n}: nothing past offsets[n]`).toBe(POISON);
      } finally {
        h.dispose();
      }
    }
  });

  // [n, kin, degree, graph, tile]: degree 1, odd; rows that cannot fill; hubs (clustered rows
  // point forward, so some nodes have many reverse edges); uneven source and node tiles.
  const shapes: [number, number, number, Kind, number][] = [
    [1, 8, 4, 'geometric', 1],
    [3, 8, 4, 'geometric', 2],
    [40, 8, 1, 'geometric', 40],
    [90, 12, 5, 'clustered', 17],
    [150, 24, 12, 'random', 64],
    [200, 64, 32, 'geometric', 77],
    [300, 16, 16, 'clustered', 300],
  ];
  let seed = 1;
  for (const [n, kin, degree, kind, tile] of shapes) {
    const caseSeed = 50 + seed++;
    it(`${kind} n=${n} kin=${kin} degree=${degree}, tiles of ${tile}: the twins' offsets, reverse edges and rows`, async () => {
      const graph = pruned(kind, n, kin, degree, caseSeed);
      const want = twins(graph, n, degree);
      const h = new KernelHarness(gpu!);
      try {
        const g = h.upload(graph);
        const counts = h.upload(new Uint32Array(n));
        const offsets = h.output(n + 1, POISON);
        const edges = h.output(n * degree, POISON);
        // The merged rows of nodes 1 .. n - 1, from row 0 of out.
        const out = h.output(n * degree, POISON);
        const common = { graph: g, counts, offsets, edges, n, degree };
        for (let s = 0; s < n; s += tile) encodeCagraReverse(h.kernels, { ...common, node0: s, nodes: Math.min(tile, n - s), scatter: false });
        encodeCagraOffsets(h.kernels, { counts, offsets, n });
        for (let s = 0; s < n; s += tile) encodeCagraReverse(h.kernels, { ...common, node0: s, nodes: Math.min(tile, n - s), scatter: true });
        for (let a = 1; a < n; a += tile) encodeCagraMerge(h.kernels, { graph: g, offsets, edges, out, out0: a - 1, n, degree, node0: a, nodes: Math.min(tile, n - a) });
        await h.run();
        const gotOffsets = await h.readU32(offsets, n + 1);
        expect(firstDifference(gotOffsets, want.offsets)).toBeNull();
        expect(Array.from(await h.readU32(counts, n)).every((c) => c === 0)).toBe(true);
        const gotEdges = await h.readU32(edges, n * degree);
        expect(ranges(gotOffsets, gotEdges, n)).toEqual(ranges(want.offsets, want.edges, n));
        const got = await h.readU32(out, n * degree);
        expect(firstDifference(got.subarray(0, (n - 1) * degree), want.out.subarray(degree))).toBeNull();
        expect(Array.from(got.subarray((n - 1) * degree)), 'the row past the tiles').toEqual(new Array(degree).fill(POISON));
      } finally {
        h.dispose();
      }
    });
  }

  it('nodes with more reverse edges than the degree keep the first by (rank, source)', () => {
    // The clustered graph above has hubs; check the data reaches the cut (some in-degree > degree).
    const [n, degree] = [90, 5];
    const graph = pruned('clustered', n, 12, degree, 51);
    const { offsets } = twins(graph, n, degree);
    const most = Math.max(...Array.from({ length: n }, (_, t) => offsets[t + 1] - offsets[t]));
    expect(most).toBeGreaterThan(degree);
    expect(graph.includes(PAD_ID)).toBe(false);
  });

  it('folds tiles of more workgroups than a dimension allows into (x, y)', () =>
    withWorkgroupLimit(gpu!, 3, async (h, dispatch) => {
      const [n, kin, degree] = [50, 16, 8];
      const graph = pruned('geometric', n, kin, degree, 9);
      const want = twins(graph, n, degree);
      const g = h.upload(graph);
      const counts = h.upload(new Uint32Array(n));
      const offsets = h.output(n + 1, POISON);
      const edges = h.output(n * degree, POISON);
      const out = h.output(n * degree, POISON);
      const common = { graph: g, counts, offsets, edges, n, degree, node0: 0, nodes: n };
      encodeCagraReverse(h.kernels, { ...common, scatter: false });
      encodeCagraOffsets(h.kernels, { counts, offsets, n });
      encodeCagraReverse(h.kernels, { ...common, scatter: true });
      encodeCagraMerge(h.kernels, { graph: g, offsets, edges, out, out0: 0, n, degree, node0: 0, nodes: n });
      await h.run();
      // 400 edges are 7 workgroups of 64: (3, 3); 50 nodes are 50 workgroups: (3, 17).
      expect(dispatch.mock.calls.map(([, , , , groups]) => groups)).toEqual([[3, 3], [1, 1], [3, 3], [3, 17]]);
      expect(firstDifference(await h.readU32(out, n * degree), want.out)).toBeNull();
    }));
});
