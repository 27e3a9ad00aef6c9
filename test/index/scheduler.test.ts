import { afterAll, describe, expect, it } from 'vitest';
import { cpuBackend } from '../helpers/cpu.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { randomSmallInts, rng } from '../../src/common/random.js';
import { BatchScheduler, type SearchableIndex } from '../../src/jobs/scheduler.js';
import type { SearchResult, SearchTimings } from '../../src/types.js';

import type { SearchParams } from '../../src/indexes/vector-index.js';
import { expectIdentical } from '../helpers/compare.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { QueueFullError, SchedulerClosedError, InvalidArgumentError } from '../../src/errors.js';

const gpu = await gpuBackend();
const cpu = cpuBackend();
afterAll(disposeGpuBackends);

const D = 8;
const POOL = 200;
const KMAX = 8;
const xb = randomSmallInts(500 * D, 1, 15);
const pool = randomSmallInts(POOL * D, 2, 15);

async function flat(backend: FlatIndex['backend']): Promise<FlatIndex> {
  const index = new FlatIndex(backend, { dim: D });
  await index.add(xb);
  return index;
}

/** A controllable index: each search waits until released; records the batches it saw. */
class GatedIndex implements SearchableIndex {
  readonly dim = 2;
  readonly backend = { maxK: 100 };
  calls: { nq: number; k: number }[] = [];
  /** The params of each call, and its queries' first values (which request each row is). */
  params: { params: SearchParams | undefined; rows: number[] }[] = [];
  private gates: (() => void)[] = [];
  fail: Error | null = null;

  async search(xq: Float32Array, k: number, params?: SearchParams): Promise<SearchResult> {
    this.calls.push({ nq: xq.length / 2, k });
    this.params.push({ params, rows: Array.from({ length: xq.length / 2 }, (_, i) => xq[i * 2]) });
    await new Promise<void>((r) => this.gates.push(r));
    if (this.fail) throw this.fail;
    const nq = xq.length / 2;
    // Row i answers with labels (query[0] * 100 + j): each caller can check it got its own row.
    const labels = new Float64Array(nq * k);
    const distances = new Float32Array(nq * k);
    for (let i = 0; i < nq; i++) for (let j = 0; j < k; j++) labels[i * k + j] = xq[i * 2] * 100 + j;
    return { distances, labels };
  }

  release(): void {
    for (const g of this.gates.splice(0)) g();
  }

  async waitForCall(n: number): Promise<void> {
    while (this.calls.length < n) await new Promise((r) => setTimeout(r, 1));
  }
}

const q = (v: number): Float32Array => new Float32Array([v, 0]);

