/**
 * Product quantisation (Faiss's `ProductQuantizer`): a `d`-dimensional vector is cut into M
 * sub-vectors of dsub = d / M dimensions; each is replaced by the number of its nearest of ksub =
 * 2^nbits centroids, trained by k-means on that sub-space (the project's own k-means, on the
 * backend's device). A code is M numbers of nbits bits, packed little-endian as Faiss packs them
 * (`PQEncoderGeneric`: code m at bits [m * nbits, (m + 1) * nbits) of the byte string), so
 * codeSize = ceil(M * nbits / 8) bytes.
 *
 * Searching compares a query with a code by asymmetric distance computation (ADC): a table of the
 * query's distance (or negated inner product) to every centroid of every sub-space, then one
 * lookup per sub-quantizer (kernels pq-tables and pq-scores). The tables and codes are the same on
 * every backend; training and encoding run on the backend (k-means and a flat search per
 * sub-space), so the GPU and the CPU train the same centroids up to float rounding.
 */
import type { Compute } from '../contracts.js';
import { PQ_MAX_NBITS, PQ_MIN_NBITS } from '../device.js';
import { KMeans } from './kmeans.js';
import { checkDim } from '../types.js';
import { InvalidArgumentError } from '../errors.js';

/** Rows encoded at once (each sub-space's rows are gathered into one block of this many). */
const ENCODE_BLOCK = 1 << 16;

export interface PqTrainOptions {
  /** k-means iterations per sub-quantizer (default 25, as Faiss's ProductQuantizer). */
  niter?: number;
  /** Seed of sub-quantizer m's k-means is seed + m (default 1234). */
  seed?: number;
  /** Training points per centroid, sampled (default 256, as Faiss). */
  maxPointsPerCentroid?: number;
}

export class ProductQuantizer {
  readonly d: number;
  readonly M: number;
  readonly nbits: number;
  readonly dsub: number;
  readonly ksub: number;
  /** Bytes per code: ceil(M * nbits / 8), as Faiss's `code_size`. */
  readonly codeSize: number;
  /** M * ksub centroids of dsub floats (Faiss's `centroids` layout), or null before training. */
  private codebook: Float32Array | null = null;

  constructor(d: number, M: number, nbits = 8) {
    this.d = checkDim(d);
    if (!Number.isInteger(M) || M < 1 || d % M !== 0) {
      throw new InvalidArgumentError(`PQ: M (sub-quantizers) must be an integer >= 1 that divides d = ${d}; got ${String(M)}`);
    }
    if (!Number.isInteger(nbits) || nbits < PQ_MIN_NBITS || nbits > PQ_MAX_NBITS) {
      throw new InvalidArgumentError(`PQ: nbits must be an integer in [${PQ_MIN_NBITS}, ${PQ_MAX_NBITS}]; got ${String(nbits)}`);
    }
    this.M = M;
    this.nbits = nbits;
    this.dsub = d / M;
    this.ksub = 1 << nbits;
    this.codeSize = Math.ceil((M * nbits) / 8);
  }

  get isTrained(): boolean {
    return this.codebook !== null;
  }

  /** The trained centroids (M * ksub * dsub floats): what `fromTables` restores. */
  tables(): Float32Array {
    return this.requireCodebook().slice();
  }

  /** A trained quantiser from `tables()`: M * 2^nbits * d / M finite floats. */
  static fromTables(d: number, M: number, nbits: number, codebook: Float32Array): ProductQuantizer {
    const pq = new ProductQuantizer(d, M, nbits);
    const want = M * pq.ksub * pq.dsub;
    if (!(codebook instanceof Float32Array) || codebook.length !== want) {
      throw new InvalidArgumentError(`PQ${M}x${nbits} tables for d = ${d} must be ${want} floats (M * 2^nbits * d / M); got ${codebook?.length}`);
    }
    const bad = codebook.findIndex((v) => !Number.isFinite(v));
    if (bad >= 0) {
      const c = Math.floor(bad / pq.dsub);
      throw new InvalidArgumentError(
        `${pq.tableName}: sub-quantizer ${Math.floor(c / pq.ksub)}, centroid ${c % pq.ksub}, component ${bad % pq.dsub} is ${codebook[bad]}; expected a finite value`,
      );
    }
    pq.codebook = codebook.slice();
    return pq;
  }

  /** What messages call the trained tables (the codec spelt as the factory spells it: PQ16, PQ16x4). */
  get tableName(): string {
    return `PQ${this.M}${this.nbits === 8 ? '' : `x${this.nbits}`} codebook`;
  }

  /**
   * The largest squared norm a code's reconstruction can have (float64: in each sub-space the
   * largest squared norm of its centroids, summed), and the centroid that contributes most (see
   * Codec.checkBound).
   */
  largestReconstruction(): { norm2: number; most: string } {
    const { M, ksub } = this;
    let norm2 = 0;
    let most = 0;
    let mostNorm2 = -1;
    for (let m = 0; m < M; m++) {
      let sub = 0;
      for (let c = m * ksub; c < (m + 1) * ksub; c++) {
        const s = this.centroidNorm2(c);
        sub = Math.max(sub, s);
        if (s > mostNorm2) [most, mostNorm2] = [c, s];
      }
      norm2 += sub;
    }
    return { norm2, most: `sub-quantizer ${Math.floor(most / ksub)}, centroid ${most % ksub} the most` };
  }

