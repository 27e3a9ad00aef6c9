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
