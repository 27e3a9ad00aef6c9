/**
 * The parts of the index file format (src/io/index-file.ts) that the indexes use without touching a
 * file: type names, the header, the ids section, the lists' check. Kept apart from the reader and
 * writer so that the core, which builds for a browser, imports nothing of Node's.
 */
import type { CodecSpec } from '../codecs/codec.js';
import type { RefineKind } from '../codecs/refine.js';
import type { TransformSpec } from '../codecs/transforms.js';
import type { Metric } from '../types.js';
import { InvalidArgumentError } from '../errors.js';

/** Type codes in the header, in order from 1 (see above), the transforms' after them. */
export const STORAGE_TYPE_CODES = ['Flat', 'IVF', 'SQ8', 'SQ4', 'SQfp16', 'PQ', 'IVF,SQ8', 'IVF,SQ4', 'IVF,SQfp16', 'IVF,PQ', 'LSH'] as const;

/** The file type of a transformed Flat index (Prefix<p>, PCA<p>, PCAR<p>, then float32 rows of p). */
export const TRANSFORM_FILE_TYPE = 'Transform,Flat';
export const TRANSFORM_TYPE_CODES = [TRANSFORM_FILE_TYPE] as const;

/** The file type of a graph index (CAGRA: float32 rows and `degree` out-edges a row; its nlist field is the degree). */
export const GRAPH_FILE_TYPE = 'CAGRA';
export const GRAPH_TYPE_CODES = [GRAPH_FILE_TYPE] as const;

export const TYPE_CODES = [...STORAGE_TYPE_CODES, ...TRANSFORM_TYPE_CODES, ...GRAPH_TYPE_CODES] as const;
export type IndexFileType = (typeof TYPE_CODES)[number];

export interface IndexFileHeader {
  /** Written as INDEX_FORMAT_VERSION; as read, 1 or 2. */
  version?: number;
  type: IndexFileType;
  metric: Metric;
  dim: number;
  ntotal: number;
  nlist: number;
  nprobe: number;
  /** The codec of a coded type (with its PQ numbers), else null. */
  codec?: CodecSpec | null;
  /** The refine rows that follow the codes (`,RFlat`: float32; `,Refine(SQfp16)`: SQfp16 codes), or null. */
  refine?: RefineKind | null;
  /** The transform of type Transform,Flat, else null. */
  transform?: TransformSpec | null;
}

/** The file type of an index of `codec` codes, Flat or IVF. */
export function codecFileType(codec: CodecSpec, ivf: boolean): IndexFileType {
  const name = codec.type === 'SQ' ? codec.kind : codec.type;
  if (ivf && codec.type === 'LSH') throw new InvalidArgumentError('binary codes (LSH) are stored in Flat indexes only');
  return (ivf ? `IVF,${name}` : name) as IndexFileType;
}

/** offsets: 0 first, non-decreasing, ntotal last; ids: each of 0 .. ntotal - 1 exactly once. */
export function checkLists(path: string, offsets: Uint32Array, ids: Uint32Array, ntotal: number): void {
  const nlist = offsets.length - 1;
  if (offsets[0] !== 0) throw new InvalidArgumentError(`${path}: offsets[0] is ${offsets[0]}; expected 0`);
  for (let l = 0; l < nlist; l++) {
    if (offsets[l + 1] < offsets[l]) {
      throw new InvalidArgumentError(`${path}: offsets[${l + 1}] = ${offsets[l + 1]} is less than offsets[${l}] = ${offsets[l]}; offsets must be non-decreasing`);
    }
  }
  if (offsets[nlist] !== ntotal) throw new InvalidArgumentError(`${path}: offsets[${nlist}] (nlist) is ${offsets[nlist]}; expected ntotal = ${ntotal}`);
  const seen = new Uint8Array(ntotal);
  for (let p = 0; p < ids.length; p++) {
    const id = ids[p];
    if (id >= ntotal) throw new InvalidArgumentError(`${path}: ids[${p}] is ${id}; expected an id in [0, ${ntotal - 1}] (ntotal ${ntotal})`);
    if (seen[id]) throw new InvalidArgumentError(`${path}: ids[${p}]: id ${id} appears twice; each id must appear exactly once`);
    seen[id] = 1;
  }
}

/** The ids section of a version 2 file (see the format above), from IdMap.liveIds. */
export function* idSection(live: { ids: Float64Array; nextId: number }): Generator<BigInt64Array> {
  const out = new BigInt64Array(live.ids.length + 1);
  out[0] = BigInt(live.nextId);
  live.ids.forEach((id, i) => (out[i + 1] = BigInt(id)));
  yield out;
}
