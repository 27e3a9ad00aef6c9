/**
 * Faiss-style index factory strings: "Flat" or "IVF<nlist>,Flat".
 */
import type { Backend } from './backend.js';
import { FlatIndex } from './flat-index.js';
import { IvfFlatIndex } from './ivf-flat-index.js';
import type { Metric } from './types.js';
import { InvalidArgumentError } from './types.js';

export type Index = FlatIndex | IvfFlatIndex;

export const FACTORY_FORMS = '"Flat", "IVF<nlist>,Flat" (for example "IVF1024,Flat")';

export function indexFactory(backend: Backend, dim: number, description: string, metric: Metric = 'l2'): Index {
  const text = typeof description === 'string' ? description.trim() : '';
  if (text === 'Flat') return new FlatIndex(backend, { dim, metric });
  const ivf = /^IVF(\d+),Flat$/.exec(text);
  if (ivf) return new IvfFlatIndex(backend, { dim, metric, nlist: Number(ivf[1]) });
  throw new InvalidArgumentError(`unknown index description ${JSON.stringify(description)}; expected ${FACTORY_FORMS}`);
}
