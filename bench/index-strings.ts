/**
 * The factory strings that `bench compare --index` and scripts/codec-recall.mjs run, for
 * webgpu-knn (indexFactory) and for Faiss (faiss.index_factory): checked here for their shape
 * only, and turned into the searches each built index runs. Whether webgpu-knn builds a string is
 * for indexFactory to say when it runs: a form it does not know yet is reported as not measured
 * for us, and Faiss still runs it.
 */
import type { SearchParams } from 'webgpu-knn';

export const INDEX_STRING_FORMS =
  'Flat, SQ8, SQ4, SQfp16, PQ<M>, PQ<M>x<nbits>, LSH, LSHr, LSHt or LSHrt, optionally after IVF<nlist> or a transform (Prefix<p>, PCA<p>, PCAR<p>), ' +
  'and optionally followed by ,RFlat or ,Refine(SQfp16) (for example SQ8, IVF64,Flat, IVF64,PQ16, IVF64,PQ16x4,RFlat, LSHrt,RFlat, PCAR64,Flat,RFlat)';

const SHAPE = /^(?:IVF(\d+),|(?:Prefix|PCAR?)\d+,)?(?:Flat|SQ8|SQ4|SQfp16|PQ\d+(?:x\d+)?|LSHr?t?)(,RFlat|,Refine\(SQfp16\))?$/;

/**
 * k-means iterations of an IVF string's coarse quantiser: indexFactory's IVF trains with
 * IvfFlatIndex's default (10), and Faiss's is set to the same so the lists compare.
 */
export const FACTORY_KMEANS_NITER = 10;

export interface IndexString {
  description: string;
  /** IVF<nlist>: the lists; null for an index without lists. */
  nlist: number | null;
  /** Ends with ,RFlat: a search re-ranks k * kFactor candidates exactly. */
  refine: boolean;
}

/** The string's shape, or null when it is not one of INDEX_STRING_FORMS. */
export function parseIndexString(description: string): IndexString | null {
  const m = SHAPE.exec(description);
  if (!m || (m[1] !== undefined && Number(m[1]) < 1)) return null;
  return { description, nlist: m[1] === undefined ? null : Number(m[1]), refine: m[2] !== undefined };
}

/** One search of a built index: its row's param ('-', 'nprobe=8', 'kFactor=4', 'nprobe=8,kFactor=4'). */
export interface SearchConfig {
  param: string;
  nprobe: number | null;
  kFactor: number | null;
}

/**
 * The searches run on one built index: each nprobe at most nlist (IVF) times each kFactor
 * (,RFlat); a single '-' for an index that takes neither. Empty when no nprobe fits nlist.
 */
export function searchGrid(s: IndexString, nprobes: number[], kFactors: number[]): SearchConfig[] {
  const probes: (number | null)[] = s.nlist === null ? [null] : nprobes.filter((p) => p <= s.nlist!);
  const factors: (number | null)[] = s.refine ? kFactors : [null];
  return probes.flatMap((nprobe) =>
    factors.map((kFactor) => ({
      param: [nprobe === null ? '' : `nprobe=${nprobe}`, kFactor === null ? '' : `kFactor=${kFactor}`].filter(Boolean).join(',') || '-',
      nprobe,
      kFactor,
    })),
  );
}

/** SearchParams with the ,RFlat strings' kFactor, which src/ does not declare yet. */
export type RefineSearchParams = SearchParams & { kFactor?: number };

/** Our search parameters for one config: nprobe for IVF, kFactor for ,RFlat only. */
export function searchParams(c: SearchConfig): RefineSearchParams {
  const params: RefineSearchParams = {};
  if (c.nprobe !== null) params.nprobe = c.nprobe;
  if (c.kFactor !== null) params.kFactor = c.kFactor;
  return params;
}
