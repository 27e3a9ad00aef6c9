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
import { codecName, parseCodec } from '../codecs/codec.js';
import type { RefineKind } from '../codecs/refine.js';
import { parseTransform, transformName } from '../codecs/transforms.js';
import type { Metric } from '../types.js';

import type { VectorIndex } from './vector-index.js';
import type { IndexCore } from './index-core.js';
import type { CreateIndexOptions, IndexKind, IndexKindName, IndexType } from './kind.js';
import { DEFAULT_KIND, INDEX_KINDS, indexKind } from './registry.js';
import { InvalidArgumentError } from '../errors.js';

export const FACTORY_FORMS =
  '"[IVF<nlist>,]STORAGE[,RFlat | ,Refine(SQfp16)]" with STORAGE Flat, SQ8, SQ4, SQfp16, PQ<M>, PQ<M>x<nbits> (nbits 4..8) or (without IVF) LSH, LSHr, LSHt, LSHrt; or "T,Flat[,RFlat]" with a transform T Prefix<p>, PCA<p> or PCAR<p> (p <= d); or "CAGRA<degree>", a graph of float32 rows; for example "Flat", "IVF1024,Flat", "SQ8", "PQ16", "IVF1024,PQ16,RFlat", "LSHrt,RFlat", "PCAR64,Flat,RFlat", "CAGRA32"';

export function parseIndexType(description: string): IndexType {
  const text = typeof description === 'string' ? description.trim() : '';
  const bad = (why = ''): InvalidArgumentError =>
    new InvalidArgumentError(`unknown index description ${JSON.stringify(description)}${why}; expected ${FACTORY_FORMS}, nlist in [1, 4294967295]`);
  const parts = text.split(',');
  const transform = parseTransform(parts[0]);
  if (transform) parts.shift();
  let kind: IndexKind = DEFAULT_KIND;
  let stage: Partial<IndexType> = {};
  for (const k of INDEX_KINDS) {
    const fields = k.parseStage(parts[0], bad);
    if (fields) {
      kind = k;
      stage = fields;
      parts.shift();
      break;
    }
  }
  if (parts.length === 0 && kind.implicitStorage) parts.push('Flat');
  const last = parts.length > 1 ? parts[parts.length - 1] : '';
  const refine: RefineKind | null = last === 'RFlat' ? 'Flat' : last === 'Refine(SQfp16)' ? 'SQfp16' : null;
  if (refine) parts.pop();
  if (parts.some((part) => /^(Prefix|PCAR?)\d+$/.test(part))) throw bad(' (a transform, Prefix<p>, PCA<p> or PCAR<p>, is the first component)');
  if (parts.length !== 1) throw bad();
  const codec = parts[0] === 'Flat' ? null : parseCodec(parts[0]);
  if (parts[0] !== 'Flat' && codec === null) throw bad();
  if (transform && (!kind.transforms || codec)) {
    throw new InvalidArgumentError(
      `index description ${JSON.stringify(description)}: a transform (${transformName(transform)}) is followed by Flat only for now ("${transformName(transform)},Flat" or "${transformName(transform)},Flat,RFlat"), not ${withoutTransforms()} or a codec`,
    );
  }
  if (refine && codec === null && !transform) throw bad(` (,${last} re-ranks codes or transformed rows: it follows a codec or a transform, not plain Flat)`);
  const type: IndexType = { nlist: 0, ...stage, type: kind.name, codec, refine, ...(transform ? { transform } : {}) };
  kind.checkType(type, bad);
  return type;
}

/** The kinds a transform may not precede, as messages name them ("IVF"). */
function withoutTransforms(): string {
  return INDEX_KINDS.filter((k) => !k.transforms)
    .map((k) => k.name)
    .join(', ');
}

/** The factory string of a parsed type (parseIndexType's inverse, in its canonical spelling). */
export function describeIndexType(t: IndexType): string {
  const kind = indexKind(t.type);
  const storage = t.codec ? codecName(t.codec) : kind.implicitStorage ? '' : 'Flat';
  const parts = [t.transform ? transformName(t.transform) : '', kind.stage(t), storage].filter((part) => part !== '');
  const refine = t.refine === 'Flat' ? ',RFlat' : t.refine === 'SQfp16' ? ',Refine(SQfp16)' : '';
  return `${parts.join(',')}${refine}`;
}

export function indexFactory(backend: Backend, dim: number, description: string, metric: Metric = 'l2'): VectorIndex {
  return createIndex(backend, dim, parseIndexType(description), metric);
}

/** The index a parsed factory string describes (see parseIndexType). */
export function createIndex(backend: Backend, dim: number, type: IndexType, metric: Metric = 'l2', options: CreateIndexOptions = {}): VectorIndex {
  const kind = indexKind(type.type);
  if (type.transform && !kind.transforms) throw new InvalidArgumentError(`${describeIndexType(type)}: a transform is followed by Flat only for now, not ${kind.name}`);
  return kind.create(backend, dim, type, metric, options);
}

/**
 * Runs the kind's own work once an index's rows are in (IndexKind.prepare: CAGRA builds its
 * graph) on an index of kind `kind` (IndexType.type; for a loaded index, its file type's kind), with
 * progress; resolves at once for a kind without such work.
 */
export async function prepareIndex(index: VectorIndex, kind: IndexKindName, onProgress: (done: number, total: number, phase: string) => void): Promise<void> {
  await indexKind(kind).prepare?.(index as IndexCore, onProgress);
}