  /** Squared norm (float64) of centroid `c` (sub-quantizer c / ksub, number c % ksub). */
  private centroidNorm2(c: number): number {
    const codebook = this.requireCodebook();
    let s = 0;
    for (let t = c * this.dsub; t < (c + 1) * this.dsub; t++) s += codebook[t] * codebook[t];
    return s;
  }

  private requireCodebook(): Float32Array {
    if (!this.codebook) throw new InvalidArgumentError(`PQ${this.M}x${this.nbits}: not trained`);
    return this.codebook;
  }

  /** Sub-vector m of rows [0, n) of `x` (`n * d`) as `n * dsub` floats. */
  private subvectors(x: Float32Array, n: number, m: number): Float32Array {
    const { d, dsub } = this;
    const out = new Float32Array(n * dsub);
    for (let i = 0; i < n; i++) out.set(x.subarray(i * d + m * dsub, i * d + (m + 1) * dsub), i * dsub);
    return out;
  }

  /**
   * Trains the M sub-quantizers on `n` rows of `x` (`n * d`): k-means with ksub centroids in each
   * sub-space (at least ksub rows are needed; Faiss asks for 39 per centroid to train well).
   */
  async train(compute: Compute, x: Float32Array, n: number, options: PqTrainOptions = {}): Promise<void> {
    if (n < this.ksub) {
      throw new InvalidArgumentError(`PQ${this.M}x${this.nbits} training needs at least 2^nbits = ${this.ksub} vectors; got ${n}`);
    }
    const codebook = new Float32Array(this.M * this.ksub * this.dsub);
    const seed = options.seed ?? 1234;
    for (let m = 0; m < this.M; m++) {
      const kmeans = new KMeans(compute, { dim: this.dsub });
      const { centroids } = await kmeans.train(this.subvectors(x, n, m), {
        k: this.ksub,
        niter: options.niter ?? 25,
        seed: seed + m,
        maxPointsPerCentroid: options.maxPointsPerCentroid ?? 256,
      });
      codebook.set(centroids, m * this.ksub * this.dsub);
    }
    this.codebook = codebook;
  }

  /**
   * The codes of `n` rows of `x` (`n * d`): each sub-vector's nearest centroid (squared L2, ties
   * to the smaller number), found by a flat search on the backend, packed into `n * codeSize` bytes.
   */
  async encode(compute: Compute, x: Float32Array, n: number): Promise<Uint8Array> {
    const codebook = this.requireCodebook();
    const { M, ksub, dsub } = this;
    const codes = new Uint8Array(n * this.codeSize);
    const nearest = new Uint16Array(Math.min(n, ENCODE_BLOCK) * M);
    const stores = [];
    try {
      for (let m = 0; m < M; m++) {
        const store = compute.createBaseStore(dsub, { hostCopy: false });
        stores.push(store);
        await store.add(codebook.subarray(m * ksub * dsub, (m + 1) * ksub * dsub), ksub);
      }
      for (let i0 = 0; i0 < n; i0 += ENCODE_BLOCK) {
        const rows = Math.min(ENCODE_BLOCK, n - i0);
        const block = x.subarray(i0 * this.d, (i0 + rows) * this.d);
        for (let m = 0; m < M; m++) {
          const { labels } = await compute.searchFlat(stores[m], this.subvectors(block, rows, m), rows, 1, 'l2');
          for (let i = 0; i < rows; i++) nearest[i * M + m] = labels[i];
        }
        for (let i = 0; i < rows; i++) this.pack(nearest.subarray(i * M, (i + 1) * M), codes, (i0 + i) * this.codeSize);
      }
    } finally {
      for (const s of stores) s.dispose();
    }
    return codes;
  }

  /** Writes the M numbers of `code` into `out` at byte `at`, nbits each, little-endian (the bytes must be zero). */
  private pack(code: ArrayLike<number>, out: Uint8Array, at: number): void {
    const { nbits } = this;
    for (let m = 0; m < this.M; m++) {
      let v = code[m];
      let bit = m * nbits;
      let left = nbits;
      while (left > 0) {
        const byte = at + (bit >>> 3);
        const s = bit & 7;
        const take = Math.min(left, 8 - s);
        out[byte] |= (v & ((1 << take) - 1)) << s;
        v >>>= take;
        bit += take;
        left -= take;
      }
    }
  }

  /** The M numbers of the code at byte `at` of `codes`, into `out`. */
  unpack(codes: Uint8Array, at: number, out: Uint16Array): void {
    const { nbits } = this;
    for (let m = 0; m < this.M; m++) {
      let v = 0;
      let bit = m * nbits;
      let got = 0;
      while (got < nbits) {
        const s = bit & 7;
        const take = Math.min(nbits - got, 8 - s);
        v |= ((codes[at + (bit >>> 3)] >>> s) & ((1 << take) - 1)) << got;
        got += take;
        bit += take;
      }
      out[m] = v;
    }
  }

  /** The reconstructions of `n` codes (`n * codeSize` bytes): each sub-vector its centroid. */
  decode(codes: Uint8Array, n: number): Float32Array {
    const codebook = this.requireCodebook();
    const { M, ksub, dsub } = this;
    const out = new Float32Array(n * this.d);
    const code = new Uint16Array(M);
    for (let i = 0; i < n; i++) {
      this.unpack(codes, i * this.codeSize, code);
      for (let m = 0; m < M; m++) {
        const c0 = (m * ksub + code[m]) * dsub;
        out.set(codebook.subarray(c0, c0 + dsub), i * this.d + m * dsub);
      }
    }
    return out;
  }
}
