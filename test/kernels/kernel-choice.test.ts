import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createBackend } from '../../src/backend/create-backend.js';
import type { AdapterSummary } from '../../src/gpu/context.js';
import { GpuDevice } from '../../src/gpu/gpu-device.js';
import { type GemmChoice, autoCandidates, chooseGemmVariant, gemmCacheKey, gemmShaderHash } from '../../src/gpu/kernel-choice.js';
import { gemmCacheDir } from '../../src/platform/platform.js';
import { gemmVariants } from '../../src/gpu/kernels/gemm-scores.js';
import type { GemmVariant } from '../../src/gpu/kernels/gemm-variant.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);

const ADAPTER: AdapterSummary = {
  vendor: 'acme', architecture: 'rdna9', device: 'x1', description: 'ACME X1 (driver 1.2)', isFallbackAdapter: false, backend: 'vulkan',
};
const ALL: GemmVariant[] = ['subgroup', 'portable', 'tiled'];

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-choice-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A measurement that returns `ms` and counts its calls. */
function fakeMeasure(ms: Partial<Record<GemmVariant, number>>): { calls: GemmVariant[][]; measure: (v: GemmVariant[]) => Promise<Partial<Record<GemmVariant, number>>> } {
  const calls: GemmVariant[][] = [];
  return { calls, measure: async (v) => (calls.push(v), ms) };
}

function cacheJson(): { version: number; adapters: Record<string, { variant: string; shaderHash: string; ms: Record<string, number> }> } {
  return JSON.parse(readFileSync(join(dir, 'gemm-variant.json'), 'utf8'));
}

