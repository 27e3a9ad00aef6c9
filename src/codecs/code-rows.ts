/**
 * Rows as codes (RowFormat, src/contracts.ts): packed codes of a scalar quantiser (`sqRows`), a
 * product quantiser (`pqRows`) or binary codes (`bitRows`), each row padded to whole 32-bit words,
 * and how queries are scored against them.
 *
 * Residual coding (IVF, Faiss's `by_residual`, its default): a row of list l is stored as the code
 * of x - c_l (c_l the list's centroid). Scoring then needs each query row's list (`lists` below: a
 * (query, probe) pair's list), and a row's reconstruction is c_l + decode(code).
 */
import type { ScalarQuantizer } from './scalar-quantizer.js';
import type { ProductQuantizer } from './product-quantizer.js';
import type { Lsh } from './lsh.js';
import { norms as hostNorms } from '../cpu/norms.js';
import { type SqCodeKind, paddedDim, sqCodeWords } from '../device.js';
import type { KernelMetric } from '../kernel-facts.js';
import type { QueryTransform, RowFormat } from '../contracts.js';

/** The code layout sq-scores reads for each scalar quantiser. */
const SQ_KIND: Record<ScalarQuantizer['kind'], SqCodeKind> = { SQ8: 'sq8', SQ4: 'sq4', SQfp16: 'fp16' };

/**
 * Rows as a trained scalar quantiser's codes (Faiss's byte layout, each row padded to whole words:
 * the device layout sq-scores reads is those bytes, little-endian), scored by sq-scores with
 * transformed queries; norms are those of the decoded rows, so a search ranks by the distance to
 * the reconstruction, as Faiss's IndexScalarQuantizer does.
 */
export function sqRows(sq: ScalarQuantizer, centroids: Float32Array | null = null): RowFormat {
  const { d, codeSize } = sq;
  const dpad = paddedDim(d);
  const kind = SQ_KIND[sq.kind];
  const rowWords = sqRowWords(sq.kind, d);
  const codesOf = (words: Float32Array, n: number): Uint8Array => storedCodes(words, n, rowWords, codeSize);
  return {
    d,
    dpad,
    rowWords,
    scoring: { kernel: 'sq-scores', kind, transform: sqTransform(sq, centroids) },
    residual: centroids !== null,
    encode(x, n) {
      const codes = sq.encode(x, n);
      return { words: codeWords(codes, n, codeSize, rowWords), norms: normsOf(sq.decode(codes, n), n) };
    },
    stored: (words, n) => ({ words, norms: normsOf(sq.decode(codesOf(words, n), n), n) }),
    row: (words, offset) => sq.decode(codesOf(words.subarray(offset, offset + rowWords), 1), 1),
    rows: (words, n) => sq.decode(codesOf(words, n), n),
  };
}

/**
 * sq-scores' query terms: bias + xq . code = q . decode(code) (ScalarQuantizer.queryTransform). For
 * residual codes of list l, the score must be that of c_l + decode(code): l2 transforms y = q - c_l
 * and adds (||q||^2 - ||y||^2) / 2 to the bias (the plan adds ||q||^2 to the final scores, the
 * kernel scores ||r||^2 - 2 (bias + y . r)); ip transforms q and adds q . c_l.
 */
function sqTransform(sq: ScalarQuantizer, centroids: Float32Array | null): QueryTransform {
  const d = sq.d;
  return (xq, nq, metric, lists) => {
    if (!centroids) return sq.queryTransform(xq, nq);
    const { y, extra } = residualQueries(xq, nq, d, metric, centroids, lists!);
    const t = sq.queryTransform(y, nq);
    for (let i = 0; i < nq; i++) t.qbias[i] += metric === 'l2' ? extra[i] / 2 : extra[i];
    return t;
  };
}

/**
 * For residual scoring: l2: y = q - c_l and extra = ||q||^2 - ||y||^2; ip: y = q and extra = q . c_l
 * (float64, for each query row i with list lists[i]).
 */
function residualQueries(xq: Float32Array, nq: number, d: number, metric: KernelMetric, centroids: Float32Array, lists: Uint32Array): { y: Float32Array; extra: Float64Array } {
  const y = metric === 'l2' ? new Float32Array(nq * d) : xq;
  const extra = new Float64Array(nq);
  const qn = metric === 'l2' ? hostNorms(xq, nq, d) : null;
  for (let i = 0; i < nq; i++) {
    const c0 = lists[i] * d;
    let s = 0;
    for (let j = 0; j < d; j++) {
      const q = xq[i * d + j];
      const c = centroids[c0 + j];
      if (metric === 'l2') {
        const v = (y[i * d + j] = q - c);
        s += v * v;
      } else s += q * c;
    }
    extra[i] = metric === 'l2' ? qn![i] - s : s;
  }
  return { y, extra };
}

/**
 * Rows as a trained product quantiser's codes (Faiss's packing, each row padded to whole words),
 * scored by pq-tables and pq-scores: l2 tables of y (q, or q - c_l for residual codes) give
 * ||y - r||^2 = ||q - reconstruction||^2, and the bias -||q||^2 leaves the plan's ||q||^2 to add;
 * ip tables of q give -q . r, and the bias -q . c_l for residual codes.
 */
