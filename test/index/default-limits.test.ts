/**
 * WebGPU's default limits: a device made with `adapter.requestDevice()` and nothing asked for (as
 * a page that hands its own device to createBackend({ device }) typically makes) binds at most 8
 * storage buffers a shader stage and 16 KiB of workgroup memory. Every kernel must fit them:
 * ivf-scan once bound 9, and IVF search on such a device failed with a pipeline validation error.
 * On that device, Flat (both scoring kernels that need no subgroups, heap and radix selection),
 * IVF (both strategies, float and half rows, filtered) and k-means give the CPU backend's results.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { KMeans } from '../../src/codecs/kmeans.js';
import { platform } from '../../src/platform/platform.js';
import { clusteredFloats } from '../../src/common/random.js';
import type { GpuDeviceOptions } from '../../src/gpu/gpu-device.js';
import { shaderText } from '../../src/gpu/shaders.js';
import { cpuBackend } from '../helpers/cpu.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

/** WebGPU's maxStorageBuffersPerShaderStage default: what every device allows. */
const DEFAULT_STORAGE_BUFFERS = 8;

const SHADERS = join(import.meta.dirname, '..', '..', 'shaders');

describe('storage buffers per kernel', () => {
  // As compiled: with the files each one includes.
  it.each(readdirSync(SHADERS).filter((f) => f.endsWith('.wgsl')))(`%s binds at most ${DEFAULT_STORAGE_BUFFERS}`, (file) => {
    const declared = shaderText(file.replace(/\.wgsl$/, '')).match(/^\s*@group\(0\)\s*@binding\(\d+\)\s*var<storage/gm) ?? [];
    expect(declared.length).toBeLessThanOrEqual(DEFAULT_STORAGE_BUFFERS);
  });

  it('counts what the includes bring: gemm-scores binds its io file\'s buffers', () => {
    expect(shaderText('gemm-scores').match(/var<storage/g)!.length).toBeGreaterThanOrEqual(4);
  });
});

// The instance must stay referenced while its device is in use (see GpuContext's `gpu`).
let instance: GPU | null = null;

/** A backend on a device with WebGPU's default limits (the adapter's own are higher), or null without an adapter. */
async function defaultLimitsBackend(options: GpuDeviceOptions): Promise<Backend | null> {
  instance ??= (await platform.requestGpu([])).gpu;
  const adapter = await instance.requestAdapter();
  if (!adapter) return gpuBackend(options); // no adapter: skips, or fails under WEBGPU_REQUIRED
  const device = await adapter.requestDevice();
  return gpuBackend({ ...options, device });
}

const scan = await defaultLimitsBackend({ ivfStrategy: 'scan', ivfHalfScan: false });
const scanHalf = await defaultLimitsBackend({ ivfStrategy: 'scan', ivfHalfScan: true });
const gemm = await defaultLimitsBackend({ ivfStrategy: 'gemm' });
// The scoring kernels without subgroups (an adopted device has none unless asked for).
const tiled = await defaultLimitsBackend({ gemmVariant: 'tiled' });
const portable = await defaultLimitsBackend({ gemmVariant: 'portable' });
const all = [scan, scanHalf, gemm, tiled, portable];
afterAll(() => {
  disposeGpuBackends();
  // The adopted devices are ours to destroy (the backends leave them).
  for (const b of all) (b?.device as { ctx?: { device: GPUDevice } } | undefined)?.ctx?.device.destroy();
});

describe.skipIf(all.some((b) => !b))('searches on a device with the default limits', () => {
  const [n, d, nq, k, nlist] = [3000, 24, 40, 10, 30];
  const x = clusteredFloats(n, d, 12, 5, 0.3);
  const xq = clusteredFloats(nq, d, 12, 6, 0.3);
  // Centroids given, not trained: both backends index the same lists.
  const centroids = x.slice(0, nlist * d);
  const even = (id: number) => id % 2 === 0;

  async function ivfResults(backend: Backend) {
    const ivf = new IvfFlatIndex(backend, { dim: d, nlist, nprobe: 4 });
    await ivf.setCentroids(centroids);
    await ivf.add(x);
    return [await ivf.search(xq, k), await ivf.search(xq, k, { filter: even, filterMode: 'pre' })];
  }

  it('the device has the default limit', () => {
    const limits = (scan!.device as { ctx?: { device: GPUDevice } }).ctx!.device.limits;
    expect(limits.maxStorageBuffersPerShaderStage).toBe(DEFAULT_STORAGE_BUFFERS);
  });

  // k = 300: the candidates (512) are past the heaps' largest k, so select-radix selects them.
  for (const [name, backend] of [['tiled', tiled], ['portable', portable]] as const) {
    for (const kf of [k, 300]) {
      it(`Flat search, gemm-scores ${name}, k = ${kf}, equals the CPU backend`, async () => {
        const [want, got] = await Promise.all([cpuBackend(), backend!].map(async (b) => {
          const flat = new FlatIndex(b, { dim: d });
          await flat.add(x);
          return flat.search(xq, kf);
        }));
        expect(Array.from(got.labels)).toEqual(Array.from(want.labels));
        expect(Array.from(got.distances)).toEqual(Array.from(want.distances));
      });
    }
  }

  it('k-means gives the CPU backend\'s centroids, bit for bit', async () => {
    const train = (b: Backend) => new KMeans(b, { dim: d }).train(x, { k: nlist, niter: 4, seed: 2 });
    const [want, got] = [await train(cpuBackend({ kmeansBounds: false })), await train(scan!)];
    expect(Array.from(got.centroids)).toEqual(Array.from(want.centroids));
  });

  for (const [name, backend] of [['scan', scan], ['scan on half rows', scanHalf], ['gemm', gemm]] as const) {
    it(`IVF search (${name}), plain and filtered, equals the CPU backend`, async () => {
      const want = await ivfResults(cpuBackend());
      const got = await ivfResults(backend!);
      for (let i = 0; i < 2; i++) {
        expect(Array.from(got[i].labels), `search ${i}`).toEqual(Array.from(want[i].labels));
        expect(Array.from(got[i].distances), `search ${i}`).toEqual(Array.from(want[i].distances));
      }
      expect(Array.from(got[1].labels).every((id) => id < 0 || even(id))).toBe(true);
    });
  }
});
