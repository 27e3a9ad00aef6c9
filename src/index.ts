/**
 * The Node entry: the core (src/browser.ts, which a browser imports alone) and what needs Node's
 * files: vector and index files, id files, the demo corpus.
 */
export * from './browser.js';
export { READ_FORMATS, WRITE_FORMATS, openVectors, readIvecs, readVectors, writeAtomically, writeVectors } from './io/vectors.js';
export type { BlockOptions, VectorBlock, VectorBlockArray, VectorFile, VectorReader, WriteVectorsOptions } from './io/vectors.js';
export { loadIndex } from './indexes/load-index.js';
export { loadFioriCorpus } from './cli/demo.js';
export type { Corpus } from './cli/demo.js';

export { INDEX_FORMAT_VERSION } from './io/index-file.js';
export { VectorStreamWriter } from './io/stream-writer.js';
export { readIdFile } from './io/id-file.js';
export { FileError, OutOfMemoryError } from './errors.js';
