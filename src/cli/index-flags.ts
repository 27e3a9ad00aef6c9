/**
 * The flags of an index and of a search, as build, search, range-search, dedup --against and
 * knn-graph read them: --type, --metric, --nprobe, --train-sample (checked against the input),
 * --kfactor, --filter-ids, --query-rows, and the largest --k.
 */
import { Codec, codecName } from '../codecs/codec.js';
import { describeIndexType, parseIndexType } from '../indexes/factory.js';
import { readIdFile } from '../io/id-file.js';
import type { IndexFileHeader } from '../io/index-file.js';
import type { VectorReader } from '../io/vector-reader.js';
import { checkTransform } from '../codecs/transforms.js';
import type { Metric } from '../types.js';
import type { SearchParams } from '../indexes/vector-index.js';
import { DEFAULT_QUERY_ROWS } from './cluster/shard-search.js';
import { type Values, intFlag, text } from './flags.js';
import { type IndexType, KIND_SEARCH_PARAMS, type KindSearchParam, type KindSearchParams, type SearchParamRange, kindSearchFlag } from '../indexes/kind.js';
import { INDEX_KINDS, indexKind, kindOfFileType } from '../indexes/registry.js';
import { UsageError } from '../errors.js';

/** The largest k any backend takes; the backend's own limit is checked once it exists. */
export const K_LIMIT = 1 << 20;

function metricOf(v: Values): Metric {
  const m = text(v, 'metric') ?? 'l2';
  if (!['l2', 'ip', 'cosine'].includes(m)) throw new UsageError(`--metric must be l2, ip or cosine; got ${m}`);
  return m as Metric;
}

function indexTypeOf(v: Values): IndexType {
  try {
    return parseIndexType(text(v, 'type') ?? 'Flat');
  } catch (err) {
    throw new UsageError(`--type: ${(err as Error).message}`);
  }
}

/**
 * A kind's own search flag (--nprobe: IVF, --itopk: CAGRA), for an index whose kind takes it in
 * `range` (undefined: the kind takes none); undefined when it is not given. Given for an index of
 * another kind it is ignored, as Faiss ignores a parameter an index lacks, and a line on stderr
 * says so (a script that passes --nprobe to every index keeps working, and a person sees the flag
 * had no effect).
 */
function kindFlag(v: Values, flag: string, range: SearchParamRange | undefined, kind: string): number | undefined {
  const given = text(v, flag);
  if (given === undefined) return undefined;
  if (!range) {
    process.stderr.write(`webgpu-knn: --${flag} ignored: ${kind} indexes take no ${flag}\n`);
    return undefined;
  }
  return intFlag(flag, given, range.min, range.max);
}

/**
 * The kinds' own search flags given (--nprobe, --itopk, --search-width, --max-iterations, --seeds,
 * --entry-rows: KIND_SEARCH_PARAMS), each checked against `ranges` (its kind's searchParams) by
 * kindFlag, except those in `skip`.
 */
export function kindSearchParamsOf(v: Values, ranges: Readonly<Partial<Record<KindSearchParam, SearchParamRange>>>, kind: string, skip: readonly KindSearchParam[] = []): KindSearchParams {
  const params: KindSearchParams = {};
  for (const key of KIND_SEARCH_PARAMS) {
    if (skip.includes(key)) continue;
    const value = kindFlag(v, kindSearchFlag(key), ranges[key], kind);
    if (value !== undefined) params[key] = value;
  }
  return params;
}

/** --nprobe for an index whose kind takes it in `range` (IVF: [1, nlist]), `fallback` when absent; undefined for a kind without it (kindFlag). */
function nprobeOf(v: Values, range: SearchParamRange | undefined, fallback: number, kind: string): number | undefined {
  const given = kindFlag(v, 'nprobe', range, kind);
  return range ? given ?? Math.min(fallback, range.max) : undefined;
}

/**
 * The usage errors of an index type for `file`: a codec that cannot code its rows (PQ's M must
 * divide the dim), a transform's p above the dim, an IVF nlist larger than the number of vectors (k-means needs n >= nlist).
 */
export function checkTypeFor(type: IndexType, file: VectorReader): void {
  try {
    if (type.codec) Codec.checkOptions(codecName(type.codec), type.refine, file.dim);
    if (type.transform) checkTransform(type.transform, file.dim);
  } catch (err) {
    throw new UsageError(`--type ${describeIndexType(type)}: ${(err as Error).message}`);
  }
  const training = indexKind(type.type).training(type);
  if (training && training.minRows > file.rows) {
    throw new UsageError(`--type ${describeIndexType(type)} needs at least ${training.what} vectors to train on; ${file.path} has ${file.rows}`);
  }
}

/** --train-sample: at most this many training points (kinds with a training stage: IVF). */
function trainSampleOf(v: Values, type: IndexType): number | undefined {
  const given = text(v, 'train-sample');
  if (given === undefined) return undefined;
  const training = indexKind(type.type).training(type);
  if (!training) {
    const kinds = INDEX_KINDS.filter((k) => k.training(type)).map((k) => k.name);
    throw new UsageError(`--train-sample applies to ${kinds.join(' and ')} indexes only`);
  }
  return intFlag('train-sample', given, training.minRows, Number.MAX_SAFE_INTEGER);
}

/** The index flags build and knn-graph share: --type, --metric, --nprobe, --train-sample. */
export interface IndexSettings {
  type: IndexType;
  metric: Metric;
  nprobe: number | undefined;
  trainSample: number | undefined;
}

export function indexSettingsOf(v: Values, defaultNprobe: number): IndexSettings {
  const type = indexTypeOf(v);
  return { type, metric: metricOf(v), nprobe: nprobeOf(v, indexKind(type.type).searchParams(type).nprobe, defaultNprobe, type.type), trainSample: trainSampleOf(v, type) };
}

/** The kind's own search flags (kindSearchParamsOf: IVF's --nprobe, CAGRA's --itopk and the walk's; elsewhere ignored), --kfactor (search) and --filter-ids, as a search's params. */
export async function searchParamsOf(v: Values, header: IndexFileHeader, filterPath: string | undefined): Promise<SearchParams> {
  const kind = kindOfFileType(header.type);
  const params: SearchParams = kindSearchParamsOf(v, kind.searchParams(header), kind.name);
  const kFactor = text(v, 'kfactor');
  if (kFactor !== undefined) {
    params.kFactor = Number(kFactor);
    if (!/^\d+(\.\d+)?$/.test(kFactor) || !(params.kFactor >= 1)) throw new UsageError(`--kfactor must be a number >= 1; got ${kFactor}`);
  }
  if (filterPath !== undefined) params.filter = await readIdFile(filterPath);
  return params;
}

/** --query-rows: query rows per (query block, shard) job of a sharded search. */
export function queryRowsOf(v: Values): number {
  return intFlag('query-rows', text(v, 'query-rows'), 1, 2 ** 31 - 1, DEFAULT_QUERY_ROWS);
}
