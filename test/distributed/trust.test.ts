/**
 * Workers run only jobs they can verify (issue 33, item 1): jobs queued here by hand, with
 * bullmq's own Queue, to one CPU worker confined to a root. The audit's two injected jobs
 * (unsigned, signed with another secret, signed but naming paths outside the root), every job
 * kind with a hostile path in each of its path fields (outside the root, through `..`, through a
 * symbolic link out of it, an output that is a link), tampered, mis-signed and expired jobs, and
 * payloads that do not fit their kind's schema: each is refused, logged in one line, and no file
 * inside or outside the root changes. Also (item 13): a retried or re-delivered tile whose checked
 * file is there is reused, not recomputed. Without redis-server the suite skips with the reason,
 * unless WEBGPU_REQUIRED=1 (CI): then it fails.
 */
import { createHash, createHmac } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue, QueueEvents } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeVectors } from '../../src/io/vectors.js';
import { randomFloats } from '../../src/common/random.js';
import { signJob } from '../../src/cli/cluster/job-auth.js';
import { inputFile } from '../../src/cli/cluster/job-files.js';
import { type TestWorker, redisMissing, startRedis, startWorker, stopWorker, writeSecret } from '../helpers/redis.js';

const missing = redisMissing('trust suite');

const SECRET = 'the-workers-secret-0123456789abcdef';
const OTHER_SECRET = 'someone-elses-secret-0123456789abcdef';

type Payload = Record<string, unknown>;

/** `obj` with the value at dotted path `at` ("shards.0.path") replaced by `value` (a deep copy). */
function withField(obj: Payload, at: string, value: unknown): Payload {
  const copy = JSON.parse(JSON.stringify(obj)) as Payload;
  const keys = at.split('.');
  let o = copy as Record<string, unknown>;
  for (const k of keys.slice(0, -1)) o = o[k] as Record<string, unknown>;
  o[keys.at(-1)!] = value;
  return copy;
}

/** Every file under `dir` (links as links) with its bytes, for comparing before and after. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isSymbolicLink()) out[p] = 'link';
      else if (e.isDirectory()) walk(p);
      else out[p] = createHash('sha256').update(readFileSync(p)).digest('hex');
    }
  };
  walk(dir);
  return out;
}

/** A tile file as the tile jobs write it: the uint32 pairs, then their SHA-256. */
function checkedTile(pairs: number[]): Buffer {
  const body = Buffer.from(new Uint32Array(pairs).buffer);
  return Buffer.concat([body, createHash('sha256').update(body).digest()]);
}

