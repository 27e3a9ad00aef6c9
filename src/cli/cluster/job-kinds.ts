/**
 * Every job kind a worker takes: its payload's schema (src/cli/cluster/job-payloads.ts, with
 * src/cli/cluster/job-schema.ts), the paths it names (each confined to the worker's root:
 * src/cli/cluster/job-paths.ts), and what runs it (src/cli/cluster/dedup.ts, shard-build.ts,
 * shard-search.ts). A payload is checked against its kind's schema, and its paths against the
 * root, before `run` is called. This registry is the workers' (src/cli/cluster/worker.ts): it sits
 * above the job functions, and nothing they import imports it.
 */
import { basename, dirname, join } from 'node:path';
import type { Backend } from '../../backend/backend.js';
import { runReduce, runTile, tileFile } from './dedup.js';
import { type JobName, JOB_SCHEMAS, type SearchMergeJob, type SearchShardJob } from './job-payloads.js';
import type { JobPath } from './job-paths.js';
import type { Check } from './job-schema.js';
import { runBuildManifest, runBuildShard } from './shard-build.js';
import { runSearchMerge, runSearchShard, tilePath } from './shard-search.js';

interface JobKind<T> {
  check: Check<T>;
  /** Every path the job reads or writes. */
  paths: (job: T) => JobPath[];
  run: (backend: Backend, job: T) => Promise<unknown>;
}

const p = (field: string, at: string | undefined, role: JobPath['role']): JobPath[] => (at === undefined ? [] : [{ field, path: at, role }]);

function kind<T>(k: JobKind<T>): JobKind<unknown> {
  return k as JobKind<unknown>;
}

/** The job kinds, by job name. */
export const JOB_KINDS: Record<string, JobKind<unknown>> = {
  'self-join-tile': kind({
    check: JOB_SCHEMAS['self-join-tile'],
    paths: (t) => [...p('input.path', t.input.path, 'input'), ...p('tiles', t.tiles, 'folder'), ...p('tile file', tileFile(t, t.i, t.j), 'output')],
    run: runTile,
  }),
  'dedup-reduce': kind({
    check: JOB_SCHEMAS['dedup-reduce'],
    paths: (r) => [...p('input.path', r.input.path, 'input'), ...p('tiles', r.tiles, 'folder'), ...p('out', r.out, 'output'), ...p('clusters', r.clusters, 'output')],
    run: (_, r) => runReduce(r),
  }),
  'build-shard': kind({
    check: JOB_SCHEMAS['build-shard'],
    paths: (b) => [
      ...p('trained.path', b.trained.path, 'input'),
      ...p('input.path', b.input.path, 'input'),
      ...p('ids.path', b.ids?.path, 'input'),
      ...p('lock.path', b.lock?.path, 'input'),
      ...p('run', b.run, 'folder'),
      ...p('out', b.out, 'output'),
    ],
    run: runBuildShard,
  }),
  'build-manifest': kind({
    check: JOB_SCHEMAS['build-manifest'],
    paths: (m) => [
      ...p('manifest', m.manifest, 'output'),
      ...p('lock.path', m.lock?.path, 'input'),
      ...p('run', m.run, 'folder'),
      ...p('draft.input.path', m.draft.input.path, 'input'),
      ...m.shards.flatMap((s, i) => p(`shards[${i}].file`, join(dirname(m.manifest), basename(s.file)), 'input')),
    ],
    run: (_, m) => runBuildManifest(m),
  }),
  'search-shard': kind({
    check: JOB_SCHEMAS['search-shard'],
    paths: (s) => [
      ...searchPaths(s),
      ...p('tile file', tilePath(s, s.block, s.shard), 'output'),
    ],
    run: runSearchShard,
  }),
  'search-merge': kind({
    check: JOB_SCHEMAS['search-merge'],
    paths: (m) => [...searchPaths(m), ...p('out', m.out, 'output'), ...p('dist', m.dist, 'output')],
    run: (_, m) => runSearchMerge(m),
  }),
} satisfies Record<JobName, JobKind<unknown>>;

function searchPaths(s: SearchShardJob | SearchMergeJob): JobPath[] {
  return [
    ...s.shards.flatMap((r, i) => p(`shards[${i}].path`, r.path, 'input')),
    ...p('queries.path', s.queries.path, 'input'),
    ...p('filter.path', s.filter?.path, 'input'),
    ...p('tiles', s.tiles, 'folder'),
  ];
}
