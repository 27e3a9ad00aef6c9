/**
 * A store whose add fails leaves nothing behind: the device rows, the host copy and ntotal stay as
 * they were, so ids on the device and rows on the host keep matching.
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import type { CodeStore } from '../../src/stores/code-store.js';
import { randomSmallInts } from '../../src/common/random.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

// Small chunks, so that a failed add would leave a partly filled chunk and a new one behind.
const gpu = await gpuBackend({ chunkRows: 50 });
afterAll(disposeGpuBackends);

describe('CodeStore.add that fails', () => {
  it.skipIf(!gpu)('after the device was written: rolls back, and later adds and searches are right', async () => {
    const d = 6;
    const x = randomSmallInts(200 * d, 3, 9);
    for (let i = 0; i < 200; i++) x[i * d] = i; // distinct rows
    const index = new FlatIndex(gpu!, { dim: d });
    await index.add(x.subarray(0, 70 * d));
    const store = (index as unknown as { store: CodeStore }).store;
    const proto = Object.getPrototypeOf(store) as { write: (...a: unknown[]) => Promise<void> };
    const write = proto.write;
    const spy = vi.spyOn(proto, 'write').mockImplementationOnce(async function (this: CodeStore, ...args: unknown[]) {
      await write.apply(this, args); // the rows reach the device...
      throw new Error('device lost after the write'); // ...then the add fails
    });
    await expect(index.add(x.subarray(70 * d, 130 * d))).rejects.toThrow('device lost after the write');
    spy.mockRestore();
    expect(index.ntotal).toBe(70);
    expect(store.chunks.reduce((a, c) => a + c.rows, 0)).toBe(70);
    let saved = 0;
    for await (const block of store.readRows()) saved += block.length;
    expect(saved).toBe(70 * d);
    await index.add(x.subarray(70 * d, 200 * d));
    const r = await index.search(x, 1);
    expect(Array.from(r.labels)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(Array.from(r.distances)).toEqual(new Array(200).fill(0));
  });
});
