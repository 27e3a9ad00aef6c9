/**
 * The gpu.js device against the CPU twins, in Node: gpu.js's own choice of mode here (WebAssembly,
 * or headless-gl where npm `gl` built) and its plain-JS `cpu` mode. The browser suite
 * (test/browser) runs the same device on WebGL2.
 */
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import { createBackend } from '../../src/backend/create-backend.js';
import { gemmScores } from '../../src/cpu/gemm-scores.js';
import { norms } from '../../src/cpu/norms.js';
import { type Device, padRows, paddedDim } from '../../src/device.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { GPUJS_VERSION, GpujsDevice, type GpujsMode } from '../../src/gpujs/gpujs-device.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import type { KernelMetric } from '../../src/kernel-facts.js';
import { randomFloats, randomSmallInts } from '../../src/common/random.js';
import type { Metric } from '../../src/types.js';
import { IP_ATOL, L2_ATOL_SCALE, RTOL, close, expectIdentical, expectTieAwareEqual } from '../helpers/compare.js';
import { cpuBackend } from '../helpers/cpu.js';
import { SCORE_TILE_SHAPES } from '../helpers/score-tiles.js';

const MODES: GpujsMode[] = ['auto', 'cpu'];
const devices = new Map<GpujsMode, GpujsDevice>();
for (const mode of MODES) devices.set(mode, await GpujsDevice.create({ gpujsMode: mode }));
for (const [mode, d] of devices) console.log(`[gpujs] mode ${mode}: ${d.description}`);
afterAll(() => {
  for (const d of devices.values()) d.dispose();
});

function upload(device: Device, data: Float32Array): ReturnType<Device['buffer']> {
  const b = device.buffer('in', data.byteLength);
  device.upload(b, 0, data);
  return b;
}

/** Scores one tile (shape as SCORE_TILE_SHAPES) on `device` and with the twin: got and want, rows x ldc, NaN outside the tile. */
async function scoreTile(device: Device, shape: readonly number[], metric: KernelMetric, xq: Float32Array, xb: Float32Array) {
  const [nq, nb, d, q0, rows, col0, cols, ldc] = shape;
  const dpad = paddedDim(d);
  const xn = norms(xb, nb, d);
  const scores = upload(device, new Float32Array(rows * ldc).fill(NaN));
  device.dispatch({
    kernel: 'gemm-scores', metric, xq: upload(device, padRows(xq, nq, d, dpad)), xb: upload(device, padRows(xb, nb, d, dpad)),
    xnorm: upload(device, xn), scores, q0, rows, col0, cols, dpad, ldc,
  });
  const [got] = await device.read([{ buffer: scores, offset: 0, bytes: rows * ldc * 4 }]);
  const want = new Float32Array(rows * ldc).fill(NaN);
  gemmScores(metric, xq, q0, rows, xb, xn, col0, cols, d, want, ldc);
  return { got: new Float32Array(got), want, xn };
}

describe('gpujs device', () => {
  it(`is gpu.js ${GPUJS_VERSION}, as package.json pins it, and says which mode runs`, () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { devDependencies: Record<string, string> };
    expect(pkg.devDependencies['gpu.js']).toBe(GPUJS_VERSION);
    expect(devices.get('cpu')!.gpujsMode).toBe('cpu');
    for (const d of devices.values()) {
      expect(d.kind).toBe('gpujs');
      expect(d.description).toContain(`gpu.js ${GPUJS_VERSION}, ${d.gpujsMode}`);
    }
  });

  for (const [mode, device] of devices) {
    // gpu.js's plain-JS mode sums in float64 in the twin's order: its float scores are the twin's
    // bit for bit. WebAssembly and GL sum in float32.
    const exactFloats = device.gpujsMode === 'cpu';
    for (const shape of SCORE_TILE_SHAPES) {
      const [nq, nb, d, , rows, , cols, ldc] = shape;
      for (const metric of ['l2', 'ip'] as KernelMetric[]) {
        it(`${mode}: gemm-scores nq=${nq} nb=${nb} d=${d} tile ${rows}x${cols} ${metric} equals the twin (small integers exactly, floats within rounding)`, async () => {
          for (const kind of ['int', 'float'] as const) {
            const gen = kind === 'int' ? randomSmallInts : randomFloats;
            const { got, want, xn } = await scoreTile(device, shape, metric, gen(nq * d, 11 + nq), gen(nb * d, 13 + nb));
            const [, , , , , col0] = shape;
            // One message for the first difference (an expect per element is slow).
            let bad = '';
            for (let r = 0; r < rows && !bad; r++) {
              for (let c = 0; c < ldc && !bad; c++) {
                const g = got[r * ldc + c];
                const w = want[r * ldc + c];
                // As the WebGPU suite: the expansion's terms are about ||x||^2 and 2|q.x|.
                const atol = metric === 'l2' ? L2_ATOL_SCALE * (xn[col0 + c] + 2 * d) : IP_ATOL * d;
                const ok = c >= cols ? Number.isNaN(g) : kind === 'int' || exactFloats ? Object.is(g, w) : close(g, w, atol, RTOL);
                if (!ok) bad = `${kind} (${r}, ${c}): got ${g}, want ${c >= cols ? 'unwritten (outside the tile)' : w}`;
              }
            }
            expect(bad).toBe('');
          }
        });
      }
    }

    it(`${mode}: norms with row and output offsets, odd d, equal the twin`, async () => {
      for (const [n, d] of [[1, 1], [37, 5], [300, 128], [1000, 17]]) {
        const dpad = paddedDim(d);
        for (const kind of ['int', 'float'] as const) {
          const x = (kind === 'int' ? randomSmallInts : randomFloats)(n * d, n + d);
          const out = upload(device, new Float32Array(n + 3).fill(NaN));
          const row0 = Math.min(2, n - 1);
          device.dispatch({ kernel: 'norms', x: upload(device, padRows(x, n, d, dpad)), out, n: n - row0, dpad, row0, out0: 3 });
          const got = new Float32Array((await device.read([{ buffer: out, offset: 0, bytes: (n + 3) * 4 }]))[0]);
          const want = norms(x.subarray(row0 * d), n - row0, d);
          expect(got.subarray(0, 3).every(Number.isNaN), 'before out0 is not written').toBe(true);
          for (let i = 0; i < n - row0; i++) {
            if (kind === 'int' || exactFloats) expect(got[3 + i], `row ${i}`).toBe(want[i]);
            else expect(close(got[3 + i], want[i], 0, 1e-6), `row ${i}: ${got[3 + i]} vs ${want[i]}`).toBe(true);
          }
        }
      }
    });
  }
});

