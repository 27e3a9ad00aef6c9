/**
 * The schema a worker checks a search-shard job with (src/cli/cluster/job-payloads.ts): the
 * optional walk and probe fields are accepted when absent or in range, refused (naming the field)
 * out of it. Only the schema runs here: no queue, no files.
 */
import { describe, expect, it } from 'vitest';
import { JOB_SCHEMAS } from '../../src/cli/cluster/job-payloads.js';
import { SchemaError } from '../../src/errors.js';

const root = '/srv/webgpu-knn';
const header = { type: 'CAGRA', nlist: 0, dim: 16, metric: 'l2', nprobe: 0 };
const shards = [0, 1].map((s) => ({ path: `${root}/x.0123abcd.shard-${s}.idx`, bytes: 100, sha256: `${s}`.repeat(64), place: s, firstRow: 300 * s, rows: 300, rowIds: true, header }));
const job = {
  shards, metric: 'l2', queries: { path: `${root}/q.fvecs`, bytes: 6800, mtimeMs: 1 }, starts: [0, 50, 100], kk: 5,
  tiles: `${root}/.nn.npy.webgpu-knn-tiles-host-1-0123abcd`, block: 1, shard: 0,
};
const check = (data: object): unknown => (JOB_SCHEMAS['search-shard'] as (v: unknown, at: string) => unknown)(JSON.parse(JSON.stringify(data)), '');

describe('search-shard job schema', () => {
  it('takes itopk and nprobe absent or in range, and refuses them out of range, naming the field', () => {
    expect(() => check(job)).not.toThrow();
    expect(() => check({ ...job, itopk: 1 })).not.toThrow();
    expect(() => check({ ...job, itopk: 256, nprobe: 8 })).not.toThrow();
    for (const bad of [0, 257, 1.5, -3]) {
      expect(() => check({ ...job, itopk: bad }), `itopk ${bad}`).toThrow(SchemaError);
      expect(() => check({ ...job, itopk: bad }), `itopk ${bad}`).toThrow(/itopk/);
    }
    expect(() => check({ ...job, itopk: '64' })).toThrow(/itopk/);
    expect(() => check({ ...job, nprobe: 0 })).toThrow(/nprobe/);
  });

  it('takes the walk\'s searchWidth, maxIterations, seeds and entryRows in range, and refuses them out of it, naming the field', () => {
    expect(() => check({ ...job, searchWidth: 32, maxIterations: 0, seeds: 256, entryRows: 4096 })).not.toThrow();
    expect(() => check({ ...job, searchWidth: 1, maxIterations: 500, seeds: 1, entryRows: 1 })).not.toThrow();
    const bad: [string, unknown][] = [['searchWidth', 0], ['searchWidth', 33], ['maxIterations', -1], ['maxIterations', 2.5], ['seeds', 0], ['seeds', 257], ['entryRows', 0], ['entryRows', 4097], ['entryRows', '64']];
    for (const [field, value] of bad) {
      expect(() => check({ ...job, [field]: value }), `${field} ${String(value)}`).toThrow(SchemaError);
      expect(() => check({ ...job, [field]: value }), `${field} ${String(value)}`).toThrow(new RegExp(field));
    }
  });
});
