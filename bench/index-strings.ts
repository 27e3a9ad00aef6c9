/**
 * The factory strings that `bench compare --index` and scripts/codec-recall.mjs run, for
 * webgpu-knn (indexFactory) and for Faiss (faiss.index_factory): checked here for their shape
 * only, and turned into the searches each built index runs. Whether webgpu-knn builds a string is
 * for indexFactory to say when it runs: a form it does not know yet is reported as not measured
 * for us, and Faiss still runs it. A CAGRA<degree> string (our graph index) is no Faiss string:
 * Faiss runs its own graph index, HNSW<degree / 2>, beside it (faissString).
 */
import type { SearchParams } from 'webgpu-knn';

export const INDEX_STRING_FORMS =
  'Flat, SQ8, SQ4, SQfp16, PQ<M>, PQ<M>x<nbits>, LSH, LSHr, LSHt or LSHrt, optionally after IVF<nlist> or a transform (Prefix<p>, PCA<p>, PCAR<p>), ' +
  'and optionally followed by ,RFlat or ,Refine(SQfp16); or CAGRA<degree>, a graph (Faiss runs HNSW<degree/2> beside it) ' +
  '(for example SQ8, IVF64,Flat, IVF64,PQ16, IVF64,PQ16x4,RFlat, LSHrt,RFlat, PCAR64,Flat,RFlat, CAGRA32)';

const SHAPE = /^(?:(?:IVF(\d+),|(?:Prefix|PCAR?)\d+,)?(?:Flat|SQ8|SQ4|SQfp16|PQ\d+(?:x\d+)?|LSHr?t?)(,RFlat|,Refine\(SQfp16\))?|CAGRA(\d+))$/;

/** The --itopk sweep of a CAGRA string when none is given. */
export const DEFAULT_ITOPKS = [32, 64, 128];

/** Faiss's HNSW beside a CAGRA string: IndexHNSWFlat's default efConstruction. */
export const FAISS_HNSW_EF_CONSTRUCTION = 40;

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
  /** CAGRA<degree>: the graph's out-degree; null for an index that is no graph. */
  degree: number | null;
}

/** The string's shape, or null when it is not one of INDEX_STRING_FORMS. */
export function parseIndexString(description: string): IndexString | null {
  const m = SHAPE.exec(description);
  if (!m || (m[1] !== undefined && Number(m[1]) < 1) || (m[3] !== undefined && Number(m[3]) < 1)) return null;
  return { description, nlist: m[1] === undefined ? null : Number(m[1]), refine: m[2] !== undefined, degree: m[3] === undefined ? null : Number(m[3]) };
}

/** CAGRA searches beside itopk: searchWidth, seeds and entryRows, each left out where it is the default (1, GRAPH_DEFAULT_SEEDS, entryRowsFor(n)). */
export interface WalkSettings {
  searchWidth?: number;
  seeds?: number;
  entryRows?: number;
}

/** One search of a built index: its row's param ('-', 'nprobe=8', 'kFactor=4', 'nprobe=8,kFactor=4', 'itopk=64', 'itopk=64,width=2,seeds=32,entries=2048'). */
export interface SearchConfig extends WalkSettings {
  param: string;
  nprobe: number | null;
  kFactor: number | null;
  /** CAGRA: the walk's internal list length. */
  itopk: number | null;
}

/**
 * The searches run on one built index: each nprobe at most nlist (IVF) times each kFactor
 * (,RFlat); each itopk (CAGRA); a single '-' for an index that takes none. Empty when no nprobe
 * fits nlist.
 */
export function searchGrid(s: IndexString, nprobes: number[], kFactors: number[], itopks: number[] = DEFAULT_ITOPKS, walk: WalkSettings = {}): SearchConfig[] {
  if (s.degree !== null) {
    const extra = [
      walk.searchWidth === undefined ? '' : `width=${walk.searchWidth}`,
      walk.seeds === undefined ? '' : `seeds=${walk.seeds}`,
      walk.entryRows === undefined ? '' : `entries=${walk.entryRows}`,
    ].filter(Boolean);
    return itopks.map((itopk) => ({ param: [`itopk=${itopk}`, ...extra].join(','), nprobe: null, kFactor: null, itopk, ...walk }));
  }
  const probes: (number | null)[] = s.nlist === null ? [null] : nprobes.filter((p) => p <= s.nlist!);
  const factors: (number | null)[] = s.refine ? kFactors : [null];
  return probes.flatMap((nprobe) =>
    factors.map((kFactor) => ({
      param: [nprobe === null ? '' : `nprobe=${nprobe}`, kFactor === null ? '' : `kFactor=${kFactor}`].filter(Boolean).join(',') || '-',
      nprobe,
      kFactor,
      itopk: null,
    })),
  );
}

/** SearchParams with the ,RFlat strings' kFactor, which src/ does not declare yet. */
export type RefineSearchParams = SearchParams & { kFactor?: number };

/** Our search parameters for one config: nprobe for IVF, kFactor for ,RFlat, itopk for CAGRA only. */
export function searchParams(c: SearchConfig): RefineSearchParams {
  const params: RefineSearchParams = {};
  if (c.nprobe !== null) params.nprobe = c.nprobe;
  if (c.kFactor !== null) params.kFactor = c.kFactor;
  if (c.itopk !== null) params.itopk = c.itopk;
  if (c.searchWidth !== undefined) params.searchWidth = c.searchWidth;
  if (c.seeds !== undefined) params.seeds = c.seeds;
  if (c.entryRows !== undefined) params.entryRows = c.entryRows;
  return params;
}

/** A search of Faiss's: a SearchConfig's nprobe and kFactor, or an HNSW's efSearch. */
export type FaissSearchConfig = Pick<SearchConfig, 'param' | 'nprobe' | 'kFactor'> & { efSearch?: number };

/** The graph Faiss runs beside CAGRA<degree>: HNSW<M> with M = degree / 2 (each node of HNSW's base layer has up to 2M links). */
export function faissHnswM(degree: number): number {
  return Math.max(1, Math.floor(degree / 2));
}

/**
 * What Faiss runs for a string: the same factory string and searches; for CAGRA<degree>,
 * HNSW<degree/2> (or HNSW<hnswM>: bench compare --faiss-hnsw-m; IndexHNSWFlat, efConstruction
 * FAISS_HNSW_EF_CONSTRUCTION) searched at each efSearch.
 */
export function faissString(s: IndexString, nprobes: number[], kFactors: number[], efSearch: number[], hnswM: number | null = null): { description: string; efConstruction?: number; configs: FaissSearchConfig[] } {
  if (s.degree === null) return { description: s.description, configs: searchGrid(s, nprobes, kFactors) };
  return {
    description: `HNSW${hnswM ?? faissHnswM(s.degree)}`,
    efConstruction: FAISS_HNSW_EF_CONSTRUCTION,
    configs: efSearch.map((ef) => ({ param: `ef=${ef}`, nprobe: null, kFactor: null, efSearch: ef })),
  };
}
