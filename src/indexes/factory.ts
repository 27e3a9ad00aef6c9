/**
 * Faiss-style index factory strings, spelt as Faiss spells them:
 *   [IVF<nlist>,]<storage>[,RFlat | ,Refine(SQfp16)]
 *   <transform>,Flat[,RFlat | ,Refine(SQfp16)]
 * where a transform (src/codecs/transforms.ts) is `Prefix<p>` (our own key: the first p dimensions, for
 * Matryoshka embeddings; Faiss has none), `PCA<p>` or `PCAR<p>` (Faiss's), searched on p-dim
 * rows and re-ranked against the full rows with a refine suffix: "PCAR64,Flat,RFlat".
 * where storage is `Flat` (float32 rows) or a codec (src/codecs/codec.ts): `SQ8`, `SQ4`,
 * `SQfp16`, `PQ<M>`, `PQ<M>x<nbits>`, and without IVF the binary `LSH`, `LSHr`, `LSHt`, `LSHrt`; `,RFlat` (codecs only) keeps the float32 vectors for an
 * exact re-rank of k x kFactor candidates, `,Refine(SQfp16)` keeps SQfp16 codes for it instead. Examples: "Flat", "IVF1024,Flat", "SQ8", "PQ16",
 * "PQ32x4", "IVF1024,SQ8", "IVF1024,PQ16", "IVF1024,PQ16,RFlat". What the factory makes is seen
 * through VectorIndex only (plus what VectorIndex adds), never as a concrete class.
 */
import type { Backend } from '../backend/backend.js';
import { type CodecSpec, codecName, parseCodec } from '../codecs/codec.js';
import { FlatIndex } from './flat/flat-index.js';
import { IvfFlatIndex } from './ivf/ivf-flat-index.js';
import type { RefineKind } from '../codecs/refine.js';
import { type TransformSpec, parseTransform, transformName } from '../codecs/transforms.js';
import type { Metric } from '../types.js';
import { InvalidArgumentError } from '../types.js';
import type { VectorIndex } from './vector-index.js';

export const FACTORY_FORMS =
  '"[IVF<nlist>,]STORAGE[,RFlat | ,Refine(SQfp16)]" with STORAGE Flat, SQ8, SQ4, SQfp16, PQ<M>, PQ<M>x<nbits> (nbits 4..8) or (without IVF) LSH, LSHr, LSHt, LSHrt; or "T,Flat[,RFlat]" with a transform T Prefix<p>, PCA<p> or PCAR<p> (p <= d); for example "Flat", "IVF1024,Flat", "SQ8", "PQ16", "IVF1024,PQ16,RFlat", "LSHrt,RFlat", "PCAR64,Flat,RFlat"';

/** What a factory string describes, checked without creating anything (dim is checked on creation: PQ's M must divide it). */
export interface IndexType {
  /** `IVF` for inverted lists (nlist of them), else `Flat`. */
  type: 'Flat' | 'IVF';
  /** IVF: the number of lists; 0 for Flat. */
  nlist: number;
  /** The codes stored, or null for float32 rows. */
  codec: CodecSpec | null;
  /** `,RFlat` (Flat) or `,Refine(SQfp16)` (SQfp16): copies the codes' (or transformed rows') candidates are re-ranked against; else null. */
  refine: RefineKind | null;
  /** The transform before the storage (`Prefix<p>`, `PCA<p>`, `PCAR<p>`; p is checked against d on creation); absent (or null) where there is none. */
  transform?: TransformSpec | null;
}

export function parseIndexType(description: string): IndexType {
  const text = typeof description === 'string' ? description.trim() : '';
  const bad = (why = ''): InvalidArgumentError =>
    new InvalidArgumentError(`unknown index description ${JSON.stringify(description)}${why}; expected ${FACTORY_FORMS}, nlist in [1, 4294967295]`);
  const parts = text.split(',');
  const transform = parseTransform(parts[0]);
  if (transform) parts.shift();
  let nlist = 0;
  const ivf = /^IVF(\d+)$/.exec(parts[0]);
  if (ivf) {
    nlist = Number(ivf[1]);
    if (!(nlist >= 1 && nlist <= 0xffffffff)) throw bad();
    parts.shift();
  }
  const last = parts.length > 1 ? parts[parts.length - 1] : '';
  const refine: RefineKind | null = last === 'RFlat' ? 'Flat' : last === 'Refine(SQfp16)' ? 'SQfp16' : null;
  if (refine) parts.pop();
  if (parts.some((part) => /^(Prefix|PCAR?)\d+$/.test(part))) throw bad(' (a transform, Prefix<p>, PCA<p> or PCAR<p>, is the first component)');
  if (parts.length !== 1) throw bad();
  const codec = parts[0] === 'Flat' ? null : parseCodec(parts[0]);
  if (parts[0] !== 'Flat' && codec === null) throw bad();
  if (transform && (nlist > 0 || codec)) {
    throw new InvalidArgumentError(
      `index description ${JSON.stringify(description)}: a transform (${transformName(transform)}) is followed by Flat only for now ("${transformName(transform)},Flat" or "${transformName(transform)},Flat,RFlat"), not IVF or a codec`,
    );
  }
  if (refine && codec === null && !transform) throw bad(` (,${last} re-ranks codes or transformed rows: it follows a codec or a transform, not plain Flat)`);
  if (nlist > 0 && codec?.type === 'LSH') throw bad(' (binary codes are stored in Flat indexes only: LSH takes no IVF stage)');
  return { type: nlist > 0 ? 'IVF' : 'Flat', nlist, codec, refine, ...(transform ? { transform } : {}) };
}

/** The factory string of a parsed type (parseIndexType's inverse, in its canonical spelling). */
export function describeIndexType(t: IndexType): string {
  const storage = t.codec ? codecName(t.codec) : 'Flat';
  const refine = t.refine === 'Flat' ? ',RFlat' : t.refine === 'SQfp16' ? ',Refine(SQfp16)' : '';
  return `${t.transform ? `${transformName(t.transform)},` : ''}${t.type === 'IVF' ? `IVF${t.nlist},` : ''}${storage}${refine}`;
}

export function indexFactory(backend: Backend, dim: number, description: string, metric: Metric = 'l2'): VectorIndex {
  return createIndex(backend, dim, parseIndexType(description), metric);
}

export interface CreateIndexOptions {
  /** As FlatIndexOptions.hostCopy. */
  hostCopy?: boolean;
  /** IVF: lists scanned per query by default, in [1, nlist] (default 1; a search's params may say otherwise). Ignored by Flat. */
  nprobe?: number;
}

/** The index a parsed factory string describes (see parseIndexType). */
export function createIndex(backend: Backend, dim: number, type: IndexType, metric: Metric = 'l2', options: CreateIndexOptions = {}): VectorIndex {
  const { hostCopy, nprobe } = options;
  const codec = type.codec ? codecName(type.codec) : undefined;
  const refine = type.refine ?? undefined;
  const transform = type.transform ? transformName(type.transform) : undefined;
  if (type.type === 'Flat') return new FlatIndex(backend, { dim, metric, hostCopy, codec, refine, transform });
  if (transform) throw new InvalidArgumentError(`${describeIndexType(type)}: a transform is followed by Flat only for now, not IVF`);
  return new IvfFlatIndex(backend, { dim, metric, nlist: type.nlist, hostCopy, nprobe, codec, refine });
}
