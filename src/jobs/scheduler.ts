/**
 * BatchScheduler: single queries in, batched searches out. A GPU is fast only when it is given
 * many queries at once, while callers (a web service, a pipeline stage) send one at a time.
 *
 * Requests that arrive while a batch is running, or within `maxDelayMs` of the first waiting one,
 * are searched together in one `index.search` call (at the largest k asked for, each result then
 * cut to its own k). At most `index.maxConcurrentSearches` batches (default 1) are in flight; the
 * next batch gathers in the queue meanwhile.
 *
 * Each request may carry search params (SearchParams: nprobe, kFactor, filter, filterMode). A batch holds
 * only requests whose params are compatible (see paramsKey): a batch is the oldest waiting request
 * and the waiting requests after it, in arrival order, whose params match its own; the others wait
 * for a later batch, which again starts at the oldest. So no request is overtaken by more than the
 * batches that hold older requests: none starves.
 *
 * Every request settles exactly once: with its own result or its own error. A bad query fails
 * alone, at once. An aborted request is dropped from the queue, or its result is dropped if its
 * batch already ran. A full queue rejects new requests at once with QueueFullError.
 */
import type { Backend } from '../backend/backend.js';
import { checkFilter } from '../indexes/ids.js';
import type { SearchResult, SearchTimings } from '../types.js';
import { checkK, emptyTimings } from '../types.js';
import { type SearchParams, type VectorIndex } from '../indexes/vector-index.js';
import { checkKFactor } from '../indexes/index-core.js';
import { InvalidArgumentError } from '../errors.js';
import { QueueFullError, SchedulerClosedError } from '../errors.js';

/** What the scheduler needs of an index: a VectorIndex's dim, backend limit and search. */
export type SearchableIndex = Pick<VectorIndex, 'dim' | 'search'> & {
  readonly backend: Pick<Backend, 'maxK'>;
  /** Batches the index can run at once (default 1). */
  readonly maxConcurrentSearches?: number;
};

export interface BatchSchedulerOptions {
  /** Most queries per batch (default 1024). */
  maxBatch?: number;
  /** How long the first waiting query may wait for company when no batch is running (default 2 ms). */
  maxDelayMs?: number;
  /** Most requests waiting; more are rejected with QueueFullError (default 65536). */
  maxQueue?: number;
}

export interface SchedulerSearchOptions {
  signal?: AbortSignal;
  /**
   * Passed to `index.search` for this request's batch: nprobe, filter (batched only with requests
   * holding the same filter object), filterMode; `timings` is filled with its batch's timings.
   */
  params?: SearchParams;
}

export interface LatencySummary {
  p50: number;
  p99: number;
  max: number;
}

export interface SchedulerStats {
  /** Requests accepted into the queue. */
  requests: number;
  completed: number;
  /** Rejected at once: bad query, full queue, closed. */
  rejected: number;
  /** Aborted by their signal (before or after dispatch). */
  aborted: number;
  /** Failed because their batch's search failed. */
  failed: number;
  batches: number;
  meanBatchSize: number;
  maxBatchSize: number;
  /** Now waiting, and now in flight. */
  queued: number;
  inFlight: number;
  /** Milliseconds from `search` to dispatch, and from `search` to the result (completed requests). */
  queueWaitMs: LatencySummary;
  latencyMs: LatencySummary;
}

interface Request {
  query: Float32Array;
  k: number;
  params: SearchParams;
  /** Requests with equal keys may share a batch (see paramsKey). */
  key: string;
  resolve: (r: SearchResult) => void;
  reject: (e: unknown) => void;
  enqueuedAt: number;
  dispatchedAt: number;
  /** Set once the request is taken into a batch. */
  dispatched: boolean;
  /** Set once the promise is settled; nothing settles it again. */
  settled: boolean;
  signal?: AbortSignal;
  onAbort?: () => void;
}

/** Requests in arrival order; those already dispatched or settled are skipped (and dropped) lazily. */
class Fifo {
  private items: Request[] = [];
  private head = 0;

  push(req: Request): void {
    this.items.push(req);
  }