export function pqRows(pq: ProductQuantizer, centroids: Float32Array | null = null): RowFormat {
  const { d, M, nbits, ksub, dsub, codeSize } = pq;
  const dpad = paddedDim(d);
  const rowWords = pqRowWords(M, nbits);
  const codesOf = (words: Float32Array, n: number): Uint8Array => storedCodes(words, n, rowWords, codeSize);
  const transform: QueryTransform = (xq, nq, metric, lists) => {
    if (metric === 'l2') {
      const qn = hostNorms(xq, nq, d);
      const qbias = Float32Array.from(qn, (v) => -v);
      return { xq: centroids ? residualQueries(xq, nq, d, metric, centroids, lists!).y : xq, qbias };
    }
    const qbias = new Float32Array(nq);
    if (centroids) residualQueries(xq, nq, d, metric, centroids, lists!).extra.forEach((v, i) => (qbias[i] = -v));
    return { xq, qbias };
  };
  return {
    d,
    dpad,
    rowWords,
    scoring: { kernel: 'pq-scores', M, nbits, ksub, dsub, codebook: pq.tables(), transform },
    residual: centroids !== null,
    encode: null,
    // pq-scores reads no norms; range search's rounding margin does (of the decoded rows).
    stored: (words, n) => ({ words, norms: normsOf(pq.decode(codesOf(words, n), n), n) }),
    row: (words, offset) => pq.decode(codesOf(words.subarray(offset, offset + rowWords), 1), 1),
    rows: (words, n) => pq.decode(codesOf(words, n), n),
  };
}

/**
 * Rows as binary codes (src/codecs/lsh.ts: d bits a row, bit j of the row at bit j & 31 of word
 * j >> 5), scored by hamming-scores against the queries' own codes. A row's reconstruction, and so
 * what the index's re-score compares, is in the codes' space (rotated where the LSH rotates: the
 * index moves its queries there too, Codec.toCodeSpace). Norms (range search's margin) are those
 * reconstructions'.
 */
export function bitRows(lsh: Lsh): RowFormat {
  const { d, codeWords } = lsh;
  const words = (w: Float32Array, n: number): Uint32Array => new Uint32Array(w.buffer, w.byteOffset, n * codeWords);
  return {
    d,
    dpad: paddedDim(d),
    rowWords: codeWords,
    scoring: { kernel: 'hamming-scores', encode: (xq, nq) => lsh.encode(xq, nq) },
    residual: false,
    encode(x, n) {
      const codes = lsh.encode(x, n);
      return { words: new Float32Array(codes.buffer, codes.byteOffset, codes.length), norms: normsOf(lsh.decode(codes, n), n) };
    },
    stored: (w, n) => ({ words: w, norms: normsOf(lsh.decode(words(w, n), n), n) }),
    row: (w, offset) => lsh.decode(words(w.subarray(offset, offset + codeWords), 1), 1),
    rows: (w, n) => lsh.decode(words(w, n), n),
  };
}

/**
 * `n` codes (`n * codeSize` bytes, as Faiss lays them out) as stored rows of `rowWords` words
 * (each row's bytes, then zeros; a Float32Array over the words' bits).
 */
export function codeWords(codes: Uint8Array, n: number, codeSize: number, rowWords: number): Float32Array {
  const words = new Float32Array(n * rowWords);
  const bytes = new Uint8Array(words.buffer);
  for (let i = 0; i < n; i++) bytes.set(codes.subarray(i * codeSize, (i + 1) * codeSize), i * rowWords * 4);
  return words;
}

/** The codes of `n` rows stored in `words` (rows of rowWords words), as Faiss lays them out: `codeWords` undone. */
function storedCodes(words: Float32Array, n: number, rowWords: number, codeSize: number): Uint8Array {
  const bytes = new Uint8Array(words.buffer, words.byteOffset, n * rowWords * 4);
  if (rowWords * 4 === codeSize) return bytes;
  const out = new Uint8Array(n * codeSize);
  for (let i = 0; i < n; i++) out.set(bytes.subarray(i * rowWords * 4, i * rowWords * 4 + codeSize), i * codeSize);
  return out;
}

/** Words a stored row of PQ<M>x<nbits> codes takes: ceil(M * nbits / 32). */
export function pqRowWords(M: number, nbits: number): number {
  return Math.ceil((M * nbits) / 32);
}

/** The squared norms of `n` rows of `d` floats, summed in dimension order. */
function normsOf(x: Float32Array, n: number): Float32Array {
  const d = x.length / Math.max(1, n);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let j = i * d; j < (i + 1) * d; j++) s += x[j] * x[j];
    out[i] = s;
  }
  return out;
}

/**
 * Words a stored row of a scalar quantiser's codes takes: whole words, and as many as sq-scores
 * reads for `dpad` dimensions (the padding codes are 0).
 */
export function sqRowWords(kind: ScalarQuantizer['kind'], d: number): number {
  const codeBytes = kind === 'SQ8' ? d : kind === 'SQ4' ? Math.ceil(d / 2) : 2 * d;
  return Math.max(Math.ceil(codeBytes / 4), sqCodeWords(SQ_KIND[kind], paddedDim(d)));
}

/** Floats of a scalar quantiser's trained tables: vmin and vdiff per dimension (none for SQfp16). */
export function sqTableFloats(kind: ScalarQuantizer['kind'], d: number): number {
  return kind === 'SQfp16' ? 0 : 2 * d;
}
