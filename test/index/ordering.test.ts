/**
 * Operations on one index run in call order on every backend (src/indexes/operation-queue.ts): a search
 * sees every add or reset called before it, awaited or not; concurrent adds all land, in call
 * order; a failed operation does not block the next.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import { cpuBackend } from '../helpers/cpu.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { loadIndex } from '../../src/indexes/load-index.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { OperationQueue } from '../../src/indexes/operation-queue.js';
import { randomSmallInts } from '../../src/common/random.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);
const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-order-'));

const d = 8;
/** Three blocks of distinct rows (small integers with the row number in column 0). */
const blocks = [0, 1, 2].map((b) => {
  const x = randomSmallInts(40 * d, 100 + b, 6);
  for (let i = 0; i < 40; i++) x[i * d] = 100 * b + i;
  return x;
});
const all = new Float32Array(120 * d);
blocks.forEach((x, b) => all.set(x, b * 40 * d));

type Kind = 'Flat' | 'IVF';

/** An index; the IVF one is trained on `all` without awaiting, so its training is queued too. */
function make(backend: Backend, kind: Kind): FlatIndex | IvfFlatIndex {
  if (kind === 'Flat') return new FlatIndex(backend, { dim: d });
  const index = new IvfFlatIndex(backend, { dim: d, nlist: 4, nprobe: 4 });
  void index.train(all);
  return index;
}

/** Expects each of `rows` (row r of `x` at id `id0 + r`) to find itself first, at distance 0. */
async function expectSelfFound(index: FlatIndex | IvfFlatIndex, x: Float32Array, id0: number): Promise<void> {
  const n = x.length / d;
  const r = await index.search(x, 1);
  expect(Array.from(r.labels)).toEqual(Array.from({ length: n }, (_, i) => id0 + i));
  expect(Array.from(r.distances)).toEqual(new Array(n).fill(0));
}

const backends: [string, Backend | null][] = [
  ['cpu', cpuBackend()],
  ['webgpu', gpu],
];