  /** The oldest request neither dispatched nor settled, if any. */
  peek(): Request | undefined {
    while (this.head < this.items.length && (this.items[this.head].settled || this.items[this.head].dispatched)) this.head++;
    // Drop the consumed head once it dominates the array.
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return this.items[this.head];
  }
}

/** Most latency samples kept for percentiles (a ring: the latest ones). */
const SAMPLES = 16384;

class Samples {
  private readonly values = new Float64Array(SAMPLES);
  private count = 0;

  add(v: number): void {
    this.values[this.count % SAMPLES] = v;
    this.count++;
  }

  summary(): LatencySummary {
    const n = Math.min(this.count, SAMPLES);
    if (n === 0) return { p50: 0, p99: 0, max: 0 };
    const s = this.values.slice(0, n).sort();
    const at = (q: number): number => s[Math.min(n - 1, Math.floor(q * n))];
    return { p50: at(0.5), p99: at(0.99), max: s[n - 1] };
  }
}

export class BatchScheduler {
  readonly maxBatch: number;
  readonly maxDelayMs: number;
  readonly maxQueue: number;
  private readonly maxInFlight: number;
  /** Waiting requests in arrival order, and the same per params key (each request is in both). */
  private readonly arrivals = new Fifo();
  private readonly groups = new Map<string, Fifo>();
  private waiting = 0;
  private inFlight = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private closed = false;
  private drained: (() => void) | null = null;
  private readonly drainPromise: Promise<void>;
  private readonly counts = { requests: 0, completed: 0, rejected: 0, aborted: 0, failed: 0, batches: 0, batched: 0, maxBatch: 0 };
  private readonly queueWait = new Samples();
  private readonly latency = new Samples();

  constructor(
    readonly index: SearchableIndex,
    options: BatchSchedulerOptions = {},
  ) {
    this.maxBatch = positiveInt('maxBatch', options.maxBatch ?? 1024);
    this.maxQueue = positiveInt('maxQueue', options.maxQueue ?? 65536);
    const delay = options.maxDelayMs ?? 2;
    if (typeof delay !== 'number' || !(delay >= 0) || !Number.isFinite(delay)) {
      throw new InvalidArgumentError(`maxDelayMs must be a finite number >= 0; got ${String(delay)}`);
    }
    this.maxDelayMs = delay;
    this.maxInFlight = Math.max(1, Math.floor(index.maxConcurrentSearches ?? 1));
    this.drainPromise = new Promise((resolve) => (this.drained = resolve));
  }

  /**
   * The k nearest neighbours of one query (`dim` floats): `{ distances, labels }`, each of length k.
   * Rejects at once for a bad query or k, a full queue (QueueFullError) or a closed scheduler.
   * The query is copied when the request is accepted, so the caller may reuse its buffer at once.
   * `options.params` is checked at once as far as the scheduler can (nprobe an integer >= 1, the
   * filter's type, filterMode); the index checks the rest (nprobe <= nlist) when the batch runs,
   * failing only the requests with those params.
   */
  search(query: Float32Array, k: number, options: SchedulerSearchOptions = {}): Promise<SearchResult> {
    const { signal } = options;
    let params: SearchParams;
    try {
      if (this.closed) throw new SchedulerClosedError('the scheduler is closed; no new searches are accepted');
      checkQuery(query, this.index.dim);
      checkK(k, this.index.backend.maxK);
      params = checkParams(options.params);
      if (signal?.aborted) throw abortReason(signal);
      if (this.waiting >= this.maxQueue) {
        throw new QueueFullError(`the queue already holds maxQueue = ${this.maxQueue} requests; retry later`);
      }
    } catch (err) {
      if (signal?.aborted && !(err instanceof InvalidArgumentError)) this.counts.aborted++;
      else this.counts.rejected++;
      return Promise.reject(err);
    }
    return new Promise<SearchResult>((resolve, reject) => {
      // A copy: the caller may reuse or overwrite its buffer as soon as search() returns.
      const req: Request = {
        query: query.slice(),
        k,
        params,
        key: paramsKey(params),
        resolve,
        reject,
        enqueuedAt: performance.now(),
        dispatchedAt: 0,
        dispatched: false,
        settled: false,
        signal,
      };
      if (signal) {
        req.onAbort = () => this.abort(req);
        signal.addEventListener('abort', req.onAbort, { once: true });
      }
      this.arrivals.push(req);
      let group = this.groups.get(req.key);
      if (!group) this.groups.set(req.key, (group = new Fifo()));
      group.push(req);
      this.waiting++;
      this.counts.requests++;
      this.schedule();
    });
  }

