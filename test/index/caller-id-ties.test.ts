/** Exact ties go to the smaller id (README), also with caller ids, which need not grow with add order. */
import { expect, it } from 'vitest';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { cpuBackend } from '../helpers/cpu.js';

const d = 4;
const cpu = cpuBackend();
const v = Float32Array.of(1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4);
const ids = BigInt64Array.of(9n, 2n ** 40n, 3n);

it('ties break on the smaller caller id in search and rangeSearch, Flat and IVF', async () => {
  const flat = new FlatIndex(cpu, { dim: d });
  const ivf = new IvfFlatIndex(cpu, { dim: d, nlist: 1 });
  await ivf.train(v);
  for (const index of [flat, ivf]) {
    await index.addWithIds(v, ids);
    expect(Array.from((await index.search(v.subarray(0, d), 3)).labels)).toEqual([3, 9, 2 ** 40]);
    expect(Array.from((await index.search(v.subarray(0, d), 2, { filter: ids, filterMode: 'post' })).labels)).toEqual([3, 9]);
    expect(Array.from((await index.rangeSearch(v.subarray(0, d), 1)).labels)).toEqual([3, 9, 2 ** 40]);
    await index.dispose();
  }
});
