/**
 * BatchScheduler: single queries in, batched searches out. A GPU is fast only when it is given
 * many queries at once, while callers (a web service, a pipeline stage) send one at a time.
 *
 * Requests that arrive while a batch is running, or within `maxDelayMs` of the first waiting one,
 * are searched together in one `index.search` call (at the largest k asked for, each result then
 * cut to its own k). At most `index.maxConcurrentSearches` batches (default 1) are in flight; the
 * next batch gathers in the queue meanwhile.
 *
 * Every request settles exactly once: with its own result or its own error. A bad query fails
 * alone, at once. An aborted request is dropped from the queue, or its result is dropped if its
 * batch already ran. A full queue rejects new requests at once with QueueFullError.
 */
import type { SearchResult } from './types.js';
import { InvalidArgumentError, checkK } from './types.js';

/** What the scheduler needs of an index (FlatIndex and IvfFlatIndex qualify). */
export interface SearchableIndex {
  readonly dim: number;
  readonly backend: { readonly maxK: number };
  search(xq: Float32Array, k: number): Promise<SearchResult>;
  /** Batches the index can run at once (default 1). */
  readonly maxConcurrentSearches?: number;
}

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
}

/** Rejection of a request when the queue already holds `maxQueue` requests. */
export class QueueFullError extends Error {
  override name = 'QueueFullError';
}

/** Rejection of a request made after `close()`. */
export class SchedulerClosedError extends Error {
  override name = 'SchedulerClosedError';
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
  resolve: (r: SearchResult) => void;
  reject: (e: unknown) => void;
  enqueuedAt: number;
  dispatchedAt: number;
  /** Set once the promise is settled; nothing settles it again. */
  settled: boolean;
  signal?: AbortSignal;
  onAbort?: () => void;
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
  /** Waiting requests in arrival order; aborted ones are removed lazily (head) or on abort. */
  private queue: Request[] = [];
  private head = 0;
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
   */
  search(query: Float32Array, k: number, options: SchedulerSearchOptions = {}): Promise<SearchResult> {
    const { signal } = options;
    try {
      if (this.closed) throw new SchedulerClosedError('the scheduler is closed; no new searches are accepted');
      checkQuery(query, this.index.dim);
      checkK(k, this.index.backend.maxK);
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
      const req: Request = { query: query.slice(), k, resolve, reject, enqueuedAt: performance.now(), dispatchedAt: 0, settled: false, signal };
      if (signal) {
        req.onAbort = () => this.abort(req);
        signal.addEventListener('abort', req.onAbort, { once: true });
      }
      this.queue.push(req);
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

  /** The oldest waiting request (skipping aborted entries); call only while `waiting > 0`. */
  private oldest(): Request {
    while (this.queue[this.head].settled) this.head++;
    return this.queue[this.head];
  }

  private dispatch(): void {
    const batch: Request[] = [];
    while (batch.length < this.maxBatch && this.head < this.queue.length) {
      const req = this.queue[this.head++];
      if (req.settled) continue; // aborted while waiting
      batch.push(req);
    }
    // Compact the queue once its consumed head dominates it.
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
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
    let search: Promise<SearchResult>;
    try {
      search = this.index.search(xq, kmax);
    } catch (err) {
      search = Promise.reject(err);
    }
    search.then(
      (result) => {
        const end = performance.now();
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
    const waitingStill = req.dispatchedAt === 0;
    this.settle(req, () => {
      this.counts.aborted++;
      req.reject(abortReason(req.signal!));
    });
    // A waiting request leaves the queue's count now; dispatch skips its entry. A dispatched one
    // keeps its batch slot, and its result is dropped by settle().
    if (waitingStill) {
      this.waiting--;
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

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('the search was aborted', 'AbortError');
}
