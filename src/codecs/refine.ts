/**
 * Exact re-ranking of coded indexes (Faiss's `IndexRefine`): the vectors are kept a second time, by
 * slot, as float32 rows (`,RFlat`, IndexRefineFlat) or as SQfp16 codes (`,Refine(SQfp16)`: half the
 * memory, reconstructions within fp16 rounding), and a search's k x kFactor candidates from the
 * codes are re-scored against them (IndexCore's re-score), so the final order and distances are
 * those of the refine rows. Memory: 4 d (Flat) or 2 d (SQfp16) bytes more per vector.
 */
import type { BaseStore, Compute, LiveRows, RowAt } from '../contracts.js';
import { ScalarQuantizer } from './scalar-quantizer.js';
import { sqRowWords, sqRows } from './code-rows.js';

import { InvalidArgumentError } from '../errors.js';

/** What the refine rows are: float32 (`,RFlat`) or SQfp16 codes (`,Refine(SQfp16)`). */
export type RefineKind = 'Flat' | 'SQfp16';

export const REFINE_KINDS: readonly RefineKind[] = ['Flat', 'SQfp16'];

/** Checks an index's `refine` option: undefined, or a RefineKind. */
export function checkRefine(refine: unknown): RefineKind | null {
  if (refine === undefined || refine === null) return null;
  if (!(REFINE_KINDS as readonly unknown[]).includes(refine)) throw new InvalidArgumentError(`refine must be one of ${REFINE_KINDS.join(', ')}; got ${String(refine)}`);
  return refine as RefineKind;
}

/** Words (4 bytes) a refine row takes in a saved index: d floats, or the SQfp16 code's words. */
export function refineWords(kind: RefineKind, d: number): number {
  return kind === 'Flat' ? d : sqRowWords('SQfp16', d);
}

export class RefineRows {
  private store: BaseStore;
  /** Whether rows are codes (saved, compacted and restored as stored). */
  private readonly coded: boolean;

  constructor(
    private readonly compute: Compute,
    private readonly d: number,
    private readonly hostCopy: boolean | undefined,
    readonly kind: RefineKind,
  ) {
    this.coded = kind !== 'Flat';
    this.store = this.newStore();
  }

  private newStore(): BaseStore {
    const format = this.coded ? sqRows(new ScalarQuantizer(this.d, 'SQfp16')) : undefined;
    return this.compute.createBaseStore(this.d, { hostCopy: this.hostCopy }, format);
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

  /** The rows of these slots, as floats (see BaseStore.rowsAt). */
  rowsAt(slots: ArrayLike<number>): Promise<RowAt> {
    return this.store.rowsAt(slots);
  }

  /** The live rows (by `ids`) in slot order, in blocks, as a saved index holds them (refineWords a row). */
  liveRows(ids: LiveRows): AsyncGenerator<Float32Array> {
    return ids.liveRows(this.store.readRows(this.coded), this.coded ? this.store.rowWords : this.d, (row) => row);
  }

  /** Appends rows as `liveRows` gave them (a load), block by block. */
  async restore(blocks: AsyncIterable<Float32Array>): Promise<void> {
    const w = this.coded ? this.store.rowWords : this.d;
    for await (const block of blocks) {
      if (this.coded) await this.store.addStored(block, block.length / w);
      else await this.store.add(block, block.length / w);
    }
  }

  /** A new store holding only the live rows (by `ids`), in slot order: compaction. */
  async compact(ids: LiveRows): Promise<void> {
    const old = this.store;
    this.store = this.newStore();
    try {
      await this.store.reserve(ids.ntotal);
      const rows = ids.liveRows(old.readRows(this.coded), this.coded ? old.rowWords : this.d, (row) => row);
      await this.restore(rows);
    } catch (err) {
      this.store.dispose();
      this.store = old;
      throw err;
    }
    old.dispose();
  }

  /** The store holding the rows (IndexCore.memoryBytes counts its chunks). */
  get rowStore(): BaseStore {
    return this.store;
  }

  /** Rows held. */
  get ntotal(): number {
    return this.store.ntotal;
  }

  reset(): void {
    this.store.reset();
  }

  dispose(): void {
    this.store.dispose();
  }
}