describe('gemm-scores variant choice and its cache', () => {
  it('a miss measures every variant, picks the fastest and stores it with the times; a hit reads it without measuring', async () => {
    const first = fakeMeasure({ subgroup: 5, portable: 9, tiled: 2 });
    const a = await chooseGemmVariant(ADAPTER, ALL, 'auto', first.measure, dir);
    expect(first.calls).toEqual([ALL]);
    expect(a).toEqual({ variant: 'tiled', source: 'measured', ms: { subgroup: 5, portable: 9, tiled: 2 }, cacheFile: join(dir, 'gemm-variant.json') });
    const entries = Object.values(cacheJson().adapters);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ variant: 'tiled', shaderHash: gemmShaderHash(ALL), ms: { subgroup: 5, portable: 9, tiled: 2 } });
    expect(readdirSync(dir), 'the temporary file is renamed, not left behind').toEqual(['gemm-variant.json']);

    const second = fakeMeasure({ subgroup: 1, portable: 1, tiled: 9 });
    const b = await chooseGemmVariant(ADAPTER, ALL, 'auto', second.measure, dir);
    expect(second.calls).toEqual([]);
    expect(b).toEqual({ ...a, source: 'cache' });
  });

  it('keys the cache by adapter: another adapter is measured and stored beside the first', async () => {
    await chooseGemmVariant(ADAPTER, ALL, 'auto', fakeMeasure({ subgroup: 1, portable: 2, tiled: 3 }).measure, dir);
    const other = { ...ADAPTER, description: 'ACME X1 (driver 1.3)' };
    const m = fakeMeasure({ portable: 4, tiled: 3 });
    expect((await chooseGemmVariant(other, ['portable', 'tiled'], 'auto', m.measure, dir)).variant).toBe('tiled');
    expect(m.calls).toHaveLength(1);
    expect(Object.values(cacheJson().adapters).map((e) => e.variant).sort()).toEqual(['subgroup', 'tiled']);
  });

  it('re-measures when a shader changed (another hash), when the file is corrupt, and when the entry is not a variant offered', async () => {
    await chooseGemmVariant(ADAPTER, ALL, 'auto', fakeMeasure({ subgroup: 1, portable: 2, tiled: 3 }).measure, dir);
    const file = join(dir, 'gemm-variant.json');
    const cache = cacheJson();
    for (const e of Object.values(cache.adapters)) e.shaderHash = 'an older kernel';
    writeFileSync(file, JSON.stringify(cache));
    const changed = fakeMeasure({ subgroup: 3, portable: 1, tiled: 2 });
    expect(await chooseGemmVariant(ADAPTER, ALL, 'auto', changed.measure, dir)).toMatchObject({ variant: 'portable', source: 'measured' });
    expect(changed.calls).toHaveLength(1);

    const key = JSON.stringify(gemmCacheKey(ADAPTER));
    const hash = JSON.stringify(gemmShaderHash(ALL));
    const corrupts = [
      '{"version": 1, "adapters": {', '', 'null', `{"version": 99, "adapters": {${key}: {"shaderHash": ${hash}, "variant": "tiled", "ms": {}}}}`,
      `{"version": 1, "adapters": {${key}: 3}}`, `{"version": 1, "adapters": {${key}: {"shaderHash": ${hash}, "variant": "fastest", "ms": {}}}}`,
      `{"version": 1, "adapters": {${key}: {"shaderHash": ${hash}, "variant": "tiled", "ms": {"tiled": "fast"}}}}`,
    ];
    for (const corrupt of corrupts) {
      writeFileSync(file, corrupt);
      const again = fakeMeasure({ subgroup: 1, portable: 2, tiled: 3 });
      expect(await chooseGemmVariant(ADAPTER, ALL, 'auto', again.measure, dir), `cache file ${JSON.stringify(corrupt)}`).toMatchObject({ variant: 'subgroup', source: 'measured' });
      expect(again.calls).toHaveLength(1);
      expect(Object.values(cacheJson().adapters)[0].variant, 'the corrupt file is replaced').toBe('subgroup');
    }

    // Cached as subgroup, but this device offers no subgroups (the variant list differs too).
    const noSub = fakeMeasure({ portable: 2, tiled: 1 });
    expect((await chooseGemmVariant(ADAPTER, ['portable', 'tiled'], 'auto', noSub.measure, dir)).variant).toBe('tiled');
    expect(noSub.calls).toHaveLength(1);
  });

  it('a variant the measurement left out (it failed) is never chosen; none at all is an error', async () => {
    expect((await chooseGemmVariant(ADAPTER, ALL, 'auto', fakeMeasure({ portable: 7 }).measure, dir)).variant).toBe('portable');
    rmSync(join(dir, 'gemm-variant.json'));
    await expect(chooseGemmVariant(ADAPTER, ALL, 'auto', fakeMeasure({}).measure, dir)).rejects.toThrow('gemm-scores: no variant could be timed on this adapter (tried subgroup, portable, tiled)');
  });

  it('on a CPU-emulated adapter auto leaves tiled out of the measurement; an option can still name it', async () => {
    const soft = { ...ADAPTER, isFallbackAdapter: true };
    const m = fakeMeasure({ subgroup: 4, portable: 3, tiled: 1 });
    expect(await chooseGemmVariant(soft, ALL, 'auto', m.measure, dir)).toMatchObject({ variant: 'portable', source: 'measured', ms: { subgroup: 4, portable: 3 } });
    expect(m.calls).toEqual([['subgroup', 'portable']]);
    expect(await chooseGemmVariant(soft, ALL, 'auto', m.measure, dir)).toMatchObject({ variant: 'portable', source: 'cache' });
    expect(await chooseGemmVariant(soft, ALL, 'tiled', m.measure, dir)).toMatchObject({ variant: 'tiled', source: 'option' });
    // An adapter that offers only tiled measures it.
    rmSync(join(dir, 'gemm-variant.json'));
    expect(await chooseGemmVariant(soft, ['tiled'], 'auto', m.measure, dir)).toMatchObject({ variant: 'tiled', source: 'measured' });
    expect(m.calls.at(-1)).toEqual(['tiled']);
  });

  it('an option naming a variant wins: nothing is measured, read or written', async () => {
    await chooseGemmVariant(ADAPTER, ALL, 'auto', fakeMeasure({ subgroup: 1, portable: 2, tiled: 3 }).measure, dir);
    const before = readFileSync(join(dir, 'gemm-variant.json'), 'utf8');
    const m = fakeMeasure({ subgroup: 1, portable: 2, tiled: 3 });
    expect(await chooseGemmVariant(ADAPTER, ALL, 'tiled', m.measure, dir)).toEqual({ variant: 'tiled', source: 'option', ms: {}, cacheFile: null });
    expect(m.calls).toEqual([]);
    expect(readFileSync(join(dir, 'gemm-variant.json'), 'utf8')).toBe(before);
    await expect(chooseGemmVariant(ADAPTER, ['portable', 'tiled'], 'subgroup', m.measure, dir)).rejects.toThrow(
      'gemmVariant subgroup cannot run on this adapter (it needs subgroups of at least 8 lanes); expected auto or one of portable, tiled',
    );
    await expect(chooseGemmVariant(ADAPTER, ALL, 'fast' as never, m.measure, dir)).rejects.toThrow('gemmVariant must be auto, subgroup, portable or tiled; got fast');
  });

  it('a directory that cannot be written is not an error: the choice says why it was not stored', async () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    const m = fakeMeasure({ subgroup: 2, portable: 1, tiled: 3 });
    const c: GemmChoice = await chooseGemmVariant(ADAPTER, ALL, 'auto', m.measure, join(file, 'cache'));
    expect(c).toMatchObject({ variant: 'portable', source: 'measured' });
    expect(c.cacheError).toMatch(/ENOTDIR/);
  });

  it('lives in $WEBGPU_KNN_CACHE_DIR, else $XDG_CACHE_HOME/webgpu-knn, else ~/.cache/webgpu-knn', () => {
    expect(gemmCacheDir({ WEBGPU_KNN_CACHE_DIR: '/a', XDG_CACHE_HOME: '/b', HOME: '/h' })).toBe('/a');
    expect(gemmCacheDir({ XDG_CACHE_HOME: '/b', HOME: '/h' })).toBe(join('/b', 'webgpu-knn'));
    expect(gemmCacheDir({})).toMatch(/[/\\]\.cache[/\\]webgpu-knn$/);
  });

  it('createBackend rejects a bad gemmVariant before looking for an adapter', async () => {
    await expect(createBackend({ backend: 'cpu', gemmVariant: 'fast' as never })).rejects.toThrow('gemmVariant must be auto, subgroup, portable or tiled; got fast');
  });
});

