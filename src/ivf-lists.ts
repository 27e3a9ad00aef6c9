/**
 * Inverted lists on the host: per list, its vectors (rows of d), their squared norms and their ids,
 * appended in add order. `csr()` lays them out as the kernels read them: one array of vectors
 * grouped by list, one of norms, one of ids, and `offsets[nlist + 1]` (list L is
 * `[offsets[L], offsets[L + 1])`). Both backends scan this same layout.
 */
import { norms } from './cpu/norms.js';
import type { HostRows } from './rescore.js';

export interface IvfCsr {
  /** `ntotal * dpad` floats, rows zero-padded to `dpad`. */
  xb: Float32Array;
  xnorm: Float32Array;
  ids: Uint32Array;
  offsets: Uint32Array;
  dpad: number;
}

export class IvfLists {
  private vectors: Float32Array[];
  private norms: Float32Array[];
  private idLists: Uint32Array[];
  private sizes: Uint32Array;
  ntotal = 0;
  /** Bumped by every change, so that device copies know when they are stale. */
  version = 0;
  private cache = new Map<number, IvfCsr>();
  /** Each id's row in the CSR layout (see hostRows); cleared with the cache. */
  private rowOfId: Uint32Array | null = null;

  constructor(
    readonly d: number,
    readonly nlist: number,
  ) {
    this.vectors = Array.from({ length: nlist }, () => new Float32Array(0));
    this.norms = Array.from({ length: nlist }, () => new Float32Array(0));
    this.idLists = Array.from({ length: nlist }, () => new Uint32Array(0));
    this.sizes = new Uint32Array(nlist);
  }

  /** Appends rows of `x` (`n * d`) to the lists `listOf[i]`, with ids `id0 + i` or `ids[i]`. */
  add(x: Float32Array, n: number, listOf: Uint32Array, id0: number | Uint32Array): void {
    const d = this.d;
    const xn = norms(x, n, d);
    const counts = new Uint32Array(this.nlist);
    for (let i = 0; i < n; i++) counts[listOf[i]]++;
    for (let l = 0; l < this.nlist; l++) {
      const need = this.sizes[l] + counts[l];
      if (need > this.norms[l].length) {
        const cap = Math.max(need, 2 * this.norms[l].length, 8);
        const v = new Float32Array(cap * d);
        v.set(this.vectors[l].subarray(0, this.sizes[l] * d));
        const nn = new Float32Array(cap);
        nn.set(this.norms[l].subarray(0, this.sizes[l]));
        const ii = new Uint32Array(cap);
        ii.set(this.idLists[l].subarray(0, this.sizes[l]));
        this.vectors[l] = v;
        this.norms[l] = nn;
        this.idLists[l] = ii;
      }
    }
    for (let i = 0; i < n; i++) {
      const l = listOf[i];
      const at = this.sizes[l]++;
      this.vectors[l].set(x.subarray(i * d, (i + 1) * d), at * d);
      this.norms[l][at] = xn[i];
      this.idLists[l][at] = typeof id0 === 'number' ? id0 + i : id0[i];
    }
    this.ntotal += n;
    this.version++;
    this.cache.clear();
    this.rowOfId = null;
  }

  /** Number of vectors in each list. */
  listSizes(): Uint32Array {
    return this.sizes.slice();
  }

  /** The CSR layout with rows padded to `dpad` floats (cached until the next add or reset). */
  csr(dpad: number): IvfCsr {
    const hit = this.cache.get(dpad);
    if (hit) return hit;
    const d = this.d;
    const offsets = new Uint32Array(this.nlist + 1);
    for (let l = 0; l < this.nlist; l++) offsets[l + 1] = offsets[l] + this.sizes[l];
    const xb = new Float32Array(this.ntotal * dpad);
    const xnorm = new Float32Array(this.ntotal);
    const ids = new Uint32Array(this.ntotal);
    for (let l = 0; l < this.nlist; l++) {
      const o = offsets[l];
      const size = this.sizes[l];
      if (dpad === d) xb.set(this.vectors[l].subarray(0, size * d), o * d);
      else for (let i = 0; i < size; i++) xb.set(this.vectors[l].subarray(i * d, (i + 1) * d), (o + i) * dpad);
      xnorm.set(this.norms[l].subarray(0, size), o);
      ids.set(this.idLists[l].subarray(0, size), o);
    }
    const out = { xb, xnorm, ids, offsets, dpad };
    this.cache.set(dpad, out);
    return out;
  }

  /**
   * The vectors by id, for the exact re-score (src/rescore.ts): the CSR rows (unpadded) and each
   * id's row in them. Cached with the CSR layout.
   */
  hostRows(): HostRows {
    const csr = this.csr(this.d);
    if (!this.rowOfId) {
      this.rowOfId = new Uint32Array(this.ntotal);
      csr.ids.forEach((id, row) => (this.rowOfId![id] = row));
    }
    return { xb: csr.xb, rowOf: this.rowOfId };
  }

  reset(): void {
    for (let l = 0; l < this.nlist; l++) {
      this.vectors[l] = new Float32Array(0);
      this.norms[l] = new Float32Array(0);
      this.idLists[l] = new Uint32Array(0);
    }
    this.sizes.fill(0);
    this.ntotal = 0;
    this.version++;
    this.cache.clear();
    this.rowOfId = null;
  }
}
