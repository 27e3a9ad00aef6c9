import { afterAll, describe, expect, it } from 'vitest';
import { cagraPrune } from '../../src/cpu/cagra-prune.js';
import { encodeCagraPrune, kinBucket } from '../../src/gpu/kernels/cagra-prune.js';
import { rng } from '../../src/common/random.js';
import { encodeCagraMerge } from '../../src/gpu/kernels/cagra-merge.js';
import { shaderText, specialize } from '../../src/gpu/shaders.js';
import { CAGRA_MAX_DEGREE, CAGRA_MAX_KIN, PAD_ID } from '../../src/kernel-facts.js';
import { clusteredKnn, geometricKnn, randomKnn } from '../helpers/cagra.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { KernelHarness, POISON, withWorkgroupLimit } from './harness.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);

type Kind = 'geometric' | 'random' | 'clustered' | 'dirty';

/** A kNN graph; `dirty`: random rows with repeated ids, self edges and ids past n mixed in. */
function graph(kind: Kind, n: number, kin: number, seed: number): Uint32Array {
  if (kind === 'geometric') return geometricKnn(n, kin, seed);
  if (kind === 'clustered') return clusteredKnn(n, kin, seed, kin + 6);
  const knn = randomKnn(n, kin, seed);
  if (kind === 'dirty') {
    const r = rng(seed + 1);
    for (let a = 0; a < n; a++) {
      for (let j = 1; j < kin; j++) {
        const v = r();
        if (v < 0.05) knn[a * kin + j] = knn[a * kin + Math.floor(r() * j)];
        else if (v < 0.08) knn[a * kin + j] = a;
        else if (v < 0.1) knn[a * kin + j] = n + 3;
      }
    }
  }
  return knn;
}

/** The twin over all nodes in one call. */
function twin(knn: Uint32Array, n: number, kin: number, degree: number): { out: Uint32Array; detours: Uint32Array } {
  const out = new Uint32Array(n * degree).fill(POISON);
  const detours = new Uint32Array(n * kin).fill(POISON);
  cagraPrune(knn, 0, knn, 0, n, n, kin, degree, 0, n, true, true, detours, out, 0);
  return { out, detours };
}

function firstDifference(got: Uint32Array, want: Uint32Array): string | null {
  if (got.length !== want.length) return `length ${got.length}, want ${want.length}`;
  for (let i = 0; i < want.length; i++) if (got[i] !== want[i]) return `element ${i}: got ${got[i]}, want ${want[i]}`;
  return null;
}

describe('cagra-prune pipeline constants', () => {
  it('KIN_CAP: the next power of two >= kin, from 16 to CAGRA_MAX_KIN', () => {
    expect([1, 16, 17, 64, 100, 129, CAGRA_MAX_KIN].map(kinBucket)).toEqual([16, 16, 32, 64, 128, 256, 256]);
    expect(() => kinBucket(CAGRA_MAX_KIN + 1)).toThrow(/kin must be/);
    expect(specialize('cagra-prune', { KIN_CAP: 128 }).code).toMatch(/^const KIN_CAP: u32 = 128u;/m);
  });

  it('the shaders pad with PAD_ID, and cagra-merge holds rows of CAGRA_MAX_DEGREE', () => {
    const wgslConst = (shader: string, name: string) => {
      const m = new RegExp(`^const ${name}: u32 = (0x[0-9a-f]+|\\d+)u;`, 'm').exec(shaderText(shader));
      return m ? Number(m[1]) : null;
    };
    expect(wgslConst('cagra-prune', 'PAD_ID')).toBe(PAD_ID);
    expect(wgslConst('cagra-merge', 'PAD_ID')).toBe(PAD_ID);
    expect(wgslConst('cagra-merge', 'DEG_CAP')).toBe(CAGRA_MAX_DEGREE);
    const never = null as unknown as GPUBuffer;
    const kernels = null as unknown as Parameters<typeof encodeCagraMerge>[0];
    const merge = { graph: never, offsets: never, edges: never, out: never, out0: 0, n: 1, node0: 0, nodes: 1 };
    expect(() => encodeCagraMerge(kernels, { ...merge, degree: CAGRA_MAX_DEGREE + 1 })).toThrow(/degree must be/);
  });
});