  /** Stops intake, runs what is queued, and resolves once every accepted request has settled. */
  close(): Promise<void> {
    this.closed = true;
    this.schedule();
    this.checkDrained();
    return this.drainPromise;
  }

  stats(): SchedulerStats {
    const c = this.counts;
    return {
      requests: c.requests,
      completed: c.completed,
      rejected: c.rejected,
      aborted: c.aborted,
      failed: c.failed,
      batches: c.batches,
      meanBatchSize: c.batches ? c.batched / c.batches : 0,
      maxBatchSize: c.maxBatch,
      queued: this.waiting,
      inFlight: this.inFlight,
      queueWaitMs: this.queueWait.summary(),
      latencyMs: this.latency.summary(),
    };
  }

  /**
   * Dispatches while there is room in flight and requests wait, unless the batch is not full, the
   * scheduler is open and the oldest request has waited less than maxDelayMs: then it arms a timer
   * for the rest of that delay. (Requests that queued behind a running batch have usually waited
   * that long already, so they go as soon as the batch returns.)
   */
  private schedule(): void {
    while (this.inFlight < this.maxInFlight && this.waiting > 0) {
      const oldest = this.oldest();
      const waited = performance.now() - oldest.enqueuedAt;
      if (this.waiting < this.maxBatch && !this.closed && waited < this.maxDelayMs) {
        this.timer ??= setTimeout(() => {
          this.timer = null;
          this.schedule();
        }, Math.ceil(this.maxDelayMs - waited));
        return;
      }
      if (this.timer) {
        clearTimeout(this.timer);
        this.timer = null;
      }
      this.dispatch();
    }
  }

  /** The oldest waiting request; call only while `waiting > 0`. */
  private oldest(): Request {
    return this.arrivals.peek()!;
  }

  /**
   * Dispatches the oldest waiting request and, up to maxBatch, the waiting requests after it with
   * the same params key, in arrival order: O(batch) however many other keys wait.
   */
  private dispatch(): void {
    const first = this.oldest();
    const group = this.groups.get(first.key)!;
    const batch: Request[] = [];
    for (let req = group.peek(); req && batch.length < this.maxBatch; req = group.peek()) {
      req.dispatched = true;
      batch.push(req);
    }
    if (!group.peek()) this.groups.delete(first.key);
    this.waiting -= batch.length;
    if (batch.length === 0) return;
    const now = performance.now();
    const d = this.index.dim;
    const xq = new Float32Array(batch.length * d);
    let kmax = 1;
    batch.forEach((req, i) => {
      req.dispatchedAt = now;
      this.queueWait.add(now - req.enqueuedAt);
      xq.set(req.query, i * d);
      kmax = Math.max(kmax, req.k);
    });
    this.counts.batches++;
    this.counts.batched += batch.length;
    this.counts.maxBatch = Math.max(this.counts.maxBatch, batch.length);
    this.inFlight++;
    // One timings object for the batch when any request asked for them, copied to each afterwards.
    const timed = batch.filter((req) => req.params.timings !== undefined);
    const timings: SearchTimings | undefined = timed.length > 0 ? emptyTimings() : undefined;
    const params: SearchParams = { ...first.params, timings };
    let search: Promise<SearchResult>;
    try {
      search = this.index.search(xq, kmax, params);
    } catch (err) {
      search = Promise.reject(err);
    }
    search.then(
      (result) => {
        const end = performance.now();
        for (const req of timed) Object.assign(req.params.timings!, timings);
        batch.forEach((req, i) => {
          const row = i * kmax;
          this.settle(req, () => {
            this.counts.completed++;
            this.latency.add(end - req.enqueuedAt);
            req.resolve({
              distances: result.distances.slice(row, row + req.k),
              labels: result.labels.slice(row, row + req.k),
            });
          });
        });
      },
      (err) => {
        for (const req of batch) {
          this.settle(req, () => {
            this.counts.failed++;
            req.reject(err);
          });
        }
      },
    ).finally(() => {
      this.inFlight--;
      this.schedule();
      this.checkDrained();
    });
  }

