/**
 * Reads a saved index (src/io/index-file.ts) into an index of its kind (src/indexes/registry.ts)
 * on `backend`, from a file (loadIndex, src/indexes/load-index.ts, Node) or from bytes in memory
 * (deserializeIndex, here: also in a browser), by one code path: the same reader, the same kinds'
 * `read`, the same checks, so both give the same index. Block by block: the vectors go to the
 * device as they are read (buffers sized once, from the header), so memory is the index itself
 * plus one block (for IVF also the ids as read and their checks, 5 bytes a vector, beside the
 * lists' own 8: ids and positions). If anything fails (a malformed block, the checksum at the
 * end), the index built so far is disposed and the error thrown.
 */
import type { Backend } from '../backend/backend.js';
import type { CodecSpec } from '../codecs/codec.js';
import { openIndexBytes } from '../io/index-bytes.js';
import type { IndexReader } from '../io/index-stream.js';
import type { LoadOptions } from './kind.js';
import { type LoadedIndex, kindOfFileType } from './registry.js';
import { InvalidArgumentError } from '../errors.js';

/**
 * The index whose bytes `serialize` (or a file `save` wrote, read whole) gave: the same index
 * `loadIndex` returns for that file. `bytes`: a Uint8Array or an ArrayBuffer, read and not kept
 * (the index holds copies). Bad bytes (not an index, truncated, a field out of range, a checksum
 * that does not match) are refused with an InvalidArgumentError starting "index bytes: ".
 */
export async function deserializeIndex(backend: Backend, bytes: Uint8Array | ArrayBuffer, options: LoadOptions = {}): Promise<LoadedIndex> {
  return readIndex(backend, await openIndexBytes(bytes, options.onProgress), options);
}

/** Reads everything of `file` (opened, its header checked) into a new index, then closes it. */
export async function readIndex(backend: Backend, file: IndexReader, options: LoadOptions): Promise<LoadedIndex> {
  const { type, ntotal, metric, refine } = file.header;
  const unit = metric === 'cosine';
  const name = file.name;
  let index: LoadedIndex | null = null;
  try {
    const kind = kindOfFileType(type);
    index = kind.open(backend, file.header, options);
    await kind.read(index, file);
    if (refine) await index.restoreRefine(refine === 'Flat' ? file.vectorBlocks('refine', ntotal, unit) : file.codeBlocks('refine (SQfp16 codes)', ntotal, REFINE_CODEC));
    const { ids, nextId } = await file.ids();
    await file.finish(); // the checksum first: a corrupt file is reported as such
    await index.restoreIds(ids, nextId, name);
    return index;
  } catch (err) {
    await file.close();
    await index?.dispose();
    // The index's own checks (its tables, their bound) name the field, not the file: add it.
    throw err instanceof InvalidArgumentError && !err.message.startsWith(`${name}: `) ? new InvalidArgumentError(`${name}: ${err.message}`) : err;
  }
}

const REFINE_CODEC: CodecSpec = { type: 'SQ', kind: 'SQfp16' };
