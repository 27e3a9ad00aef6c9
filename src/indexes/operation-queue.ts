/**
 * Call order for the operations on one index, on every backend. A mutation (add, train, reset,
 * load, dispose) starts only when every operation called before it has settled; a search starts
 * when every mutation called before it has settled, and may overlap other searches. So a search
 * sees each add or reset called before it, even if the caller did not await them, and concurrent
 * adds land whole, in call order.
 *
 * A failed operation does not block the ones after it: it rejects its own promise only.
 * `close` (an index's dispose) is the last mutation: every call after it is refused at once.
 */
import { InvalidArgumentError } from '../errors.js';

export class OperationQueue {
  private closed = false;

  /** `owner` names the index in the error of a call after close ("FlatIndex"). */
  constructor(private readonly owner: string) {}

  /** Throws if the queue was closed; an index calls it first thing in every public method. */
  checkOpen(what: string): void {
    if (this.closed) throw new InvalidArgumentError(`${this.owner}.${what}: the index was disposed`);
  }

  /** Runs `fn` as the last mutation; later calls are refused, and closing twice does nothing. */
  close(fn: () => Promise<void>): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    return this.mutate(fn);
  }

  /** Settles when every mutation called so far has settled. */
  private mutations: Promise<void> = Promise.resolve();
  /** Searches called since the last mutation and not yet settled. */
  private searches = new Set<Promise<void>>();

  /** Runs `fn` alone, after every operation called before it. */
  mutate<T>(fn: () => Promise<T>): Promise<T> {
    const before = Promise.all([this.mutations, ...this.searches]);
    const run = before.then(fn);
    this.mutations = run.then(ignore, ignore);
    this.searches = new Set();
    return run;
  }

  /** Runs `fn` after every mutation called before it, alongside other searches. */
  search<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.mutations.then(fn);
    const settled = run.then(ignore, ignore);
    const searches = this.searches;
    searches.add(settled);
    void settled.then(() => searches.delete(settled));
    return run;
  }
}

function ignore(): void {}
