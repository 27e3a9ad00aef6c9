/**
 * The Flat kind (src/indexes/kind.ts): every vector scored, as float32 rows, a codec's codes or
 * transformed rows. Its factory strings have no stage component ("Flat", "SQ8", "PCAR64,Flat");
 * its files are the Flat types of src/io/index-format.ts.
 */
import { codecName, codecRowWords, codecTableFloats } from '../../codecs/codec.js';
import { transformName, transformTableFloats } from '../../codecs/transforms.js';
import { TRANSFORM_FILE_TYPE } from '../../io/index-format.js';
import type { IndexKind } from '../kind.js';
import { FlatIndex } from './flat-index.js';

export const FLAT_KIND: IndexKind<FlatIndex> = {
  name: 'Flat',
  parseStage: () => null,
  stage: () => '',
  implicitStorage: false,
  transforms: true,
  checkType: () => {},
  create(backend, dim, type, metric, { hostCopy }) {
    const codec = type.codec ? codecName(type.codec) : undefined;
    const refine = type.refine ?? undefined;
    const transform = type.transform ? transformName(type.transform) : undefined;
    return new FlatIndex(backend, { dim, metric, hostCopy, codec, refine, transform });
  },
  fileTypes: ['Flat', 'SQ8', 'SQ4', 'SQfp16', 'PQ', 'LSH', TRANSFORM_FILE_TYPE],
  open(backend, h, { hostCopy }) {
    const refine = h.refine ?? undefined;
    if (h.transform) return new FlatIndex(backend, { dim: h.dim, metric: h.metric, transform: transformName(h.transform), refine, hostCopy });
    if (h.codec) return new FlatIndex(backend, { dim: h.dim, metric: h.metric, codec: codecName(h.codec), refine, hostCopy });
    return new FlatIndex(backend, { dim: h.dim, metric: h.metric, hostCopy });
  },
  async read(index, file) {
    const { dim, ntotal, metric, codec: spec, transform } = file.header;
    const unit = metric === 'cosine';
    if (transform) {
      const { p } = transform;
      const floats = transformTableFloats(transform, dim);
      if (floats > 0) await index.restoreTables(await file.floats('transform tables', floats, dim + 1));
      await index.reserve(ntotal);
      for await (const block of file.vectorBlocks('xb', ntotal, unit, p)) await index.addStored(block, block.length / p);
    } else if (spec) {
      await index.restoreTables(await file.floats(`${codecName(spec)} tables`, codecTableFloats(spec, dim)));
      await index.reserve(ntotal);
      const w = codecRowWords(spec, dim);
      for await (const block of file.codeBlocks('codes', ntotal, spec)) await index.addStored(block, block.length / w);
    } else {
      await index.reserve(ntotal);
      for await (const block of file.vectorBlocks('xb', ntotal, unit)) await index.addPrepared(block);
    }
  },
  training: () => null,
  searchParams: () => ({}),
};