describe.skipIf(!gpu)('gpu cagra-prune vs cpu twin', () => {
  // [n, kin, degree, graph]: padding (n - 1 < kin), odd kin, degree 1 and degree = kin, every
  // KIN_CAP from 16 to 256, rows with repeats, self edges and ids past n.
  const shapes: [number, number, number, Kind][] = [
    [1, 8, 4, 'geometric'],
    [20, 32, 16, 'geometric'],
    [37, 9, 3, 'random'],
    [100, 16, 1, 'clustered'],
    [120, 16, 16, 'geometric'],
    [90, 24, 12, 'dirty'],
    [200, 64, 32, 'geometric'],
    [150, 100, 50, 'clustered'],
    [130, 200, 64, 'random'],
  ];
  let seed = 1;
  for (const [n, kin, degree, kind] of shapes) {
    const caseSeed = seed++;
    it(`${kind} n=${n} kin=${kin} degree=${degree}: the twin's edges and detours, element for element`, async () => {
      const knn = graph(kind, n, kin, caseSeed);
      const want = twin(knn, n, kin, degree);
      const h = new KernelHarness(gpu!);
      try {
        const kb = h.upload(knn);
        const out = h.output(n * degree, POISON);
        const detours = h.output(n * kin, POISON);
        encodeCagraPrune(h.kernels, { a: kb, a0: 0, d: kb, d0: 0, drows: n, detours, out, out0: 0, n, kin, degree, node0: 0, nodes: n, first: true, last: true });
        await h.run();
        expect(firstDifference(await h.readU32(detours, n * kin), want.detours)).toBeNull();
        expect(firstDifference(await h.readU32(out, n * degree), want.out)).toBeNull();
      } finally {
        h.dispose();
      }
    });
  }

  it('tiles of nodes, each over chunks of detour rows (a lowered binding limit), write only their rows', async () => {
    const [n, kin, degree] = [150, 32, 16];
    const knn = graph('geometric', n, kin, 77);
    const want = twin(knn, n, kin, degree);
    const chunk = 40; // the graph's rows one binding holds
    const h = new KernelHarness(gpu!);
    try {
      const chunks = Array.from({ length: Math.ceil(n / chunk) }, (_, c) => ({
        d0: c * chunk,
        drows: Math.min(chunk, n - c * chunk),
        buf: h.upload(knn.slice(c * chunk * kin, Math.min(n, (c + 1) * chunk) * kin)),
      }));
      // The output of rows 10 .. n - 1 only, from row 0 of out: out0 = node0 - 10.
      const out = h.output((n - 10) * degree + 5, POISON);
      const tiles: { node0: number; nodes: number; detours: GPUBuffer }[] = [];
      for (const c of chunks) {
        // Tiles within chunk c (its own rows from there: a0 = node0 - c.d0), uneven sizes.
        for (let node0 = Math.max(10, c.d0); node0 < c.d0 + c.drows; node0 += 13) {
          const nodes = Math.min(13, c.d0 + c.drows - node0);
          const detours = h.output(nodes * kin, POISON);
          tiles.push({ node0, nodes, detours });
          chunks.forEach((dc, i) =>
            encodeCagraPrune(h.kernels, {
              a: c.buf, a0: node0 - c.d0, d: dc.buf, d0: dc.d0, drows: dc.drows, detours, out, out0: node0 - 10,
              n, kin, degree, node0, nodes, first: i === 0, last: i === chunks.length - 1,
            }),
          );
        }
      }
      await h.run();
      const got = await h.readU32(out, (n - 10) * degree + 5);
      expect(firstDifference(got.subarray(0, (n - 10) * degree), want.out.subarray(10 * degree))).toBeNull();
      expect(Array.from(got.subarray((n - 10) * degree))).toEqual(new Array(5).fill(POISON));
      for (const t of tiles) {
        expect(firstDifference(await h.readU32(t.detours, t.nodes * kin), want.detours.subarray(t.node0 * kin, (t.node0 + t.nodes) * kin))).toBeNull();
      }
    } finally {
      h.dispose();
    }
  });

  it('folds a tile of more workgroups than a dimension allows into (x, y)', () =>
    withWorkgroupLimit(gpu!, 7, async (h, dispatch) => {
      const [n, kin, degree] = [60, 16, 8];
      const knn = graph('random', n, kin, 5);
      const want = twin(knn, n, kin, degree);
      const kb = h.upload(knn);
      const out = h.output(n * degree, POISON);
      const detours = h.output(n * kin, POISON);
      encodeCagraPrune(h.kernels, { a: kb, a0: 0, d: kb, d0: 0, drows: n, detours, out, out0: 0, n, kin, degree, node0: 0, nodes: n, first: true, last: true });
      await h.run();
      expect(dispatch.mock.calls.map(([, , , , groups]) => groups)).toEqual([[7, 9]]);
      expect(firstDifference(await h.readU32(out, n * degree), want.out)).toBeNull();
      expect(want.out.includes(PAD_ID)).toBe(true);
    }));
});