describe.skipIf(!gpu)('gpu device: the measured choice', () => {
  it('a new device measures the variants auto considers on its adapter and stores the choice; the next reads it; an option wins', async () => {
    const saved = process.env.WEBGPU_KNN_CACHE_DIR;
    process.env.WEBGPU_KNN_CACHE_DIR = dir;
    const opened: GpuDevice[] = [];
    try {
      const create = async (options = {}): Promise<GpuDevice> => {
        const d = await GpuDevice.create(options);
        opened.push(d!);
        return d!;
      };
      const first = await create();
      console.log(`[gpu] gemm-scores measured (ms per tile): ${JSON.stringify(first.gemm.ms)} -> ${first.gemm.variant}`);
      expect(first.gemm.source).toBe('measured');
      expect(Object.keys(first.gemm.ms)).toEqual(autoCandidates(first.ctx.adapterInfo, gemmVariants(first.ctx)));
      expect(first.gemm.cacheError).toBeUndefined();
      for (const ms of Object.values(first.gemm.ms)) expect(ms).toBeGreaterThan(0);
      expect(first.kernels.gemmVariant).toBe(first.gemm.variant);
      expect(first.description).toContain(`gemm-scores ${first.gemm.variant}, measured`);
      // The measurement's buffers are its own: the device's pool starts empty.
      expect(first.poolStats()).toMatchObject({ created: 0, liveBytes: 0 });

      const second = await create();
      expect(second.gemm).toEqual({ ...first.gemm, source: 'cache' });

      const forced = await create({ gemmVariant: 'tiled' });
      expect(forced.gemm.source).toBe('option');
      expect(forced.kernels.gemmVariant).toBe('tiled');
    } finally {
      for (const d of opened) d.dispose();
      if (saved === undefined) delete process.env.WEBGPU_KNN_CACHE_DIR;
      else process.env.WEBGPU_KNN_CACHE_DIR = saved;
    }
  });
});
