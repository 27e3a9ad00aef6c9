/**
 * What an index kind is to the rest of the library (Faiss: each Index subclass, its
 * index_factory clause and its read_index case): how its factory string is parsed and spelt, how
 * it is created, which index file types it writes and how it loads them, and its own search
 * parameters. The kinds are listed in src/indexes/registry.ts; the factory, loadIndex, shards and
 * the CLI consult them there and never branch on kind names.
 */
import type { Backend } from '../backend/backend.js';
import type { CodecSpec } from '../codecs/codec.js';
import type { RefineKind } from '../codecs/refine.js';
import type { TransformSpec } from '../codecs/transforms.js';
import type { IndexReader } from '../io/index-stream.js';
import type { IndexFileHeader, IndexFileType } from '../io/index-format.js';
import type { Metric } from '../types.js';
import { type IndexCore } from './index-core.js';
import { type InvalidArgumentError } from '../errors.js';
import type { SearchParams } from './vector-index.js';

/** The kinds' names (one per entry of INDEX_KINDS, src/indexes/registry.ts). */
export type IndexKindName = 'Flat' | 'IVF' | 'CAGRA';

/** What a factory string describes, checked without creating anything (dim is checked on creation: PQ's M must divide it). */
export interface IndexType {
  /** The index kind (src/indexes/registry.ts): `IVF` for inverted lists (nlist of them), else `Flat`. */
  type: IndexKindName;
  /** IVF: the number of lists; 0 for Flat. */
  nlist: number;
  /** CAGRA: the graph's out-degree; absent for the other kinds. */
  degree?: number;
  /** The codes stored, or null for float32 rows. */
  codec: CodecSpec | null;
  /** `,RFlat` (Flat) or `,Refine(SQfp16)` (SQfp16): copies the codes' (or transformed rows') candidates are re-ranked against; else null. */
  refine: RefineKind | null;
  /** The transform before the storage (`Prefix<p>`, `PCA<p>`, `PCAR<p>`; p is checked against d on creation); absent (or null) where there is none. */
  transform?: TransformSpec | null;
}

export interface CreateIndexOptions {
  /** As FlatIndexOptions.hostCopy. */
  hostCopy?: boolean;
  /** IVF: lists scanned per query by default, in [1, nlist] (default 1; a search's params may say otherwise). Ignored by Flat. */
  nprobe?: number;
}

export interface LoadOptions {
  /** Keep a host copy of the vectors where the device's memory is not the host's (default true; see BaseStoreOptions). */
  hostCopy?: boolean;
  /** Hears of the bytes read so far and the file's size. */
  onProgress?: (bytesDone: number, bytesTotal: number) => void;
}

/**
 * Every kind's own search parameters (IVF: nprobe; CAGRA: the walk's), the names a kind's
 * `searchParams` may use. The CLI spells each as a flag (`searchWidth`: --search-width, kindFlag),
 * and sharded searches carry them to every shard (kindSearchParams); test/index/registry.test.ts
 * checks that every kind's parameters are listed here.
 */
export const KIND_SEARCH_PARAMS = ['nprobe', 'itopk', 'searchWidth', 'maxIterations', 'seeds', 'entryRows'] as const;
export type KindSearchParam = (typeof KIND_SEARCH_PARAMS)[number];
export type KindSearchParams = Pick<SearchParams, KindSearchParam>;

/** The kinds' own search parameters of `o` (those it sets). */
export function kindSearchParams(o: KindSearchParams): KindSearchParams {
  const params: KindSearchParams = {};
  for (const key of KIND_SEARCH_PARAMS) if (o[key] !== undefined) params[key] = o[key];
  return params;
}

/** A kind search parameter as the CLI spells its flag: searchWidth -> search-width. */
export function kindSearchFlag(param: KindSearchParam): string {
  return param.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/** The range a kind's own search parameter takes for one index (IVF: nprobe in [1, nlist]). */
export interface SearchParamRange {
  min: number;
  max: number;
  /** What a value must be, as error messages say it: "an integer in [1, 1024] (nlist)". */
  expected: string;
}

export interface IndexKind<I extends IndexCore = IndexCore> {
  readonly name: IndexKindName;
  /**
   * The factory component naming this kind's stage (`IVF1024`), parsed: the fields of IndexType
   * it sets (IVF: nlist); null when `part` is not one. A kind without a component of its own
   * (Flat) returns null always: it is the kind of a description no other kind claims. Throws
   * `bad()` for a component that is this kind's but out of range.
   */
  parseStage(part: string, bad: (why?: string) => InvalidArgumentError): Partial<IndexType> | null;
  /** The stage component as the factory spells it (`IVF1024`), or '' for a kind without one. */
  stage(type: IndexType): string;
  /**
   * Whether the storage after the stage may be left out when it is float32 rows, and is left out
   * in the canonical spelling (as Faiss's "HNSW32" for "HNSW32,Flat"); false: "Flat" is spelt.
   */
  readonly implicitStorage: boolean;
  /** Whether a transform (Prefix, PCA, PCAR) may precede this kind's storage. */
  readonly transforms: boolean;
  /** Refuses what this kind cannot store (IVF: binary codes): throws `bad(' (why)')`. */
  checkType(type: IndexType, bad: (why?: string) => InvalidArgumentError): void;
  /** A new, empty index of `type` (parsed and checked). */
  create(backend: Backend, dim: number, type: IndexType, metric: Metric, options: CreateIndexOptions): I;
  /** The index file types (src/io/index-format.ts) its indexes are saved as: loadIndex picks the kind by them. */
  readonly fileTypes: readonly IndexFileType[];
  /** An empty index for a file's header (loadIndex, deserializeIndex), which `read` fills. */
  open(backend: Backend, header: IndexFileHeader, options: LoadOptions): I;
  /** Reads the file's (or the bytes') sections up to the refine rows (tables, rows, lists) into `index`. */
  read(index: I, file: IndexReader): Promise<void>;
  /**
   * The kind's own training stage for an index of `type` (IVF: k-means of its nlist lists): the
   * fewest vectors it trains on, as messages name them ("nlist = 1024"); null where the kind has
   * none (Flat: a codec or transform trains, but the kind itself does not).
   */
  training(type: IndexType): { minRows: number; what: string } | null;
  /**
   * The work the kind does once its rows are in, before its first search or save needs it (CAGRA:
   * the graph), reporting each phase's progress (`phase` names it for a person: "graph: each
   * row's nearest rows"); absent where there is none. A build (the CLI's) calls it so that the wait has progress.
   */
  prepare?(index: I, onProgress: (done: number, total: number, phase: string) => void): Promise<void>;
  /** This kind's own search parameters (beyond the common ones) and their ranges for an index of `type`. */
  searchParams(type: IndexType | IndexFileHeader): Readonly<Partial<Record<KindSearchParam, SearchParamRange>>>;
}
