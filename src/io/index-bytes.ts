/**
 * An index as bytes in memory (`serialize`, `deserializeIndex`): exactly the bytes of the file
 * `save` writes (src/io/index-file.ts), made and read by the same writer and reader
 * (src/io/index-stream.ts), hashed by src/io/sha256.ts. Nothing here imports Node, so a browser
 * page can keep an index in IndexedDB or OPFS.
 */
import { InvalidArgumentError } from '../errors.js';
import type { IndexFileHeader } from './index-format.js';
import { INDEX_FORMAT_VERSION, IndexReader, indexFileBytes, writeIndexStream } from './index-stream.js';
import { Sha256 } from './sha256.js';

/** How index bytes are named in messages ("index bytes: truncated: ..."). */
export const INDEX_BYTES_NAME = 'index bytes';

/** The bytes of the index `header` and `parts` describe (see writeIndexStream): one array of exactly its size. */
export async function indexBytes(
  header: IndexFileHeader,
  parts: AsyncIterable<Float32Array | Uint32Array | Float64Array | BigInt64Array>,
  onProgress?: (bytesDone: number, bytesTotal: number) => void,
): Promise<Uint8Array> {
  const out = new Uint8Array(indexFileBytes({ ...header, version: INDEX_FORMAT_VERSION }));
  let at = 0;
  const sink = {
    write(bytes: Uint8Array): void {
      if (at + bytes.byteLength > out.byteLength) throw new Error(`serialize: more than the ${out.byteLength} bytes the header describes`);
      out.set(bytes, at);
      at += bytes.byteLength;
    },
  };
  await writeIndexStream('serialize', header, parts, sink, new Sha256(), onProgress);
  return out;
}

/** Index bytes open for reading (IndexReader: the header checked, the size against it); `bytes` is not copied, only read. */
export async function openIndexBytes(bytes: unknown, onProgress?: (bytesDone: number, bytesTotal: number) => void): Promise<IndexReader> {
  const data = asBytes(bytes);
  const source = {
    noun: 'the bytes',
    size: data.byteLength,
    async read(into: Uint8Array, offset: number): Promise<void> {
      if (offset + into.byteLength > data.byteLength) throw new InvalidArgumentError(`${INDEX_BYTES_NAME}: truncated at byte ${data.byteLength}`);
      into.set(data.subarray(offset, offset + into.byteLength));
    },
    close: async (): Promise<void> => {},
  };
  return IndexReader.open(INDEX_BYTES_NAME, source, new Sha256(), onProgress);
}

/** A Uint8Array (or a view of any typed array) or an ArrayBuffer as bytes; anything else refused, named. */
function asBytes(bytes: unknown): Uint8Array {
  if (bytes instanceof Uint8Array) return bytes;
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const what = bytes === null ? 'null' : Array.isArray(bytes) ? 'an array' : typeof bytes === 'object' ? (bytes.constructor?.name ?? 'an object') : typeof bytes;
  throw new InvalidArgumentError(`deserializeIndex: bytes must be a Uint8Array or an ArrayBuffer (as serialize gives, or IndexedDB returns); got ${what}`);
}
