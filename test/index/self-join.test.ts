import { afterAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import { cpuBackend } from '../helpers/cpu.js';
import { createBackend } from '../../src/backend/create-backend.js';

import { randomSmallInts } from '../../src/common/random.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { dedupMargin } from '../../src/common/threshold.js';

const gpu = await gpuBackend();
// Tiny tiles and pair buffer: many query tiles, each overflowing its buffer once.
const TINY = { tileCols: 64, scoreTileBytes: 64 * 4 * 40, chunkRows: 250, pairCapacity: 16 };
const gpuTiled = await gpuBackend(TINY);
// Bindings of 400 and of 100 pairs (see the last suite).
const narrow400 = await gpuBackend({ maxBindingBytes: 400 * 8 });
const narrow100 = await gpuBackend({ maxBindingBytes: 100 * 8 });
afterAll(disposeGpuBackends);

// [name, backend, row tiles of the join below, tiles handed on before 10 candidates are passed]:
// by default all 500 rows at once; with tiny tiles 40 rows at a time within chunks of 250, on
// either device (one plan). Rows 199 .. 259 are identical, so the bound of 10 falls in the tile of
// row 199.
const backends = [
  ['cpu', cpuBackend(), 1, 0],
  ['cpu (tiny tiles)', cpuBackend(TINY), 14, 4],
  ['webgpu', gpu, 1, 0],
  ['webgpu (tiny tiles)', gpuTiled, 14, 4],
] as const;

// Small integers (every float32 score exact) with planted copies at squared distance 0 and 1, and
// a block of identical rows: the margin at d = 8 is below 0.1, so the candidates are exactly the
// pairs at squared distance <= 1.
const n = 500;
const d = 8;
const x = randomSmallInts(n * d, 21, 30);
for (let b = 200; b < 260; b++) x.set(x.subarray(199 * d, 200 * d), b * d);
for (const [a, b] of [[0, 499], [63, 64], [5, 320], [410, 411]]) {
  x.set(x.subarray(a * d, (a + 1) * d), b * d);
  if (a % 2 === 1) x[b * d + 2] += 1;
}
const want: number[] = [];
for (let a = 0; a < n; a++) {
  for (let b = a + 1; b < n; b++) {
    let s = 0;
    for (let k = 0; k < d; k++) s += (x[a * d + k] - x[b * d + k]) ** 2;
    if (s <= 1) want.push(a, b);
  }
}

async function join(backend: Backend, onPairs: (block: Uint32Array, rowsDone: number) => void, maxCandidates?: number): Promise<number> {
  const store = backend.createBaseStore(d);
  try {
    await store.add(x, n);
    return await backend.selfJoinCandidates(store, 'l2', 1, dedupMargin(d), { onPairs, maxCandidates });
  } finally {
    store.dispose();
  }
}

describe('selfJoinCandidates streams sorted row-tile blocks', () => {
  it('the planted set has pairs in many tiles', () => {
    expect(want.length / 2).toBe((61 * 60) / 2 + 4);
  });

  for (const [name, backend, tiles, before] of backends) {
    it.skipIf(!backend)(`${name}: blocks in row order, each sorted by (i, j), together every candidate`, async () => {
      const got: number[] = [];
      const done: number[] = [0];
      const total = await join(backend!, (block, rowsDone) => {
        const prev = done[done.length - 1];
        expect(rowsDone).toBeGreaterThan(prev);
        for (let p = 0; p < block.length; p += 2) {
          // Rows of this tile only, and ascending (i, j) within it.
          expect(block[p] >= prev && block[p] < rowsDone && block[p] < block[p + 1]).toBe(true);
          if (p > 0) expect(block[p - 2] < block[p] || (block[p - 2] === block[p] && block[p - 1] < block[p + 1])).toBe(true);
        }
        done.push(rowsDone);
        got.push(...block); // the block is only valid during the call
      });
      expect(done[done.length - 1]).toBe(n);
      expect(done.length - 1).toBe(tiles);
      expect(got).toEqual(want);
      expect(total).toBe(want.length / 2);
    });

    it.skipIf(!backend)(`${name}: an error thrown by onPairs stops the join and rejects with it`, async () => {
      let calls = 0;
      await expect(
        join(backend!, () => {
          calls++;
          throw new Error('stop here');
        }),
      ).rejects.toThrow('stop here');
      expect(calls).toBe(1);
      // 10 candidates: rejected in the tile that crosses the bound, before its block is handed on.
      calls = 0;
      await expect(join(backend!, () => calls++, 10)).rejects.toThrow(/more than 10 candidate pairs \(at row \d+ of 500\)/);
      expect(calls).toBe(before);
      expect(await join(backend!, () => {}, want.length / 2)).toBe(want.length / 2);
    });
  }
});

describe('selfJoinCandidates with a split joins the rows below it with the rows from it on', () => {
  // Splits inside a chunk of the tiny tiles (250 rows), at its edge, and through the identical block.
  for (const [name, backend] of backends) {
    it.skipIf(!backend)(`${name}: exactly the pairs (i, j) with i < split <= j, in order`, async () => {
      for (const split of [1, 64, 230, 250, 251, 499, 500]) {
        const store = backend!.createBaseStore(d);
        await store.add(x, n);
        const got: number[] = [];
        const total = await backend!.selfJoinCandidates(store, 'l2', 1, dedupMargin(d), { onPairs: (b) => got.push(...b), split });
        store.dispose();
        const expected: number[] = [];
        for (let p = 0; p < want.length; p += 2) if (want[p] < split && want[p + 1] >= split) expected.push(want[p], want[p + 1]);
        // Through the identical rows 199 .. 259 (31 below 230 times 30 from it on), and (0, 499), (5, 320).
        if (split === 230) expect(expected.length / 2).toBe(31 * 30 + 2);
        expect(got, `split ${split}`).toEqual(expected);
        expect(total).toBe(expected.length / 2);
      }
    });
  }

  it('a split outside [0, ntotal] is refused', async () => {
    const backend = cpuBackend();
    const store = backend.createBaseStore(d);
    await store.add(x, n);
    await expect(backend.selfJoinCandidates(store, 'l2', 1, dedupMargin(d), { onPairs: () => {}, split: 501 })).rejects.toThrow('split must be an integer in [0, 500]; got 501');
    store.dispose();
  });
});

describe('a self-join tile with more pairs than one binding holds', () => {
  // 200 identical rows (19,900 pairs) with a binding of 400 pairs: the tiles of 4 rows (790 pairs)
  // are halved until they fit; one row alone (199 pairs) always fits.
  const m = 200;
  const same = new Float32Array(m * 4).fill(3);

  it.skipIf(!narrow400)('is split into fewer rows, and every pair still comes, in order', async () => {
    const backend = narrow400!;
    const store = backend.createBaseStore(4);
    await store.add(same, m);
    const got: number[] = [];
    const total = await backend.selfJoinCandidates(store, 'l2', 0, dedupMargin(4), { onPairs: (b) => got.push(...b) });
    store.dispose();
    const all: number[] = [];
    for (let a = 0; a < m; a++) for (let b = a + 1; b < m; b++) all.push(a, b);
    expect(total).toBe(all.length / 2);
    expect(got).toEqual(all);
  });

  it('maxBindingBytes must be an integer of at least 256, on either backend', async () => {
    for (const backend of ['cpu', 'webgpu'] as const) {
      for (const bad of [NaN, 100, 1000.5]) {
        await expect(createBackend({ backend, maxBindingBytes: bad })).rejects.toThrow(`maxBindingBytes must be an integer >= 256; got ${bad}`);
      }
    }
  });

  it.skipIf(!narrow100)('fails clearly when a single row has more pairs than one binding holds', async () => {
    const backend = narrow100!;
    const store = backend.createBaseStore(4);
    await store.add(same, m);
    await expect(backend.selfJoinCandidates(store, 'l2', 0, dedupMargin(4), { onPairs: () => undefined })).rejects.toThrow(
      /row 0 alone has 199 candidate pairs, more than one binding holds \(100\); use a stricter threshold/,
    );
    store.dispose();
  });
});
