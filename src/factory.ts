/**
 * Faiss-style index factory strings: "Flat", "IVF<nlist>,Flat", or a scalar quantiser's codes
 * "SQ8", "SQ4", "SQfp16" (Faiss's IndexScalarQuantizer). What the factory makes is seen
 * through VectorIndex only (plus what VectorIndex adds), never as a concrete class.
 */
import type { Backend } from './backend.js';
import { SQ_KINDS, type SqKind } from './codecs/scalar-quantizer.js';
import { FlatIndex } from './flat-index.js';
import { IvfFlatIndex } from './ivf-flat-index.js';
import type { Metric } from './types.js';
import { InvalidArgumentError } from './types.js';
import type { VectorIndex } from './vector-index.js';

export const FACTORY_FORMS = '"Flat", "IVF<nlist>,Flat" (for example "IVF1024,Flat"), "SQ8", "SQ4", "SQfp16"';

/** What a factory string describes, checked without creating anything. */
export type IndexType = { type: 'Flat' } | { type: 'IVF'; nlist: number } | { type: 'SQ'; codec: SqKind };

export function parseIndexType(description: string): IndexType {
  const text = typeof description === 'string' ? description.trim() : '';
  if (text === 'Flat') return { type: 'Flat' };
  if ((SQ_KINDS as readonly string[]).includes(text)) return { type: 'SQ', codec: text as SqKind };
  const ivf = /^IVF(\d+),Flat$/.exec(text);
  if (ivf && Number(ivf[1]) >= 1 && Number(ivf[1]) <= 0xffffffff) return { type: 'IVF', nlist: Number(ivf[1]) };
  throw new InvalidArgumentError(`unknown index description ${JSON.stringify(description)}; expected ${FACTORY_FORMS} with nlist in [1, 4294967295]`);
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
  if (type.type === 'Flat') return new FlatIndex(backend, { dim, metric, hostCopy });
  if (type.type === 'SQ') return new FlatIndex(backend, { dim, metric, hostCopy, codec: type.codec });
  return new IvfFlatIndex(backend, { dim, metric, nlist: type.nlist, hostCopy, nprobe });
}
