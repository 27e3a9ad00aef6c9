// contains(id): true for a live vector's id (a number or a bigint), false once removed or never
// added; a bad id is refused with its value named. Ids live on the host, so the CPU backend suffices.
import { describe, expect, it } from 'vitest';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { randomFloats } from '../../src/common/random.js';
import { cpuBackend } from '../helpers/cpu.js';

const cpu = cpuBackend();
const d = 4;

describe('contains', () => {
  it('Flat: sequential ids, then removal', async () => {
    const index = new FlatIndex(cpu, { dim: d });
    await index.add(randomFloats(3 * d, 1));
    expect([0, 1, 2, 3].map((id) => index.contains(id))).toEqual([true, true, true, false]);
    expect(index.contains(2n)).toBe(true);
    await index.removeIds(BigInt64Array.from([1n]));
    expect([index.contains(0), index.contains(1), index.contains(1n), index.contains(2)]).toEqual([true, false, false, true]);
  });

  it("IVF: the caller's ids, past 2^32", async () => {
    const index = new IvfFlatIndex(cpu, { dim: d, nlist: 2, nprobe: 2, niter: 2, seed: 1 });
    const x = randomFloats(20 * d, 2);
    await index.train(x);
    await index.addWithIds(x.subarray(0, 2 * d), BigInt64Array.from([1000n, 2n ** 40n]));
    expect([index.contains(1000), index.contains(2 ** 40), index.contains(2n ** 40n), index.contains(0), index.contains(1001)]).toEqual([true, true, true, false, false]);
    await index.removeIds(BigInt64Array.from([1000n]));
    expect(index.contains(1000n)).toBe(false);
  });

  it('refuses ids that are not integers in [0, 2^53 - 1], naming them', () => {
    const index = new FlatIndex(cpu, { dim: d });
    expect(() => index.contains(1.5)).toThrow(/id is 1\.5; ids must be integers in \[0, 9007199254740991\]/);
    expect(() => index.contains(-1)).toThrow(/id is -1;/);
    expect(() => index.contains(2 ** 53)).toThrow(/id is 9007199254740992;/);
    expect(() => index.contains(-3n)).toThrow(/id is -3n;/);
    expect(() => index.contains('7' as unknown as number)).toThrow(/id is a string \(7\);/);
  });
});

describe('ids as numbers or bigints', () => {
  it('addWithIds and removeIds take plain numbers, bigints or a BigInt64Array alike; labels come back as numbers', async () => {
    const d = 4;
    const xb = Float32Array.from({ length: 3 * d }, (_, i) => i);
    const index = new FlatIndex(cpuBackend(), { dim: d });
    await index.addWithIds(xb.subarray(0, 2 * d), [1000, 1001]);
    await index.addWithIds(xb.subarray(2 * d), [1002n]);
    expect(Array.from((await index.search(xb.subarray(0, d), 3)).labels)).toEqual([1000, 1001, 1002]);
    expect(await index.removeIds([1001n, 1002])).toBe(2);
    expect(index.contains(1000) && !index.contains(1001)).toBe(true);
    await expect(index.addWithIds(xb.subarray(0, d), [1.5])).rejects.toThrow(/ids\[0\] is 1\.5; ids must be integers/);
    await expect(index.addWithIds(xb.subarray(0, d), [2 ** 53])).rejects.toThrow(/ids\[0\] is 9007199254740992/);
    await expect(index.addWithIds(xb.subarray(0, d), ['7' as unknown as number])).rejects.toThrow(/ids\[0\] is a string \(7\)/);
    await expect(index.addWithIds(xb.subarray(0, d), new Set([1]) as unknown as number[])).rejects.toThrow(/ids must be 1 ids \(a BigInt64Array, or an array of numbers or bigints\); got Set/);
    await index.dispose();
  });
});

describe('reconstruct', () => {
  it('returns the stored rows of the ids asked, in their order: Flat exactly, cosine unit norm, SQ8 within its step; an id not held is refused', async () => {
    const d = 8;
    const n = 300;
    const xb = randomFloats(n * d, 71);
    const flat = new FlatIndex(cpuBackend(), { dim: d });
    await flat.addWithIds(xb, Array.from({ length: n }, (_, i) => 5000 + i));
    const got = await flat.reconstruct([5007, 5000n, 5299]);
    expect(Array.from(got)).toEqual([...xb.subarray(7 * d, 8 * d), ...xb.subarray(0, d), ...xb.subarray(299 * d, 300 * d)]);
    await expect(flat.reconstruct([5000, 42])).rejects.toThrow(/reconstruct: ids\[1\] = 42 is not in the index/);
    await flat.removeIds([5007]);
    await expect(flat.reconstruct([5007])).rejects.toThrow(/5007 is not in the index/);

    const cos = new FlatIndex(cpuBackend(), { dim: d, metric: 'cosine' });
    await cos.add(xb);
    const row = await cos.reconstruct([3]);
    const norm = Math.hypot(...xb.subarray(3 * d, 4 * d));
    for (let j = 0; j < d; j++) expect(row[j]).toBeCloseTo(xb[3 * d + j] / norm, 6);

    const sq = new FlatIndex(cpuBackend(), { dim: d, codec: 'SQ8' });
    await sq.train(xb);
    await sq.add(xb);
    const rec = await sq.reconstruct([10, 20]);
    let worst = 0;
    for (const [i, id] of [10, 20].entries()) for (let j = 0; j < d; j++) worst = Math.max(worst, Math.abs(rec[i * d + j] - xb[id * d + j]));
    expect(worst).toBeGreaterThan(0); // codes, not the rows
    expect(worst).toBeLessThan(2 / 255); // randomFloats lie in [-1, 1): one SQ8 step is at most 2 / 255
    const ivf = new IvfFlatIndex(cpuBackend(), { dim: d, nlist: 4, nprobe: 4, niter: 2, seed: 1 });
    await ivf.train(xb);
    await ivf.add(xb);
    expect(Array.from(await ivf.reconstruct([123, 4]))).toEqual([...xb.subarray(123 * d, 124 * d), ...xb.subarray(4 * d, 5 * d)]);
    for (const index of [flat, cos, sq, ivf]) await index.dispose();
  });
});
