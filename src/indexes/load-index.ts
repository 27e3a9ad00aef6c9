/**
 * Reads an index file written by `save` back into an index of its kind (src/indexes/registry.ts) on `backend`, block
 * by block: the vectors go to the device as they are read (buffers sized once, from the header),
 * so memory is the index itself plus one block (for IVF also the ids as read and their checks,
 * 5 bytes a vector, beside the lists' own 8: ids and positions). If anything fails (a malformed
 * block, the checksum at the end), the index built so far is disposed and the error thrown.
 */
import type { Backend } from '../backend/backend.js';
import type { CodecSpec } from '../codecs/codec.js';
import { IndexFileReader } from '../io/index-file.js';

import type { LoadOptions } from './kind.js';
import { type LoadedIndex, kindOfFileType } from './registry.js';
import { InvalidArgumentError } from '../errors.js';

export async function loadIndex(backend: Backend, path: string, options: LoadOptions = {}): Promise<LoadedIndex> {
  const file = await IndexFileReader.open(path, options.onProgress);
  const { type, ntotal, metric, refine } = file.header;
  const unit = metric === 'cosine';
  let index: LoadedIndex | null = null;
  try {
    const kind = kindOfFileType(type);
    index = kind.open(backend, file.header, options);
    await kind.read(index, file);
    if (refine) await index.restoreRefine(refine === 'Flat' ? file.vectorBlocks('refine', ntotal, unit) : file.codeBlocks('refine (SQfp16 codes)', ntotal, REFINE_CODEC));
    const { ids, nextId } = await file.ids();
    await file.finish(); // the checksum first: a corrupt file is reported as such
    await index.restoreIds(ids, nextId, path);
    return index;
  } catch (err) {
    await file.close();
    await index?.dispose();
    // The index's own checks (its tables, their bound) name the field, not the file: add it.
    throw err instanceof InvalidArgumentError && !err.message.startsWith(`${path}: `) ? new InvalidArgumentError(`${path}: ${err.message}`) : err;
  }
}

const REFINE_CODEC: CodecSpec = { type: 'SQ', kind: 'SQfp16' };
