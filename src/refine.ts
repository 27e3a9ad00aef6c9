/**
 * Exact re-ranking of coded indexes (Faiss's `IndexRefineFlat`, the factory suffix `,RFlat`): the
 * vectors are kept a second time as float32 rows, by slot, and a search's k x kFactor candidates
 * from the codes are re-scored against them (IndexCore's re-score), so the final order and
 * distances are exact. Memory: 4 d bytes more per vector, on the device's side of the store.
 */
import type { Backend, BaseStore } from './backend.js';
import type { IdMap } from './ids.js';
import type { RowAt } from './stores/rows.js';

export class RefineRows {
  private store: BaseStore;

  constructor(
    private readonly backend: Backend,
    private readonly d: number,
    private readonly hostCopy: boolean | undefined,
  ) {
    this.store = backend.createBaseStore(d, { hostCopy });
  }

  /** Appends `n` prepared rows (slots continue from the rows held). */
  add(x: Float32Array, n: number): Promise<void> {
    return this.store.add(x, n);
  }

  /** Makes room for `n` more rows (see BaseStore.reserve). */
  reserve(n: number): Promise<void> {
    return this.store.reserve(n);
  }

  mark(): number[] {
    return this.store.mark();
  }

  rollback(mark: number[]): void {
    this.store.rollback(mark);
  }

  /** The rows of these slots (see BaseStore.rowsAt). */
  rowsAt(slots: ArrayLike<number>): Promise<RowAt> {
    return this.store.rowsAt(slots);
  }

  /** The live rows (by `ids`) in slot order, in blocks: what save writes. */
  liveRows(ids: IdMap): AsyncGenerator<Float32Array> {
    return ids.liveRows(this.store.readRows(), this.d, (row) => row);
  }

  /** A new store holding only the live rows (by `ids`), in slot order: compaction. */
  async compact(ids: IdMap): Promise<void> {
    const store = this.backend.createBaseStore(this.d, { hostCopy: this.hostCopy });
    try {
      await store.reserve(ids.ntotal);
      for await (const block of this.liveRows(ids)) await store.add(block, block.length / this.d);
    } catch (err) {
      store.dispose();
      throw err;
    }
    this.store.dispose();
    this.store = store;
  }

  reset(): void {
    this.store.reset();
  }

  dispose(): void {
    this.store.dispose();
  }
}