describe('gpujs backend: indexes against the cpu backend', () => {
  const cpu = cpuBackend();
  let gpujs: Backend;

  it('createBackend({ backend: gpujs }) builds one; auto in Node stays webgpu or cpu', async () => {
    gpujs = await createBackend({ backend: 'gpujs', tuning: { tileCols: 96, scoreTileBytes: 8192 } });
    expect(gpujs.kind).toBe('gpujs');
    expect(gpujs.description).toMatch(/^gpujs \(gpu\.js /);
    await expect(createBackend({ backend: 'gpujs', gpujsMode: 'metal' as never })).rejects.toThrow(/gpujsMode must be one of auto, webgl2, webgl, headlessgl, webasm, cpu; got metal/);
    const auto = await createBackend({ backend: 'auto', dawnFlags: ['backend=no-such-backend'], warn: () => {} });
    expect(auto.kind).toBe('cpu');
  });

  for (const metric of ['l2', 'ip'] as Metric[]) {
    it(`Flat and IVF on small integers (several tiles; IVF lists scored by GEMM) equal the cpu backend's, ${metric}`, async () => {
      const d = 11;
      const xb = randomSmallInts(700 * d, 21);
      const xq = randomSmallInts(30 * d, 22);
      const flat = async (b: Backend) => {
        const index = new FlatIndex(b, { dim: d, metric });
        await index.add(xb);
        return index.search(xq, 10);
      };
      expectIdentical(await flat(gpujs), await flat(cpu), `flat ${metric}`);
      const ivf = async (b: Backend) => {
        const index = new IvfFlatIndex(b, { dim: d, nlist: 12, metric, niter: 4, seed: 3 });
        await index.train(xb);
        await index.add(xb);
        return index;
      };
      const [g, c] = [await ivf(gpujs), await ivf(cpu)];
      expect(Array.from(g.listSizes()), 'k-means (assignment through gpu.js) trains the same lists').toEqual(Array.from(c.listSizes()));
      for (const nprobe of [1, 3, 12]) {
        expectIdentical(await g.search(xq, 10, { nprobe }), await c.search(xq, 10, { nprobe }), `ivf ${metric} nprobe ${nprobe}`);
      }
    });
  }

  it('Flat and IVF on float data agree with the cpu backend, tie-aware', async () => {
    const d = 24;
    const xb = randomFloats(600 * d, 31);
    const xq = randomFloats(20 * d, 32);
    const search = async (b: Backend) => {
      const flat = new FlatIndex(b, { dim: d });
      await flat.add(xb);
      const ivf = new IvfFlatIndex(b, { dim: d, nlist: 8, niter: 4, seed: 5 });
      await ivf.train(xb);
      await ivf.add(xb);
      return { flat: await flat.search(xq, 10), ivf: await ivf.search(xq, 10, { nprobe: 8 }) };
    };
    const [g, c] = [await search(gpujs), await search(cpu)];
    const atol = (r: number) => {
      let qn = 0;
      for (let j = 0; j < d; j++) qn += xq[r * d + j] ** 2;
      return L2_ATOL_SCALE * (qn + 4 * d);
    };
    expectTieAwareEqual(g.flat, c.flat, 20, 10, atol, 'flat');
    // IVF at nprobe = nlist is Flat, whatever k-means made of float data.
    expectTieAwareEqual(g.ivf, c.flat, 20, 10, atol, 'ivf nprobe = nlist');
    gpujs.dispose();
  });
});
