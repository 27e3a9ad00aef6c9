import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { loadIndex } from '../../src/indexes/load-index.js';
import { clusteredFloats, randomFloats, rng } from '../../src/common/random.js';
import type { VectorIndex } from '../../src/indexes/vector-index.js';
import { cpuBackend } from '../helpers/cpu.js';

const d = 8;
const cpu = cpuBackend({ maxBindingBytes: 4 * 1024 });
const dir = mkdtempSync(join(tmpdir(), 'rev-'));
function brute(xq: Float32Array, rows: Map<number, Float32Array>, k: number): number[][] {
  const out: number[][] = [];
  for (let r = 0; r < xq.length / d; r++) {
    const q = xq.subarray(r * d, (r + 1) * d);
    const s = [...rows].map(([id, x]) => { let t = 0; for (let j = 0; j < d; j++) t += (q[j] - x[j]) ** 2; return { id, t }; });
    s.sort((a, b) => a.t - b.t || a.id - b.id);
    const top = s.slice(0, k).map((e) => e.id);
    out.push([...top, ...Array(k - top.length).fill(-1)]);
  }
  return out;
}
async function check(index: VectorIndex, xq: Float32Array, k: number, rows: Map<number, Float32Array>, what: string, params = {}): Promise<void> {
  const got = await index.search(xq, k, params);
  const want = brute(xq, rows, k);
  for (let r = 0; r < want.length; r++) expect(Array.from(got.labels.subarray(r * k, (r + 1) * k)), `${what} row ${r}`).toEqual(want[r]);
}
const n = 1500;
const xb = clusteredFloats(n, d, 10, 3);
const xq = randomFloats(6 * d, 4);

describe('review', () => {
  it('IVF save with tombstones (no compaction), load, add, remove, compaction across chunks', async () => {
    const ivf = new IvfFlatIndex(cpu, { dim: d, nlist: 5, nprobe: 5, niter: 3 });
    await ivf.train(xb);
    await ivf.add(xb.subarray(0, 700 * d));
    await ivf.add(xb.subarray(700 * d));
    const live = new Map<number, Float32Array>();
    for (let i = 0; i < n; i++) live.set(i, xb.subarray(i * d, (i + 1) * d));
    const r = rng(7);
    const rem = BigInt64Array.from([...live.keys()].filter(() => r() < 0.15), BigInt);
    expect(await ivf.removeIds(rem)).toBe(rem.length);
    rem.forEach((id) => live.delete(Number(id)));
    expect(ivf.ndead).toBe(rem.length);
    await check(ivf, xq, 10, live, 'tombstoned');
    await check(ivf, xq, 10, new Map([...live].filter(([id]) => id % 3 === 0)), 'filter pre', { filter: (id: number) => id % 3 === 0, filterMode: 'pre' });
    await check(ivf, xq, 10, new Map([...live].filter(([id]) => id % 3 !== 0)), 'filter post', { filter: (id: number) => id % 3 !== 0, filterMode: 'post' });
    const p = join(dir, 'a.idx');
    await ivf.save(p);
    const l = await loadIndex(cpu, p);
    expect(l.ntotal).toBe(live.size);
    await check(l, xq, 10, live, 'loaded');
    await l.add(xb.subarray(0, 5 * d));
    for (let i = 0; i < 5; i++) live.set(n + i, xb.subarray(i * d, (i + 1) * d));
    await check(l, xq, 10, live, 'loaded+add');
    const rem2 = BigInt64Array.from([...live.keys()].filter((id) => id % 2 === 0), BigInt);
    expect(await l.removeIds(rem2)).toBe(rem2.length);
    rem2.forEach((id) => live.delete(Number(id)));
    await check(l, xq, 10, live, 'loaded+remove(compact)');
    const rr = await l.rangeSearch(xq, 0.5, { filter: (id: number) => id % 5 === 1 });
    expect(rr.lims.length).toBe(7);
    await l.save(join(dir, 'b.idx'));
    const l2 = await loadIndex(cpu, join(dir, 'b.idx'));
    await check(l2, xq, 10, live, 'reloaded');
  });

  it('sequential ids: remove the last ones, compact, add: no reuse; reset then addWithIds', async () => {
    const f = new FlatIndex(cpu, { dim: d });
    await f.add(xb.subarray(0, 100 * d));
    await f.removeIds(BigInt64Array.from({ length: 50 }, (_, i) => BigInt(50 + i)));
    await f.add(xb.subarray(0, d));
    const res = await f.search(xb.subarray(0, d), 2);
    expect(Array.from(res.labels).sort()).toEqual([0, 100]);
    await f.save(join(dir, 'c.idx'));
    const l = (await loadIndex(cpu, join(dir, 'c.idx'))) as FlatIndex;
    await l.add(xb.subarray(0, d));
    const r2 = await l.search(xb.subarray(0, d), 3);
    expect(Array.from(r2.labels).sort((a, b) => a - b)).toEqual([0, 100, 101]);
    await f.reset();
    await f.addWithIds(xb.subarray(0, 2 * d), BigInt64Array.of(2n ** 50n, 7n));
    const r3 = await f.search(xb.subarray(0, d), 2);
    expect(Array.from(r3.labels)).toEqual([2 ** 50, 7]);
  });

  it('remove everything from a sequential index, save, load, add', async () => {
    const f = new FlatIndex(cpu, { dim: d });
    await f.add(xb.subarray(0, 10 * d));
    await f.removeIds(BigInt64Array.from({ length: 10 }, (_, i) => BigInt(i)));
    expect(f.ntotal).toBe(0);
    await f.save(join(dir, 'e.idx'));
    const l = await loadIndex(cpu, join(dir, 'e.idx'));
    await l.add(xb.subarray(0, d));
    expect(Array.from((await l.search(xb.subarray(0, d), 1)).labels)).toEqual([10]);
  });

  it('concurrent removeIds and searches keep order', async () => {
    const f = new FlatIndex(cpu, { dim: d });
    await f.add(xb);
    const q = xb.subarray(0, d);
    const a = f.search(q, 1);
    const rm = f.removeIds(BigInt64Array.of(0n));
    const b = f.search(q, 1);
    const rm2 = f.removeIds(BigInt64Array.from({ length: 600 }, (_, i) => BigInt(i + 1)));
    const c = f.search(q, 1, { filter: BigInt64Array.of(0n, 1n, 700n) });
    expect((await a).labels[0]).toBe(0);
    await rm;
    expect((await b).labels[0]).not.toBe(0);
    expect(await rm2).toBe(600);
    expect(Array.from((await c).labels)).toEqual([700]);
  });
});