  /** Runs `fn` (which resolves or rejects `req`) unless `req` has already settled. */
  private settle(req: Request, fn: () => void): void {
    if (req.settled) return;
    req.settled = true;
    if (req.onAbort) req.signal!.removeEventListener('abort', req.onAbort);
    fn();
  }

  private abort(req: Request): void {
    if (req.settled) return;
    const waitingStill = !req.dispatched;
    this.settle(req, () => {
      this.counts.aborted++;
      req.reject(abortReason(req.signal!));
    });
    // A waiting request leaves the queue's count now; dispatch skips its entry. A dispatched one
    // keeps its batch slot, and its result is dropped by settle().
    if (waitingStill) {
      this.waiting--;
      if (!this.groups.get(req.key)?.peek()) this.groups.delete(req.key);
      this.checkDrained();
    }
  }

  private checkDrained(): void {
    if (this.closed && this.waiting === 0 && this.inFlight === 0 && this.drained) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      this.drained();
      this.drained = null;
    }
  }
}

function positiveInt(name: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new InvalidArgumentError(`${name} must be an integer >= 1; got ${String(v)}`);
  return v;
}

function checkQuery(query: unknown, dim: number): void {
  if (!(query instanceof Float32Array) || query.length !== dim) {
    const got = query instanceof Float32Array ? `a Float32Array of length ${query.length}` : String((query as object)?.constructor?.name ?? query);
    throw new InvalidArgumentError(`query must be a Float32Array of length dim = ${dim}; got ${got}`);
  }
  for (let j = 0; j < dim; j++) {
    if (!Number.isFinite(query[j])) {
      throw new InvalidArgumentError(`query has a non-finite value (${query[j]}) at column ${j}; all values must be finite`);
    }
  }
}

/** `params` checked as far as the scheduler can (see BatchScheduler.search); a copy. */
function checkParams(params: unknown): SearchParams {
  if (params === undefined) return {};
  if (params === null || typeof params !== 'object') {
    throw new InvalidArgumentError(`params must be an object (SearchParams); got ${params === null ? 'null' : typeof params}`);
  }
  const p = { ...(params as SearchParams) };
  if (p.nprobe !== undefined && (typeof p.nprobe !== 'number' || !Number.isInteger(p.nprobe) || p.nprobe < 1)) {
    throw new InvalidArgumentError(`nprobe must be an integer >= 1; got ${String(p.nprobe)}`);
  }
  if (p.kFactor !== undefined) checkKFactor(p.kFactor);
  if (p.filter !== undefined) checkFilter(p.filter);
  if (p.filterMode !== undefined && !['auto', 'pre', 'post'].includes(p.filterMode)) {
    throw new InvalidArgumentError(`filterMode must be auto, pre or post; got ${String(p.filterMode)}`);
  }
  return p;
}

/** A number per filter object, for paramsKey (held weakly: a filter no request holds is forgotten). */
const filterNumbers = new WeakMap<object, number>();
let nextFilterNumber = 0;

/**
 * Requests may share a batch when their keys are equal: the same nprobe and kFactor, the same
 * filter object (or neither; equal contents in two arrays do not count), the same filterMode
 * (absent matches only absent). Timings do not matter (each request gets its batch's).
 */
function paramsKey(p: SearchParams): string {
  let filter = '';
  if (p.filter !== undefined) {
    let n = filterNumbers.get(p.filter);
    if (n === undefined) filterNumbers.set(p.filter, (n = nextFilterNumber++));
    filter = String(n);
  }
  return `${p.nprobe ?? ''}|${p.kFactor ?? ''}|${filter}|${p.filterMode ?? ''}`;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('the search was aborted', 'AbortError');
}
