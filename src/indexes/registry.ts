/**
 * The index kinds (src/indexes/kind.ts), found by name, by factory string and by file type. A new
 * kind is its own folder (its index class and its kind object), its name in IndexKindName, one
 * entry here, and its file types in src/io/index-format.ts; see docs/ARCHITECTURE.md.
 */
import type { IndexFileType } from '../io/index-format.js';

import type { IndexKind, IndexKindName } from './kind.js';
import { FLAT_KIND } from './flat/kind.js';
import { IVF_KIND } from './ivf/kind.js';
import { GRAPH_KIND } from './graph/kind.js';
import { InvalidArgumentError } from '../errors.js';

/** Every kind; the factory tries their stage components in this order. */
export const INDEX_KINDS = [FLAT_KIND, IVF_KIND, GRAPH_KIND] as const;

/** The kind of a factory string that no kind's stage component claims ("Flat", "SQ8", "PCAR64,Flat"). */
export const DEFAULT_KIND: IndexKind = FLAT_KIND;

/** The index classes loadIndex may return: one per kind. */
export type LoadedIndex = ReturnType<(typeof INDEX_KINDS)[number]['open']>;

/** The kind of this name. */
export function indexKind(name: IndexKindName): IndexKind {
  const kind = INDEX_KINDS.find((k) => k.name === name);
  if (!kind) {
    const names = INDEX_KINDS.map((k) => k.name);
    throw new InvalidArgumentError(`unknown index kind ${JSON.stringify(name)}; expected ${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}`);
  }
  return kind as IndexKind;
}

/** The kind whose indexes are saved as file type `type`. */
export function kindOfFileType(type: IndexFileType): IndexKind<LoadedIndex> {
  const kind = INDEX_KINDS.find((k) => k.fileTypes.includes(type));
  if (!kind) throw new InvalidArgumentError(`no index kind reads files of type ${type}`);
  return kind as IndexKind<LoadedIndex>;
}