describe('BatchScheduler', () => {
  for (const [name, backend] of [['cpu', cpu], ['webgpu', gpu]] as const) {
    it.skipIf(!backend)(`${name}: results equal direct batched searches`, async () => {
      const index = await flat(backend!);
      const direct = await index.search(pool, KMAX);
      const s = new BatchScheduler(index, { maxBatch: 64, maxDelayMs: 1 });
      const ks = Array.from({ length: POOL }, (_, i) => 1 + (i % KMAX));
      const results = await Promise.all(ks.map((k, i) => s.search(pool.subarray(i * D, (i + 1) * D), k)));
      results.forEach((r, i) => {
        expect(Array.from(r.labels), `query ${i}`).toEqual(Array.from(direct.labels.subarray(i * KMAX, i * KMAX + ks[i])));
        expect(Array.from(r.distances)).toEqual(Array.from(direct.distances.subarray(i * KMAX, i * KMAX + ks[i])));
      });
      await s.close();
      const st = s.stats();
      expect(st.completed).toBe(POOL);
      expect(st.batches).toBeGreaterThanOrEqual(Math.ceil(POOL / 64));
      expect(st.maxBatchSize).toBeLessThanOrEqual(64);
    });
  }

  for (const [name, backend, total] of [['cpu', cpu, 100_000], ['webgpu', gpu, 20_000]] as const) {
    it.skipIf(!backend)(`${name}: ${total} requests from 50 callers with random aborts and bad queries`, async () => {
      const index = await flat(backend!);
      const direct = await index.search(pool, KMAX);
      const s = new BatchScheduler(index, { maxBatch: 1024, maxDelayMs: 1, maxQueue: total });
      const r = rng(42);
      let settledTwice = 0;
      const outcome = { ok: 0, aborted: 0, bad: 0, wrong: 0 };
      const callers = 50;
      const perCaller = total / callers;
      const caller = async (): Promise<void> => {
        const pending: Promise<void>[] = [];
        for (let i = 0; i < perCaller; i++) {
          const qi = Math.floor(r() * POOL);
          const k = 1 + Math.floor(r() * KMAX);
          const roll = r();
          let query: Float32Array = pool.subarray(qi * D, (qi + 1) * D);
          if (roll < 0.03) query = Float32Array.from(query, (v, j) => (j === 3 ? NaN : v));
          else if (roll < 0.05) query = query.subarray(0, D - 1);
          const ctrl = roll > 0.9 ? new AbortController() : null;
          let settled = 0;
          const p = s.search(query, k, { signal: ctrl?.signal }).then(
            (res) => {
              settled++;
              const want = direct.labels.subarray(qi * KMAX, qi * KMAX + k);
              if (res.labels.length !== k || res.labels.some((v, j) => v !== want[j])) outcome.wrong++;
              else outcome.ok++;
            },
            (err) => {
              settled++;
              if (err instanceof InvalidArgumentError) outcome.bad++;
              else if ((err as Error).name === 'AbortError') outcome.aborted++;
              else throw err;
            },
          ).then(() => {
            if (settled !== 1) settledTwice++;
          });
          if (ctrl) {
            // Abort now, after a microtask, or after a timer: before or after dispatch.
            const when = r();
            if (when < 0.3) ctrl.abort();
            else if (when < 0.6) queueMicrotask(() => ctrl.abort());
            else setTimeout(() => ctrl.abort(), Math.floor(r() * 3));
          }
          pending.push(p);
          // Yield now and then so that the callers interleave and batches form while others run.
          if (i % 50 === 49) await new Promise((res) => setTimeout(res, 0));
        }
        await Promise.all(pending);
      };
      await Promise.all(Array.from({ length: callers }, caller));
      await s.close();
      const st = s.stats();
      expect(settledTwice).toBe(0);
      expect(outcome.wrong).toBe(0);
      expect(outcome.ok + outcome.aborted + outcome.bad).toBe(total);
      expect(outcome.ok).toBe(st.completed);
      expect(outcome.aborted).toBe(st.aborted);
      expect(outcome.bad).toBe(st.rejected);
      expect(st.completed + st.aborted + st.rejected + st.failed).toBe(total);
      // Accepted requests all ended, as results or aborts (some were aborted before acceptance).
      expect(st.requests).toBeLessThanOrEqual(total - st.rejected);
      expect(st.requests).toBeGreaterThanOrEqual(st.completed);
      expect(st.queued).toBe(0);
      expect(st.inFlight).toBe(0);
      expect(outcome.bad).toBeGreaterThan(0);
      expect(outcome.aborted).toBeGreaterThan(0);
      console.log(`[scheduler] ${name}: ${JSON.stringify({ ...outcome, batches: st.batches, meanBatch: st.meanBatchSize.toFixed(1) })}`);
    }, 300_000);
  }

  it('searches requests with different k together at the largest k and cuts each to its own', async () => {
    // The largest k first: a result row offset of i * k instead of i * kmax then shows.
    const index = new GatedIndex();
    const s = new BatchScheduler(index, { maxDelayMs: 5 });
    const a = s.search(q(1), 5);
    const b = s.search(q(2), 2);
    const c = s.search(q(3), 3);
    await index.waitForCall(1);
    index.release();
    expect(index.calls).toEqual([{ nq: 3, k: 5 }]);
    expect(Array.from((await a).labels)).toEqual([100, 101, 102, 103, 104]);
    expect(Array.from((await b).labels)).toEqual([200, 201]);
    expect(Array.from((await c).labels)).toEqual([300, 301, 302]);
  });

  for (const [name, backend] of [['cpu', cpu], ['webgpu', gpu]] as const) {
    it.skipIf(!backend)(`${name}: one batch of different k, largest first, equals each caller's direct search at its own k`, async () => {
      const index = await flat(backend!);
      const ks = [KMAX, 3, 1, 5, 2, KMAX - 1, 4];
      // A full batch goes at once (the long delay never runs out): one batch, whatever the timing.
      const s = new BatchScheduler(index, { maxBatch: ks.length, maxDelayMs: 60_000 });
      const query = (i: number): Float32Array => pool.subarray(i * D, (i + 1) * D);
      const results = await Promise.all(ks.map((k, i) => s.search(query(i), k)));
      expect(s.stats().batches, 'the requests must share one batch').toBe(1);
      for (let i = 0; i < ks.length; i++) {
        const want = await index.search(query(i), ks[i]);
        expectIdentical(results[i], want, `caller ${i} (k = ${ks[i]})`);
      }
      await s.close();
    });
  }

  for (const [name, backend] of [['cpu', cpu], ['webgpu', gpu]] as const) {
    it.skipIf(!backend)(`${name}: a caller may reuse one query buffer; each request keeps the query it was given`, async () => {
      const index = await flat(backend!);
      // The tenth request fills the batch and dispatches it: every request is still waiting until then.
      const s = new BatchScheduler(index, { maxBatch: 10, maxDelayMs: 60_000 });
      const buf = new Float32Array(D);
      const pending: Promise<SearchResult>[] = [];
      for (let i = 0; i < 10; i++) {
        buf.set(pool.subarray(i * D, (i + 1) * D));
        pending.push(s.search(buf, KMAX));
      }
      const results = await Promise.all(pending);
      expect(s.stats().batches, 'the requests must share one batch').toBe(1);
      for (let i = 0; i < 10; i++) {
        expectIdentical(results[i], await index.search(pool.subarray(i * D, (i + 1) * D), KMAX), `request ${i}`);
      }
      await s.close();
    });

    it.skipIf(!backend)(`${name}: writing NaN into the query buffer after enqueueing does not touch the request`, async () => {
      const index = await flat(backend!);
      // The second request fills the batch and dispatches it, after the NaN was written.
      const s = new BatchScheduler(index, { maxBatch: 2, maxDelayMs: 60_000 });
      const buf = Float32Array.from(pool.subarray(3 * D, 4 * D));
      const p = s.search(buf, KMAX);
      buf.fill(NaN);
      const other = s.search(pool.subarray(4 * D, 5 * D), KMAX);
      const [got, gotOther] = await Promise.all([p, other]);
      expectIdentical(got, await index.search(pool.subarray(3 * D, 4 * D), KMAX), 'request whose buffer was overwritten');
      expectIdentical(gotOther, await index.search(pool.subarray(4 * D, 5 * D), KMAX), 'its batch neighbour');
      await s.close();
      expect(s.stats().batches).toBe(1);
      expect(s.stats().failed).toBe(0);
    });
  }

  it('runs one batch at a time and gathers the next while it runs', async () => {
    const index = new GatedIndex();
    const s = new BatchScheduler(index, { maxDelayMs: 0 });
    const first = s.search(q(1), 1);
    await index.waitForCall(1);
    const rest = [2, 3, 4].map((v) => s.search(q(v), 1));
    await new Promise((r) => setTimeout(r, 5));
    expect(index.calls).toHaveLength(1);
    index.release();
    await first;
    await index.waitForCall(2);
    expect(index.calls[1]).toEqual({ nq: 3, k: 1 });
    index.release();
    expect((await Promise.all(rest)).map((r) => r.labels[0])).toEqual([200, 300, 400]);
  });

  it('a bad query fails alone; the others in its batch succeed', async () => {
    const index = new GatedIndex();
    const s = new BatchScheduler(index, { maxDelayMs: 2 });
    const good = s.search(q(1), 1);
    await expect(s.search(new Float32Array([NaN, 0]), 1)).rejects.toThrow(/query has a non-finite value \(NaN\) at column 0/);
    await expect(s.search(new Float32Array(3), 1)).rejects.toThrow(/query must be a Float32Array of length dim = 2; got a Float32Array of length 3/);
    await expect(s.search(q(1), 0)).rejects.toThrow(/k must be an integer in \[1, 100\]; got 0/);
    await index.waitForCall(1);
    index.release();
    expect((await good).labels[0]).toBe(100);
  });

  it('a failed batch rejects each of its requests with the error, and the next batch runs', async () => {
    const index = new GatedIndex();
    const s = new BatchScheduler(index, { maxDelayMs: 5 });
    index.fail = new Error('device lost');
    const a = s.search(q(1), 1);
    const b = s.search(q(2), 1);
    await index.waitForCall(1);
    index.release();
    await expect(a).rejects.toThrow('device lost');
    await expect(b).rejects.toThrow('device lost');
    index.fail = null;
    const c = s.search(q(3), 1);
    await index.waitForCall(2);
    index.release();
    expect((await c).labels[0]).toBe(300);
    expect(s.stats().failed).toBe(2);
  });

  it('aborts: a waiting request leaves the queue; a dispatched one has its result dropped', async () => {
    const index = new GatedIndex();
    const s = new BatchScheduler(index, { maxDelayMs: 0 });
    const c1 = new AbortController();
    const running = s.search(q(1), 1, { signal: c1.signal });
    await index.waitForCall(1);
    const c2 = new AbortController();
    const waiting = s.search(q(2), 1, { signal: c2.signal });
    const other = s.search(q(3), 1);
    c2.abort();
    c1.abort();
    await expect(waiting).rejects.toThrow(/aborted/);
    await expect(running).rejects.toThrow(/aborted/);
    index.release();
    await index.waitForCall(2);
    expect(index.calls[1]).toEqual({ nq: 1, k: 1 }); // only `other`
    index.release();
    expect((await other).labels[0]).toBe(300);
    const pre = new AbortController();
    pre.abort();
    await expect(s.search(q(4), 1, { signal: pre.signal })).rejects.toThrow(/aborted/);
    expect(s.stats().aborted).toBe(3);
  });

  it('rejects at once with QueueFullError when maxQueue requests wait', async () => {
    const index = new GatedIndex();
    const s = new BatchScheduler(index, { maxDelayMs: 0, maxQueue: 3 });
    const running = s.search(q(9), 1); // dispatched: does not count as waiting
    await index.waitForCall(1);
    const queued = [1, 2, 3].map((v) => s.search(q(v), 1));
    await expect(s.search(q(4), 1)).rejects.toBeInstanceOf(QueueFullError);
    await expect(s.search(q(4), 1)).rejects.toThrow(/maxQueue = 3/);
    index.release();
    await running;
    await index.waitForCall(2);
    index.release();
    await Promise.all(queued);
    expect(s.stats().rejected).toBe(2);
  });

  it('close() stops intake, finishes what is queued and resolves when drained', async () => {
    const index = new GatedIndex();
    const s = new BatchScheduler(index, { maxDelayMs: 50, maxBatch: 2 });
    const reqs = [1, 2, 3, 4, 5].map((v) => s.search(q(v), 1));
    let drained = false;
    const closing = s.close().then(() => (drained = true));
    await expect(s.search(q(6), 1)).rejects.toBeInstanceOf(SchedulerClosedError);
    for (let calls = 1; calls <= 3; calls++) {
      await index.waitForCall(calls);
      expect(drained).toBe(false);
      index.release();
    }
    await closing;
    expect((await Promise.all(reqs)).map((r) => r.labels[0])).toEqual([100, 200, 300, 400, 500]);
    expect(index.calls.map((c) => c.nq)).toEqual([2, 2, 1]);
    expect(s.stats().latencyMs.p99).toBeGreaterThan(0);
  });
  it('batches only requests with the same params: oldest first, each batch its params, none starved', async () => {
    const index = new GatedIndex();
    const s = new BatchScheduler(index, { maxDelayMs: 60_000, maxBatch: 100 });
    const f = new BigInt64Array([1n, 2n]);
    const sameContents = new BigInt64Array([1n, 2n]); // another object: another batch
    const asked: [number, SearchParams | undefined][] = [
      [1, { nprobe: 2 }],
      [2, undefined],
      [3, { nprobe: 2 }],
      [4, { filter: f }],
      [5, { nprobe: 3 }],
      [6, { filter: f }],
      [7, { filter: sameContents }],
      [8, { filter: f, filterMode: 'pre' }],
      [9, {}],
      [10, { nprobe: 2, filter: f }],
      [11, { filter: f }],
    ];
    const pending = asked.map(([v, params]) => s.search(q(v), 1, { params }));
    // close() dispatches what waits without waiting for the delay; one batch at a time.
    const closing = s.close();
    for (let calls = 1; calls <= 7; calls++) {
      await index.waitForCall(calls);
      index.release();
    }
    await closing;
    // Batches in the order of their oldest request; each holds its requests in arrival order.
    expect(index.params.map((p) => p.rows)).toEqual([[1, 3], [2, 9], [4, 6, 11], [5], [7], [8], [10]]);
    expect(index.params.map((p) => p.params?.nprobe)).toEqual([2, undefined, undefined, 3, undefined, undefined, 2]);
    expect(index.params.map((p) => p.params?.filter)).toEqual([undefined, undefined, f, undefined, sameContents, f, f]);
    expect(index.params[2].params!.filter).toBe(f);
    expect(index.params[4].params!.filter).toBe(sameContents);
    expect(index.params.map((p) => p.params?.filterMode)).toEqual([undefined, undefined, undefined, undefined, undefined, 'pre', undefined]);
    expect((await Promise.all(pending)).map((r) => r.labels[0])).toEqual(asked.map(([v]) => v * 100));
    expect(s.stats().batches).toBe(7);
  });

  it('a later batch of other params does not wait for a group that keeps arriving', async () => {
    // Requests of params A keep coming while B waits: B goes as soon as it is the oldest.
    const index = new GatedIndex();
    const s = new BatchScheduler(index, { maxDelayMs: 0, maxBatch: 2 });
    const a = { nprobe: 1 };
    const b = { nprobe: 2 };
    const first = s.search(q(1), 1, { params: a });
    await index.waitForCall(1);
    const rest = [s.search(q(2), 1, { params: b }), s.search(q(3), 1, { params: a }), s.search(q(4), 1, { params: a }), s.search(q(5), 1, { params: a })];
    index.release();
    await first;
    for (let calls = 2; calls <= 4; calls++) {
      await index.waitForCall(calls);
      index.release();
    }
    await Promise.all(rest);
    expect(index.params.map((p) => p.rows)).toEqual([[1], [2], [3, 4], [5]]);
  });

  it('checks params at once: a bad one fails alone', async () => {
    const index = new GatedIndex();
    const s = new BatchScheduler(index, { maxDelayMs: 2 });
    const good = s.search(q(1), 1, { params: { nprobe: 4 } });
    await expect(s.search(q(2), 1, { params: { nprobe: 0 } })).rejects.toThrow(/nprobe must be an integer >= 1; got 0/);
    await expect(s.search(q(2), 1, { params: { nprobe: 1.5 } })).rejects.toThrow(/nprobe must be an integer >= 1; got 1.5/);
    await expect(s.search(q(2), 1, { params: { filterMode: 'sometimes' as 'pre' } })).rejects.toThrow(/filterMode must be auto, pre or post; got sometimes/);
    await expect(s.search(q(2), 1, { params: { filter: [1, 2] as unknown as BigInt64Array } })).rejects.toThrow(/filter must be a BigInt64Array of allowed ids or a function/);
    await expect(s.search(q(2), 1, { params: 'nprobe=2' as unknown as SearchParams })).rejects.toThrow(/params must be an object \(SearchParams\); got string/);
    await index.waitForCall(1);
    index.release();
    expect((await good).labels[0]).toBe(100);
    expect(s.stats().rejected).toBe(5);
  });

  for (const [name, backend] of [['cpu', cpu], ['webgpu', gpu]] as const) {
    it.skipIf(!backend)(`${name}: IVF with caller ids, a burst of mixed nprobe, filters and modes: each result is the direct search with its params`, async () => {
      const nlist = 8;
      const index = new IvfFlatIndex(backend!, { dim: D, nlist });
      await index.train(xb);
      // Caller ids far from the row numbers, some above 2^32.
      const ids = BigInt64Array.from({ length: 500 }, (_, i) => BigInt(i * 7919 + (i % 3 === 0 ? 2 ** 33 : 0)));
      await index.addWithIds(xb, ids);
      const every5th = ids.filter((_, i) => i % 5 === 0);
      const one = ids.subarray(10, 11);
      const odd = (id: number): boolean => id % 2 === 1;
      const kinds: SearchParams[] = [
        {},
        { nprobe: 1 },
        { nprobe: 3 },
        { nprobe: nlist },
        { filter: every5th },
        { filter: every5th, nprobe: nlist },
        { filter: every5th, filterMode: 'post' },
        { filter: every5th, filterMode: 'pre' },
        { filter: one, nprobe: nlist },
        { filter: odd, nprobe: 2 },
      ];
      // Every kind twice, interleaved: each kind is one batch.
      const s = new BatchScheduler(index, { maxBatch: 1000, maxDelayMs: 60_000 });
      const n = 2 * kinds.length;
      const query = (i: number): Float32Array => pool.subarray(i * D, (i + 1) * D);
      const timings: SearchTimings = { uploadMs: -1, computeMs: -1, readbackMs: -1 };
      const pending = Array.from({ length: n }, (_, i) => {
        const params = i === 0 ? { ...kinds[0], timings } : kinds[i % kinds.length];
        return s.search(query(i), KMAX, { params });
      });
      await s.close();
      const results = await Promise.all(pending);
      expect(s.stats().batches, 'one batch per kind of params').toBe(kinds.length);
      expect(s.stats().maxBatchSize).toBe(2);
      for (let i = 0; i < n; i++) {
        const params = kinds[i % kinds.length];
        expectIdentical(results[i], await index.search(query(i), KMAX, params), `request ${i}, params ${JSON.stringify({ ...params, filter: params.filter === undefined ? undefined : String(params.filter) })}`);
      }
      // Filtered results hold only allowed ids; the single allowed id is the only result.
      const allowed = new Set(Array.from(every5th, Number));
      for (const i of [4, 5, 6, 7]) expect(Array.from(results[i].labels).every((id) => id === -1 || allowed.has(id))).toBe(true);
      expect(Array.from(results[8].labels)).toEqual([Number(one[0]), ...Array(KMAX - 1).fill(-1)]);
      expect(Array.from(results[9].labels).every((id) => id === -1 || id % 2 === 1)).toBe(true);
      // nprobe matters for these queries (else a lost nprobe would go unseen).
      const exhaustive = async (i: number): Promise<number[]> => Array.from((await index.search(query(i), KMAX, { nprobe: nlist })).labels);
      expect(Array.from(results[1].labels)).not.toEqual(await exhaustive(1));
      expect(timings.computeMs).toBeGreaterThanOrEqual(0);
      await index.dispose();
    });
  }

  for (const [name, backend] of [['cpu', cpu], ['webgpu', gpu]] as const) {
    it.skipIf(!backend)(`${name}: an nprobe the index refuses fails only the requests that asked for it`, async () => {
      const index = new IvfFlatIndex(backend!, { dim: D, nlist: 4 });
      await index.train(xb);
      await index.add(xb);
      const s = new BatchScheduler(index, { maxBatch: 1000, maxDelayMs: 60_000 });
      const good = [s.search(pool.subarray(0, D), 3, { params: { nprobe: 4 } }), s.search(pool.subarray(D, 2 * D), 3)];
      const bad = s.search(pool.subarray(0, D), 3, { params: { nprobe: 5 } });
      await s.close();
      await expect(bad).rejects.toThrow(/nprobe must be an integer in \[1, 4\] \(nlist\); got 5/);
      expectIdentical(await good[0], await index.search(pool.subarray(0, D), 3, { nprobe: 4 }), 'nprobe 4');
      expectIdentical(await good[1], await index.search(pool.subarray(D, 2 * D), 3), 'default nprobe');
      expect(s.stats().failed).toBe(1);
      await index.dispose();
    });
  }
});

