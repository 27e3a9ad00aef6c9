/**
 * Inverted lists on the host: per list, its vectors (rows of d) and their ids, appended in add
 * order. This is an IVF index's host copy (`save` and the exact re-score read it); searches scan
 * the device's copy (src/stores/inverted-lists.ts), whose norms the device computes. `csr()` lays
 * the lists out as the index file stores them: one array of vectors grouped by list, one of ids,
 * and `offsets[nlist + 1]` (list L is `[offsets[L], offsets[L + 1])`).
 */
import type { HostRows } from './rescore.js';

export interface IvfCsr {
  /** `ntotal * d` floats. */
  xb: Float32Array;
  ids: Uint32Array;
  offsets: Uint32Array;
}

/** One list's rows and ids, with spare capacity; `size` of them are in use. */
interface List {
  vectors: Float32Array;
  ids: Uint32Array;
  size: number;
}

export class IvfLists {
  /**
   * Only the lists that hold vectors have storage (a Map keyed by list number), so that an index
   * with a huge nlist costs nothing until vectors are added.
   */
  private lists = new Map<number, List>();
  ntotal = 0;
  private cache: IvfCsr | null = null;
  /** Each id's row in the CSR layout (see hostRows); cleared with the cache. */
  private rowOfId: Uint32Array | null = null;

  constructor(
    readonly d: number,
    readonly nlist: number,
  ) {}

  /** Appends rows of `x` (`n * d`) to the lists `listOf[i]`, with ids `id0 + i` or `ids[i]`. */
  add(x: Float32Array, n: number, listOf: Uint32Array, id0: number | Uint32Array): void {
    const d = this.d;
    const counts = new Map<number, number>();
    for (let i = 0; i < n; i++) counts.set(listOf[i], (counts.get(listOf[i]) ?? 0) + 1);
    for (const [l, count] of counts) {
      const list = this.lists.get(l) ?? { vectors: new Float32Array(0), ids: new Uint32Array(0), size: 0 };
      const need = list.size + count;
      if (need > list.ids.length) {
        const cap = Math.max(need, 2 * list.ids.length, 8);
        const v = new Float32Array(cap * d);
        v.set(list.vectors.subarray(0, list.size * d));
        const ii = new Uint32Array(cap);
        ii.set(list.ids.subarray(0, list.size));
        list.vectors = v;
        list.ids = ii;
      }
      this.lists.set(l, list);
    }
    for (let i = 0; i < n; i++) {
      const list = this.lists.get(listOf[i])!;
      const at = list.size++;
      list.vectors.set(x.subarray(i * d, (i + 1) * d), at * d);
      list.ids[at] = typeof id0 === 'number' ? id0 + i : id0[i];
    }
    this.ntotal += n;
    this.cache = null;
    this.rowOfId = null;
  }

  /** Number of vectors in each list. */
  listSizes(): Uint32Array {
    const sizes = new Uint32Array(this.nlist);
    for (const [l, list] of this.lists) sizes[l] = list.size;
    return sizes;
  }

  /** The CSR layout (cached until the next add or reset). */
  csr(): IvfCsr {
    if (this.cache) return this.cache;
    const d = this.d;
    const sizes = this.listSizes();
    const offsets = new Uint32Array(this.nlist + 1);
    for (let l = 0; l < this.nlist; l++) offsets[l + 1] = offsets[l] + sizes[l];
    const xb = new Float32Array(this.ntotal * d);
    const ids = new Uint32Array(this.ntotal);
    for (const [l, list] of this.lists) {
      xb.set(list.vectors.subarray(0, list.size * d), offsets[l] * d);
      ids.set(list.ids.subarray(0, list.size), offsets[l]);
    }
    this.cache = { xb, ids, offsets };
    return this.cache;
  }

  /**
   * The vectors by id, for the exact re-score (src/rescore.ts): the CSR rows and each id's row in
   * them. Cached with the CSR layout.
   */
  hostRows(): HostRows {
    const csr = this.csr();
    if (!this.rowOfId) {
      this.rowOfId = new Uint32Array(this.ntotal);
      csr.ids.forEach((id, row) => (this.rowOfId![id] = row));
    }
    return { xb: csr.xb, rowOf: this.rowOfId };
  }

  reset(): void {
    this.lists.clear();
    this.ntotal = 0;
    this.cache = null;
    this.rowOfId = null;
  }
}
