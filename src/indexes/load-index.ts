/**
 * Reads an index file written by `save` back into an index of its kind (src/indexes/registry.ts)
 * on `backend`, block by block (see readIndex, src/indexes/read-index.ts, which deserializeIndex
 * shares). Node only: the browser build has deserializeIndex.
 */
import type { Backend } from '../backend/backend.js';
import { openIndexFile } from '../io/index-file.js';
import type { LoadOptions } from './kind.js';
import { readIndex } from './read-index.js';
import type { LoadedIndex } from './registry.js';

export async function loadIndex(backend: Backend, path: string, options: LoadOptions = {}): Promise<LoadedIndex> {
  return readIndex(backend, await openIndexFile(path, options.onProgress), options);
}
