/**
 * Reads an index file written by `save` back into a FlatIndex or IvfFlatIndex on `backend`, block
 * by block: the vectors go to the device as they are read (buffers sized once, from the header),
 * so memory is the index itself plus one block (for IVF also the ids as read and their checks,
 * 5 bytes a vector, beside the lists' own 8: ids and positions). If anything fails (a malformed
 * block, the checksum at the end), the index built so far is disposed and the error thrown.
 */
import type { Backend } from '../backend/backend.js';
import { FlatIndex } from './flat/flat-index.js';
import { IvfFlatIndex } from './ivf/ivf-flat-index.js';
import { IndexFileReader, TRANSFORM_FILE_TYPE, checkLists, isIvfType } from '../io/index-file.js';
import { type CodecSpec, codecName, codecRowWords, codecTableFloats } from '../codecs/codec.js';
import { transformName, transformTableFloats } from '../codecs/transforms.js';
import { InvalidArgumentError } from '../types.js';

export interface LoadOptions {
  /** Keep a host copy of the vectors where the device's memory is not the host's (default true; see BaseStoreOptions). */
  hostCopy?: boolean;
  /** Hears of the bytes read so far and the file's size. */
  onProgress?: (bytesDone: number, bytesTotal: number) => void;
}

export async function loadIndex(backend: Backend, path: string, options: LoadOptions = {}): Promise<FlatIndex | IvfFlatIndex> {
  const file = await IndexFileReader.open(path, options.onProgress);
  const { type, dim, metric, ntotal, nlist, nprobe, codec: spec, refine, transform } = file.header;
  const unit = metric === 'cosine';
  let index: FlatIndex | IvfFlatIndex | null = null;
  try {
    if (type === 'Flat') {
      const flat = (index = new FlatIndex(backend, { dim, metric, hostCopy: options.hostCopy }));
      await flat.reserve(ntotal);
      for await (const block of file.vectorBlocks('xb', ntotal, unit)) await flat.addPrepared(block);
    } else if (type === TRANSFORM_FILE_TYPE) {
      const { p } = transform!;
      const flat = (index = new FlatIndex(backend, { dim, metric, transform: transformName(transform!), refine: refine ?? undefined, hostCopy: options.hostCopy }));
      const floats = transformTableFloats(transform!, dim);
      if (floats > 0) await flat.restoreTables(await file.floats('transform tables', floats, dim + 1));
      await flat.reserve(ntotal);
      for await (const block of file.vectorBlocks('xb', ntotal, unit, p)) await flat.addStored(block, block.length / p);
    } else if (!isIvfType(type)) {
      const coded = (index = new FlatIndex(backend, { dim, metric, codec: codecName(spec!), refine: refine ?? undefined, hostCopy: options.hostCopy }));
      await coded.restoreTables(await file.floats(`${codecName(spec!)} tables`, codecTableFloats(spec!, dim)));
      await coded.reserve(ntotal);
      const w = codecRowWords(spec!, dim);
      for await (const block of file.codeBlocks('codes', ntotal, spec!)) await coded.addStored(block, block.length / w);
    } else {
      const ivf = (index = new IvfFlatIndex(backend, { dim, metric, nlist, codec: spec ? codecName(spec) : undefined, refine: refine ?? undefined, hostCopy: options.hostCopy }));
      await ivf.setCentroids(await file.floats('centroids', nlist * dim, dim, true));
      if (spec) await ivf.restoreCodec(await file.floats(`${codecName(spec)} tables`, codecTableFloats(spec, dim)));
      const offsets = await file.uints(nlist + 1);
      const ids = await file.uints(ntotal);
      checkLists(path, offsets, ids, ntotal);
      const rows = spec ? file.codeBlocks('codes', ntotal, spec) : file.vectorBlocks('xb', ntotal, unit);
      await ivf.restoreLists(offsets, ids, rows);
      ivf.nprobe = nprobe; // checked in [1, nlist] with the header
    }
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

/** The codec of `,Refine(SQfp16)` rows, as the file holds them (refineWords: SQfp16 codes' words). */
const REFINE_CODEC: CodecSpec = { type: 'SQ', kind: 'SQfp16' };
