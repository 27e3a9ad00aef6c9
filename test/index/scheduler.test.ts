import { afterAll, describe, expect, it } from 'vitest';
import { cpuBackend } from '../helpers/cpu.js';
import { FlatIndex } from '../../src/flat-index.js';
import { randomSmallInts, rng } from '../../src/random.js';
import { BatchScheduler, QueueFullError, SchedulerClosedError, type SearchableIndex } from '../../src/scheduler.js';
import type { SearchResult } from '../../src/types.js';
import { InvalidArgumentError } from '../../src/types.js';
import { expectIdentical } from '../helpers/compare.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

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
  private gates: (() => void)[] = [];
  fail: Error | null = null;

  async search(xq: Float32Array, k: number): Promise<SearchResult> {
    this.calls.push({ nq: xq.length / 2, k });
    await new Promise<void>((r) => this.gates.push(r));
    if (this.fail) throw this.fail;
    const nq = xq.length / 2;
    // Row i answers with labels (query[0] * 100 + j): each caller can check it got its own row.
    const labels = new Int32Array(nq * k);
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
});