describe('operations in call order', () => {
  for (const [name, backend] of backends) {
    for (const kind of ['Flat', 'IVF'] as Kind[]) {
      const label = `${name} ${kind}`;

      it.skipIf(!backend)(`${label}: a search sees an add that was not awaited`, async () => {
        const index = make(backend!, kind);
        void index.add(blocks[0]);
        await expectSelfFound(index, blocks[0], 0);
        expect(index.ntotal).toBe(40);
      });

      it.skipIf(!backend)(`${label}: concurrent adds all land, in call order, and save keeps them`, async () => {
        const index = make(backend!, kind);
        await Promise.all(blocks.map((x) => index.add(x)));
        expect(index.ntotal).toBe(120);
        await expectSelfFound(index, all, 0);
        const path = join(dir, `${name}-${kind}-concurrent.idx`);
        await index.save(path);
        const loaded = await loadIndex(backend!, path);
        expect(loaded.ntotal).toBe(120);
        await expectSelfFound(loaded, all, 0);
      });

      it.skipIf(!backend)(`${label}: add, reset, add, search, none awaited: the search sees the second add only`, async () => {
        const index = make(backend!, kind);
        void index.add(blocks[0]);
        void index.reset();
        void index.add(blocks[1]);
        await expectSelfFound(index, blocks[1], 0);
        expect(index.ntotal).toBe(40);
      });

      it.skipIf(!backend)(`${label}: each search sees exactly the adds called before it`, async () => {
        const index = make(backend!, kind);
        void index.add(blocks[0]);
        const first = index.search(blocks[1], 1);
        void index.add(blocks[1]);
        const second = index.search(blocks[1], 1);
        // Before block 1 was added, its rows find block-0 rows (ids < 40) at a positive distance.
        const r1 = await first;
        expect(Math.max(...r1.labels)).toBeLessThan(40);
        expect(Math.min(...r1.distances)).toBeGreaterThan(0);
        const r2 = await second;
        expect(Array.from(r2.labels)).toEqual(Array.from({ length: 40 }, (_, i) => 40 + i));
      });

      it.skipIf(!backend)(`${label}: the caller may reuse its buffer as soon as add or search returns`, async () => {
        const index = make(backend!, kind);
        const buf = blocks[0].slice();
        const added = index.add(buf);
        buf.fill(1000);
        const query = blocks[0].slice(0, 3 * d);
        const searched = index.search(query, 1);
        query.fill(-1000);
        await added;
        expect(Array.from((await searched).labels)).toEqual([0, 1, 2]);
        await expectSelfFound(index, blocks[0], 0);
      });
    }

    it.skipIf(!backend)(`${name}: after dispose every call rejects, and what was called before it still runs`, async () => {
      for (const kind of ['Flat', 'IVF'] as Kind[]) {
        const index = make(backend!, kind);
        const added = index.add(blocks[0]);
        const searched = index.search(blocks[0], 1);
        const disposed = index.dispose();
        await added;
        expect(Array.from((await searched).labels)).toEqual(Array.from({ length: 40 }, (_, i) => i));
        await disposed;
        await index.dispose(); // twice is fine
        const cls = kind === 'Flat' ? 'FlatIndex' : 'IvfFlatIndex';
        await expect(index.search(blocks[0], 1)).rejects.toThrow(`${cls}.search: the index was disposed`);
        await expect(index.add(blocks[0])).rejects.toThrow(`${cls}.add: the index was disposed`);
        await expect(index.reset()).rejects.toThrow(`${cls}.reset: the index was disposed`);
      }
    });

    it.skipIf(!backend)(`${name}: IVF save keeps the nprobe of the moment it was called`, async () => {
      const index = make(backend!, 'IVF') as IvfFlatIndex;
      void index.add(blocks[0]);
      index.nprobe = 2;
      const path = join(dir, `${name}-nprobe.idx`);
      const saved = index.save(path);
      index.nprobe = 3;
      await saved;
      expect(((await loadIndex(backend!, path)) as IvfFlatIndex).nprobe).toBe(2);
    });

    it.skipIf(!backend)(`${name}: a failed operation rejects alone and the queue goes on`, async () => {
      const index = new IvfFlatIndex(backend!, { dim: d, nlist: 4, nprobe: 4 });
      const early = index.add(blocks[0]); // not trained yet: rejects from the queue
      void index.train(all);
      void index.add(blocks[1]);
      await expect(early).rejects.toThrow(/not trained/);
      await expectSelfFound(index, blocks[1], 0);
    });
  }
});

describe('OperationQueue', () => {
  /** A promise and the function that resolves it. */
  function gate(): { wait: Promise<void>; open: () => void } {
    let open!: () => void;
    const wait = new Promise<void>((r) => (open = r));
    return { wait, open };
  }

  it('lets searches overlap each other but not a mutation', async () => {
    const q = new OperationQueue('Test');
    const log: string[] = [];
    const g1 = gate();
    const g2 = gate();
    const s1 = q.search(async () => {
      log.push('s1 start');
      await g1.wait;
      log.push('s1 end');
    });
    const s2 = q.search(async () => {
      log.push('s2 start');
      await g2.wait;
      log.push('s2 end');
    });
    const m = q.mutate(async () => void log.push('m'));
    const s3 = q.search(async () => void log.push('s3'));
    await new Promise((r) => setTimeout(r, 10));
    // Both searches started; the mutation waits for both, the last search for the mutation.
    expect(log).toEqual(['s1 start', 's2 start']);
    g2.open();
    await s2;
    expect(log).toEqual(['s1 start', 's2 start', 's2 end']);
    g1.open();
    await Promise.all([s1, m, s3]);
    expect(log).toEqual(['s1 start', 's2 start', 's2 end', 's1 end', 'm', 's3']);
  });

  it('runs mutations one at a time in call order, past a failure', async () => {
    const q = new OperationQueue('Test');
    const log: number[] = [];
    const runs = [0, 1, 2, 3].map((i) =>
      q.mutate(async () => {
        await new Promise((r) => setTimeout(r, 5 * (4 - i)));
        log.push(i);
        if (i === 1) throw new Error('boom');
      }),
    );
    await expect(runs[1]).rejects.toThrow('boom');
    await Promise.all([runs[0], runs[2], runs[3]]);
    expect(log).toEqual([0, 1, 2, 3]);
  });
});
