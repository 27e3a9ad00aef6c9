import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createBackend } from '../../src/backend/create-backend.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';

import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { WebGpuUnavailableError } from '../../src/errors.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);
const NO_ADAPTER = { dawnFlags: ['backend=no-such-backend'] };

describe('createBackend', () => {
  it('rejects unknown options and bad tuning, naming them', async () => {
    await expect(createBackend({ backend: 'cpu', gpu: {} } as never)).rejects.toThrow(/unknown option gpu/);
    await expect(createBackend({ backend: 'cpu', tuning: { ivfStrategy: 'SCAN' as never } })).rejects.toThrow('tuning.ivfStrategy must be auto, scan or gemm; got SCAN');
    await expect(createBackend({ backend: 'cpu', tuning: { tileCols: 0 } })).rejects.toThrow('tuning.tileCols must be an integer >= 1; got 0');
    await expect(createBackend({ backend: 'cpu', tuning: { kmeansBounds: 'yes' as never } })).rejects.toThrow('tuning.kmeansBounds must be true or false; got yes');
    await expect(createBackend({ backend: 'cpu', tuning: { tileCol: 4 } as never })).rejects.toThrow(/unknown tuning option tileCol/);
  });

  it('cpu never touches WebGPU', async () => {
    const b = await createBackend({ backend: 'cpu' });
    expect(b.kind).toBe('cpu');
  });

  it('webgpu without an adapter throws an error that says how to get one', async () => {
    const p = createBackend({ backend: 'webgpu', ...NO_ADAPTER });
    await expect(p).rejects.toBeInstanceOf(WebGpuUnavailableError);
    await expect(createBackend({ backend: 'webgpu', ...NO_ADAPTER })).rejects.toThrow(/scripts\/setup-webgpu\.sh/);
  });

  it('auto without an adapter falls back to the cpu with a one-line warning', async () => {
    const warnings: string[] = [];
    const b = await createBackend({ backend: 'auto', ...NO_ADAPTER, warn: (m) => warnings.push(m) });
    expect(b.kind).toBe('cpu');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/using the CPU backend/);
    expect(warnings[0]).not.toMatch(/\n/);
  });

  it('rejects an unknown backend name', async () => {
    await expect(createBackend({ backend: 'metal' as 'cpu' })).rejects.toThrow(/backend must be one of auto, webgpu, gpujs, cpu; got metal/);
  });

  it.skipIf(!gpu)('auto picks webgpu when an adapter exists', async () => {
    const b = await createBackend({ backend: 'auto' });
    expect(b.kind).toBe('webgpu');
    expect(b.description).toMatch(/^webgpu \(/);
    b.dispose();
  });
});

describe.skipIf(!gpu)('WebGPU device lifetime', () => {
  it('a search after dispose fails with a clear error', async () => {
    const b = await createBackend({ backend: 'webgpu' });
    const index = new FlatIndex(b, { dim: 2 });
    await index.add(new Float32Array([1, 2]));
    b.dispose();
    await expect(index.search(new Float32Array([1, 2]), 1)).rejects.toThrow(/disposed/);
  });

  it('survives garbage collection of everything but the backend, and the process exits after dispose', () => {
    // Dawn's instance dies if the object from create() is collected while a device is in use; the
    // context holds it. Run in a child with --expose-gc against the built package.
    const child = runChild(
      `
      for (let i = 0; i < 5; i++) {
        globalThis.gc();
        await new Promise((r) => setTimeout(r, 20));
        const r = await index.search(new Float32Array([1, 2, 3, 4]), 3);
        if (r.labels[0] < 0) throw new Error('bad result');
      }
      b.dispose();
      console.log('ok');
    `,
      ['--expose-gc'],
      60_000,
    );
    expect(child.stderr.split('\n').filter((l) => /error/i.test(l))).toEqual([]);
    expect(child.signal).toBeNull();
    expect(child.status).toBe(0);
    expect(child.stdout.trim()).toBe('ok');
  });

  it('the process exits when its work is done, even without dispose', () => {
    // npm webgpu 0.3.9 kept the process alive for as long as a device existed (a silent hang);
    // 0.6 does not. Run in a child that never disposes; a hang is killed by the timeout.
    const child = runChild(
      `
      const r = await index.search(new Float32Array([1, 2, 3, 4]), 3);
      console.log(r.labels[0] >= 0 ? 'ok' : 'bad result');
    `,
      [],
      30_000,
    );
    expect(child.signal, 'killed by the timeout: the process did not exit').toBeNull();
    expect(child.status).toBe(0);
    expect(child.stdout.trim()).toBe('ok');
  });
});

/**
 * Runs `body` in a child node against the built package, after a preamble that opens a WebGPU
 * backend `b` and a FlatIndex `index` of 100 4-d vectors.
 */
function runChild(body: string, nodeArgs: string[], timeout: number): SpawnSyncReturns<string> {
  const script = `
      import { createBackend, FlatIndex } from './dist/index.js';
      const b = await createBackend({ backend: 'webgpu' });
      const index = new FlatIndex(b, { dim: 4 });
      await index.add(new Float32Array(400).map((_, i) => i % 13));
${body}`;
  const root = fileURLToPath(new URL('../../', import.meta.url));
  return spawnSync(process.execPath, [...nodeArgs, '--input-type=module', '-e', script], { cwd: root, encoding: 'utf8', timeout });
}