describe.skipIf(missing !== null)('workers refuse jobs they cannot verify', () => {
  let dir = '';
  let root = '';
  let outside = '';
  let redisPid = 0;
  let worker: TestWorker;
  let queue: Queue;
  let events: QueueEvents;
  /** Valid payloads (every path inside the root) of each job kind. */
  let valid: Record<string, Payload> = {};
  /** The heartbeats of the valid payloads' run folders (named with this process's pid, as if it were their producer). */
  let heartbeats: string[] = [];
  /** Refreshes those heartbeats, before jobs that must run (src/cli/cluster/job-files.ts: a producer of this host must keep its heartbeat fresh). */
  const alive = (): void => {
    const now = new Date();
    for (const h of heartbeats) utimesSync(h, now, now);
  };

  /** Queues job `name` with `data` as a command would (3 attempts) and waits for it: its value, or its failure reason. */
  const outcome = async (name: string, data: unknown): Promise<{ id: string; value?: unknown; reason?: string }> => {
    const job = await queue.add(name, data, { attempts: 3, backoff: { type: 'exponential', delay: 1000 } });
    try {
      return { id: job.id!, value: await job.waitUntilFinished(events) };
    } catch (err) {
      return { id: job.id!, reason: (err as Error).message };
    }
  };
  const signed = (name: string, payload: Payload, secret = SECRET) => signJob(Buffer.from(secret), name, payload);

  beforeAll(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'webgpu-knn-trust-')));
    root = join(dir, 'root');
    outside = join(dir, 'outside');
    mkdirSync(root);
    mkdirSync(outside);
    // What an attacker would like to write over, outside the root.
    writeFileSync(join(outside, 'authorized_keys'), 'ssh-ed25519 AAAA the-owners-key\n');
    writeFileSync(join(outside, '.bashrc'), '# the owner\'s shell rc\n');
    writeFileSync(join(outside, 'victim.csv'), 'i,j,score\n0,1,1\n');
    mkdirSync(join(outside, '.out.csv.webgpu-knn-tiles-h-1-0123abcd'));
    symlinkSync(outside, join(root, 'escape'));
    const url = startRedis();
    redisPid = url.pid;
    const secretFile = writeSecret(join(dir, 'secret'), SECRET);
    worker = startWorker(url.url, root, secretFile);
    queue = new Queue('webgpu-knn', { connection: { url: url.url } });
    queue.setMaxListeners(200); // a waitUntilFinished per job in flight
    events = new QueueEvents('webgpu-knn', { connection: { url: url.url } });
    await events.waitUntilReady();

    writeVectors(join(root, 'x.fvecs'), randomFloats(600 * 16, 5), 600, 16);
    const run = `${hostname()}-${process.pid}-0123abcd`;
    const tiles = join(root, `.out.csv.webgpu-knn-tiles-${run}`);
    const searchTiles = join(root, `.nn.npy.webgpu-knn-tiles-${run}`);
    heartbeats = [join(tiles, 'heartbeat'), join(searchTiles, 'heartbeat')];
    mkdirSync(tiles);
    mkdirSync(searchTiles);
    for (const h of heartbeats) writeFileSync(h, '');
    const x = inputFile(join(root, 'x.fvecs'));
    const dedupPlan = { input: x, metric: 'cosine', threshold: 0.99, d: 16, tiles, maxCandidates: null };
    const manifest = join(root, 'x.json');
    const header = { type: 'Flat', nlist: 0, dim: 16, metric: 'l2', nprobe: 0 };
    const shards = [0, 1].map((s) => ({ path: join(root, `x.0123abcd.shard-${s}.idx`), bytes: 100, sha256: `${s}`.repeat(64), place: s, firstRow: 300 * s, rows: 300, rowIds: true, header }));
    const lock = { path: join(root, '.x.json.webgpu-knn-lock'), owner: '{"pid":1}' };
    const searchPlan = { shards, metric: 'l2', queries: x, starts: [0, 300, 600], kk: 5, nprobe: 1, kFactor: 1, filter: { path: join(root, 'allowed.txt'), bytes: 10, mtimeMs: 1 }, tiles: searchTiles };
    valid = {
      'self-join-tile': { ...dedupPlan, i: 0, j: 1, ri: [0, 300], rj: [300, 600] },
      'dedup-reduce': { ...dedupPlan, n: 600, starts: [0, 300, 600], out: join(root, 'out.csv'), clusters: join(root, 'groups.json') },
      'build-shard': {
        trained: { path: join(root, '.x.json.webgpu-knn-trained.idx'), bytes: 100, mtimeMs: 1 },
        input: x,
        r0: 0,
        r1: 300,
        ids: { path: join(root, 'ids.txt'), bytes: 10, mtimeMs: 1 },
        out: join(root, 'x.0123abcd.shard-0.idx'),
        lock,
      },
      'build-manifest': {
        manifest,
        draft: { format: 'webgpu-knn-shards', version: 1, dim: 16, metric: 'l2', type: 'Flat', nprobe: null, ntotal: 600, rowIds: true, input: { path: join(root, 'x.fvecs'), bytes: 40800, mtimeMs: 1 } },
        shards: [{ file: 'x.0123abcd.shard-0.idx', firstRow: 0, rows: 300 }, { file: 'x.0123abcd.shard-1.idx', firstRow: 300, rows: 300 }],
        lock,
      },
      'search-shard': { ...searchPlan, block: 1, shard: 0 },
      'search-merge': { ...searchPlan, out: join(root, 'nn.npy'), dist: join(root, 'd.npy'), k: 5, excludeSelf: false },
    };
  }, 60_000);

  afterAll(async () => {
    await queue?.close();
    await events?.close();
    if (worker) stopWorker(worker);
    if (redisPid) process.kill(redisPid);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("the audit's dedup-reduce and build-manifest jobs are refused unsigned, signed with another secret, and signed but naming files outside the root", async () => {
    const before = { outside: snapshot(outside), root: snapshot(root) };
    const reduce = withField(withField(valid['dedup-reduce'], 'out', join(outside, 'victim.csv')), 'clusters', join(outside, 'authorized_keys'));
    const rc = withField(withField(valid['build-manifest'], 'manifest', join(outside, '.bashrc')), 'draft.type', '"$(touch PWNED)"');
    const rcJson = withField(valid['build-manifest'], 'manifest', join(outside, 'rc.json'));
    const cases: [string, unknown, RegExp][] = [
      ['dedup-reduce', reduce, /not signed/],
      ['dedup-reduce', signed('dedup-reduce', reduce, OTHER_SECRET), /MAC does not match/],
      ['dedup-reduce', signed('dedup-reduce', reduce), /out "[^"]*victim\.csv" is outside the worker's root/],
      ['build-manifest', rc, /not signed/],
      ['build-manifest', signed('build-manifest', rc, OTHER_SECRET), /MAC does not match/],
      ['build-manifest', signed('build-manifest', rc), /its payload is not that of a build-manifest job: manifest: expected an absolute path ending in \.json/],
      ['build-manifest', signed('build-manifest', rcJson), /manifest "[^"]*rc\.json" is outside the worker's root/],
    ];
    for (const [name, data, why] of cases) {
      const r = await outcome(name, data);
      expect(r.value, `${name} must not run`).toBeUndefined();
      expect(r.reason).toMatch(new RegExp(`^refused job ${name}: `));
      expect(r.reason).toMatch(why);
      await worker.waitFor(new RegExp(`worker: refused job ${name} ${r.id}: \\S`));
    }
    expect(snapshot(outside), 'no file outside the root changed').toEqual(before.outside);
    expect(snapshot(root), 'no file inside the root changed').toEqual(before.root);
    expect(readdirSync(dir).concat(readdirSync(root), readdirSync(outside)).filter((f) => f.includes('PWNED'))).toEqual([]);
    expect(worker.log(), 'a refusal is one line, no stack trace').not.toMatch(/\n\s+at /);
  }, 60_000);

  /** Every path field of each kind, and whether the job writes it. */
  const PATH_FIELDS: [string, string, 'input' | 'output' | 'folder'][] = [
    ['self-join-tile', 'input.path', 'input'],
    ['self-join-tile', 'tiles', 'folder'],
    ['dedup-reduce', 'input.path', 'input'],
    ['dedup-reduce', 'tiles', 'folder'],
    ['dedup-reduce', 'out', 'output'],
    ['dedup-reduce', 'clusters', 'output'],
    ['build-shard', 'trained.path', 'input'],
    ['build-shard', 'input.path', 'input'],
    ['build-shard', 'ids.path', 'input'],
    ['build-shard', 'out', 'output'],
    ['build-shard', 'lock.path', 'input'],
    ['build-manifest', 'manifest', 'output'],
    ['build-manifest', 'draft.input.path', 'input'],
    ['build-manifest', 'lock.path', 'input'],
    ['search-shard', 'shards.1.path', 'input'],
    ['search-shard', 'queries.path', 'input'],
    ['search-shard', 'filter.path', 'input'],
    ['search-shard', 'tiles', 'folder'],
    ['search-merge', 'shards.0.path', 'input'],
    ['search-merge', 'queries.path', 'input'],
    ['search-merge', 'filter.path', 'input'],
    ['search-merge', 'tiles', 'folder'],
    ['search-merge', 'out', 'output'],
    ['search-merge', 'dist', 'output'],
  ];

  it('every job kind, with a path outside the root, through .., or through a symbolic link out of it, in each of its path fields: refused, nothing touched', async () => {
    const before = { outside: snapshot(outside), root: snapshot(root) };
    const jobs: { name: string; field: string; why: RegExp; result: Promise<{ id: string; value?: unknown; reason?: string }> }[] = [];
    const leaf = (p: string): string => p.slice(p.lastIndexOf('/') + 1);
    for (const [name, field, role] of PATH_FIELDS) {
      const inRoot = field.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], valid[name]) as string;
      const name0 = role === 'folder' ? '.out.csv.webgpu-knn-tiles-h-1-0123abcd' : leaf(inRoot);
      const variants: [string, RegExp][] = [
        [join(outside, name0), /is outside the worker's root/],
        [`${root}/../outside/${name0}`, /has a '\.\.' component/],
        [join(root, 'escape', name0), /leads outside the worker's root \S+ through a symbolic link/],
      ];
      if (role === 'output') {
        // An output that is itself a link: out of the root, or within it.
        const out = join(root, `link-out-${jobs.length}-${name0}`);
        const within = join(root, `link-in-${jobs.length}-${name0}`);
        symlinkSync(join(outside, 'victim.csv'), out);
        symlinkSync(join(root, 'x.fvecs'), within);
        variants.push([out, /leads outside the worker's root \S+ through a symbolic link/], [within, /is a symbolic link; an output must be a plain file/]);
      }
      for (const [path, why] of variants) {
        jobs.push({ name, field, why, result: outcome(name, signed(name, withField(valid[name], field, path))) });
      }
    }
    const before2 = { outside: before.outside, root: snapshot(root) }; // the links just made
    expect(jobs.length).toBe(PATH_FIELDS.length * 3 + 6 * 2);
    for (const j of jobs) {
      const r = await j.result;
      expect(r.value, `${j.name} ${j.field} must not run`).toBeUndefined();
      const field = j.field.replace(/\.(\d+)/g, '[$1]').replace(/[.[\]]/g, '\\$&');
      expect(r.reason, `${j.name} ${j.field}`).toMatch(new RegExp(`^refused job ${j.name}: ${field} "`));
      expect(r.reason, `${j.name} ${j.field}`).toMatch(j.why);
    }
    expect(snapshot(outside), 'no file outside the root changed').toEqual(before2.outside);
    expect(snapshot(root), 'no file inside the root changed').toEqual(before2.root);
  }, 60_000);

  it('a tampered body, a wrong MAC, an expired job, a body signed for another kind: refused; the same job signed by hand as documented runs', async () => {
    alive();
    const tile = valid['self-join-tile'];
    const key = Buffer.from(SECRET);
    const good = signJob(key, 'self-join-tile', tile);
    const cases: [string, unknown, RegExp][] = [
      ['tampered body', { ...good, body: good.body.replace('"threshold":0.99', '"threshold":0.5') }, /MAC does not match/],
      ['wrong MAC', { ...good, mac: (good.mac[0] === '0' ? '1' : '0') + good.mac.slice(1) }, /MAC does not match/],
      ['expired', signJob(key, 'self-join-tile', tile, Date.now() - 1), /expired at \d{4}-/],
      ['another kind', signJob(key, 'dedup-reduce', tile), /MAC does not match/],
      ['malformed MAC', { ...good, mac: 'zz' }, /signature is malformed/],
      ['an extra field', { ...good, note: 1 }, /not signed/],
    ];
    for (const [what, data, why] of cases) {
      const r = await outcome('self-join-tile', data);
      expect(r.value, what).toBeUndefined();
      expect(r.reason, what).toMatch(/^refused job self-join-tile: /);
      expect(r.reason, what).toMatch(why);
    }
    expect(readdirSync(tile.tiles as string), 'no tile written').toEqual(['heartbeat']);
    // The documented form: the MAC is HMAC-SHA256 of "name \n exp \n body" under the secret.
    const body = JSON.stringify(tile);
    const exp = Date.now() + 60_000;
    const mac = createHmac('sha256', key).update(`self-join-tile\n${exp}\n${body}`).digest('hex');
    const r = await outcome('self-join-tile', { body, exp, mac });
    expect(r.reason).toBeUndefined();
    expect(typeof r.value).toBe('number');
    expect(readdirSync(tile.tiles as string).sort()).toEqual(['0-1.pairs', 'heartbeat']);
    rmSync(join(tile.tiles as string, '0-1.pairs'));
  }, 60_000);

  it("payloads that do not fit their kind's schema are refused before anything runs", async () => {
    const v = valid;
    const cases: [string, Payload, RegExp][] = [
      ['self-join-tile', { ...v['self-join-tile'], extra: 1 }, /extra: not a field of this job/],
      ['self-join-tile', withField(v['self-join-tile'], 'threshold', '0.99'), /threshold: expected a finite number/],
      ['self-join-tile', withField(v['self-join-tile'], 'threshold', Infinity), /threshold: expected a finite number in \[-1, [^\]]+\]; got null/],
      ['self-join-tile', withField(v['self-join-tile'], 'i', 0.5), /^[^]*i: expected an integer/],
      ['self-join-tile', withField(v['self-join-tile'], 'i', 2), /i \(2\) must not exceed j \(1\)/],
      ['self-join-tile', withField(v['self-join-tile'], 'ri', [0, 300, 600]), /ri: expected an array of 2 elements/],
      ['self-join-tile', withField(v['self-join-tile'], 'rj', [200, 600]), /row ranges must be one block \(i = j\) or two blocks in order/],
      ['self-join-tile', withField(v['self-join-tile'], 'tiles', join(root, 'anywhere')), /tiles: expected a tiles folder/],
      ['self-join-tile', withField(v['self-join-tile'], 'input.path', 'x.fvecs'), /input\.path: expected an absolute path/],
      ['self-join-tile', withField(v['self-join-tile'], 'input', join(root, 'x.fvecs')), /input: expected an object/],
      ['self-join-tile', withField(v['self-join-tile'], 'input.bytes', -1), /input\.bytes: expected an integer in \[0, /],
      ['search-shard', withField(v['search-shard'], 'queries.mtimeMs', '1'), /queries\.mtimeMs: expected a finite number/],
      ['search-merge', { ...v['search-merge'], filter: { ...(v['search-merge'].filter as Payload), sha256: 'x' } }, /filter\.sha256: not a field of this job/],
      ['build-shard', { ...v['build-shard'], run: join(root, `.x.json.webgpu-knn-shards-${hostname()}-1-0123abcd`) }, /a build job names exactly one of lock and run/],
      ['build-manifest', { ...withField(v['build-manifest'], 'lock', undefined), run: join(root, `.g.npy.webgpu-knn-shards-${hostname()}-1-0123abcd`) }, /"[^"]*x\.json" is not in the run folder/],
      ['self-join-tile', withField(v['self-join-tile'], 'tiles', join(root, '.out.csv.webgpu-knn-tiles-h-x-0123abcd')), /tiles: expected a tiles folder \(\/DIR\/\.NAME\.webgpu-knn-tiles-HOST-PID-RAND\)/],
      ['dedup-reduce', withField(v['dedup-reduce'], 'd', 0), /d: expected an integer in \[1, /],
      ['dedup-reduce', withField(v['dedup-reduce'], 'starts', [0, 300, 300, 600]), /starts must increase/],
      ['dedup-reduce', withField(v['dedup-reduce'], 'out', join(root, 'out.txt')), /out: expected an absolute path ending in \.csv, \.jsonl/],
      ['dedup-reduce', withField(v['dedup-reduce'], 'metric', 'ip'), /metric: expected one of "cosine", "l2"/],
      ['build-shard', withField(v['build-shard'], 'r1', 0), /r1: expected an integer in \[1, /],
      ['build-manifest', withField(v['build-manifest'], 'shards.1.file', '../x.0123abcd.shard-1.idx'), /shards\[1\]\.file: expected a file name ending in \.idx, without a directory/],
      ['build-manifest', withField(v['build-manifest'], 'shards.1.file', 'x.0123abcd.shard-0.idx'), /a shard file is listed twice/],
      ['build-manifest', withField(v['build-manifest'], 'draft.ntotal', 601), /the shards hold 600 rows; draft\.ntotal is 601/],
      ['build-manifest', withField(v['build-manifest'], 'draft.type', 'IVF0,Flat'), /unknown index description/],
      ['search-shard', withField(v['search-shard'], 'block', 2), /block 2 is not one of the plan's 2/],
      ['search-shard', withField(v['search-shard'], 'shards.0.sha256', 'x'), /shards\[0\]\.sha256: expected a SHA-256/],
      ['search-merge', withField(v['search-merge'], 'kk', 6), /kk must be k/],
      ['search-shard', withField(v['search-shard'], 'shards.1.place', 0), /shards\[1\]\.place must be 1/],
      ['search-shard', withField(v['search-shard'], 'shards.1.firstRow', 200), /shards\[1\]\.firstRow must be 300/],
      ['search-merge', withField(v['search-merge'], 'shards.0.header.metric', 'hamming'), /shards\[0\]\.header\.metric: expected one of/],
      ['build-shard', withField(v['build-shard'], 'lock.path', join(root, 'x.json')), /lock\.path: expected a manifest's lock file/],
      ['search-merge', withField(v['search-merge'], 'shards', []), /shards: expected an array of 1 to /],
    ];
    const results = cases.map(([name, payload]) => outcome(name, signed(name, payload)));
    for (const [k, [name, , why]] of cases.entries()) {
      const r = await results[k];
      expect(r.value, `${name} ${why}`).toBeUndefined();
      expect(r.reason, `${name} ${why}`).toMatch(new RegExp(`^refused job ${name}: its payload is not that of a ${name} job: `));
      expect(r.reason, `${name} ${why}`).toMatch(why);
    }
  }, 60_000);

  it("item 1: a job whose run's producer is on another host runs while that producer's heartbeat is fresh, and is refused once it is stale", async () => {
    const tiles = join(root, '.hb.csv.webgpu-knn-tiles-another-host-1-0123abcd');
    const heartbeat = join(tiles, 'heartbeat');
    mkdirSync(tiles);
    writeFileSync(heartbeat, '');
    const tile = signed('self-join-tile', { ...valid['self-join-tile'], tiles });
    const old = new Date(Date.now() - 120_000);
    utimesSync(heartbeat, old, old);
    const stale = await outcome('self-join-tile', tile);
    expect(stale.value).toBeUndefined();
    expect(stale.reason).toMatch(/^refused job self-join-tile: the run that queued it has ended: its producer on another-host has not refreshed its heartbeat \S+ for 1\d\d s \(at most \d+ s are allowed\)$/);
    expect(readdirSync(tiles)).toEqual(['heartbeat']);
    const now = new Date();
    utimesSync(heartbeat, now, now);
    const fresh = await outcome('self-join-tile', tile);
    expect(fresh.reason).toBeUndefined();
    expect(readdirSync(tiles).sort()).toEqual(['0-1.pairs', 'heartbeat']);
    rmSync(tiles, { recursive: true });
  }, 60_000);

  it('item 13: a retried or re-delivered tile job whose checked file is there reuses it instead of computing it again', async () => {
    alive();
    const tile: Payload = { ...valid['self-join-tile'], i: 0, j: 0, ri: [0, 600], rj: [0, 600] };
    const tiles = tile.tiles as string;
    // A tile file that computing the tile would not give (three pairs the threshold does not pass): only reuse leaves it.
    const file = join(tiles, '0-0.pairs');
    writeFileSync(file, checkedTile([0, 1, 2, 3, 4, 5]));
    const inode = statSync(file).ino;
    const r = await outcome('self-join-tile', signed('self-join-tile', tile));
    expect(r.reason).toBeUndefined();
    expect(r.value, "the job returns the file's pair count").toBe(3);
    expect(readFileSync(file).equals(checkedTile([0, 1, 2, 3, 4, 5])), 'the file is as it was').toBe(true);
    expect(statSync(file).ino, 'and was not written again').toBe(inode);
    // Computed once, then the same job delivered again: the file is not rewritten.
    rmSync(file);
    const first = await outcome('self-join-tile', signed('self-join-tile', tile));
    expect(first.reason).toBeUndefined();
    const computed = readFileSync(file);
    const written = statSync(file).ino;
    const again = await outcome('self-join-tile', signed('self-join-tile', tile));
    expect(again.value).toBe(first.value);
    expect(statSync(file).ino, 'the re-delivered job did not rewrite the tile').toBe(written);
    expect(readFileSync(file).equals(computed)).toBe(true);
    // A damaged file is not reused: the tile is computed again.
    writeFileSync(file, Buffer.concat([checkedTile([0, 1, 2, 3]).subarray(0, 40), Buffer.from([1])]));
    const repaired = await outcome('self-join-tile', signed('self-join-tile', tile));
    expect(repaired.value).toBe(first.value);
    expect(readFileSync(file).equals(computed)).toBe(true);
    rmSync(file);
  }, 60_000);
});
