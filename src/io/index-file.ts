/**
 * The index file format (little-endian):
 *   bytes 0-7    magic "WGPUKNN" + 0
 *   u32 x 8      format version (2), index type, metric (0 l2, 1 ip, 2 cosine), dim, ntotal,
 *                nlist (0 for a Flat type), nprobe (0 for a Flat type), codec word
 *   index types  1 Flat, 2 IVF (IVF-Flat); codes (src/codecs/codec.ts): 3 SQ8, 4 SQ4, 5 SQfp16,
 *                6 PQ (Flat of codes); 7 IVF,SQ8, 8 IVF,SQ4, 9 IVF,SQfp16, 10 IVF,PQ (IVF lists
 *                of codes of residuals to their list's centroid, Faiss's by_residual); 11 LSH
 *                (Flat of binary codes)
 *   codec word   0 for types 1 - 2; otherwise bit 31: refine rows follow the codes (`,RFlat`:
 *                float32; with bit 30 too, `,Refine(SQfp16)`: SQfp16 codes), and for PQ types
 *                bits 0-15 M, bits 16-23 nbits; for LSH bit 0 the rotation (LSHr), bit 1 the
 *                thresholds (LSHt); every other bit 0
 *   arrays       Flat: xb f32[ntotal * dim]
 *                IVF:  centroids f32[nlist * dim], offsets u32[nlist + 1], ids u32[ntotal],
 *                      xb f32[ntotal * dim] (vectors grouped by list, as the lists hold them)
 *                codes, Flat: tables, codes u32[ntotal * rowWords], [refine rows]
 *                codes, IVF:  centroids f32[nlist * dim], tables, offsets u32[nlist + 1],
 *                      ids u32[ntotal], codes u32[ntotal * rowWords] (grouped by list),
 *                      [refine rows]
 *                refine rows, by id: f32[ntotal * dim], or SQfp16 codes u32[ntotal * W16]
 *                      (W16 = sqRowWords('SQfp16', dim))
 *                tables: SQ8, SQ4 f32[2 * dim] (each dimension's vmin, then each's vdiff, as
 *                      Faiss's ScalarQuantizer.trained); SQfp16 none; PQ f32[2^nbits * dim] (the
 *                      M sub-quantizers' 2^nbits centroids of dim / M floats, Faiss's layout);
 *                      LSH f32[dim] thresholds (zeros without LSHt), then with LSHr the
 *                      rotation f32[dim * dim] (row-major, y = R x)
 *                codes: each vector's Faiss code bytes, padded to rowWords words
 *                      (codecRowWords, src/codecs/codec.ts)
 *                then (version 2) the ids section: i64 next sequential id (-1 where the index
 *                holds caller ids), i64 labels[ntotal]: the id of each vector (Flat: by row;
 *                IVF: labels[s] for the row whose u32 id above is s); see src/indexes/ids.ts
 *   transforms   type 12 Transform,Flat: float32 rows of p dimensions, transformed
 *                (src/codecs/transforms.ts). Its codec word is the transform word: bits 0-16 p (1 .. dim),
 *                bits 24-25 the kind (1 Prefix, 2 PCA, 3 PCAR), bits 30-31 refine as above
 *                (bit 31: full-d refine rows follow: float32, with bit 30 SQfp16 codes); every
 *                other bit 0. Arrays: tables (PCA, PCAR: f32[p] eigenvalues, decreasing, then
 *                f32[p * dim] the matrix, rotation folded in; Prefix none), xb f32[ntotal * p]
 *                (cosine: unit norm or zero), [refine rows], ids section. In bytes:
 *                40 + 4 T + 4 ntotal p [+ 4 ntotal dim (RFlat)] + 8 (ntotal + 1) + 32, T = p + p dim
 *                for PCA and PCAR, 0 for Prefix.
 *   graphs       type 13 CAGRA (src/indexes/graph): nlist is the degree (1 .. 256), nprobe 0,
 *                codec word 0. Arrays: xb f32[ntotal * dim] (cosine: unit norm or zero), graph
 *                u32[ntotal * degree] (row r's out-edges, each a row below ntotal or 0xffffffff
 *                for none), ids section. In bytes: 40 + 4 ntotal (dim + degree) + 8 (ntotal + 1) + 32.
 *   32 bytes     SHA-256 of everything before it
 * Version 1 files (types 1 and 2, no ids section: sequential ids 0 .. ntotal - 1) still load.
 * Vectors are stored as the index holds them (normalised for cosine: each row has unit norm, or is
 * zero for a zero vector). Each IVF list holds its ids in increasing order as this library writes
 * them (other orders load, and are then searched by the scan strategy; lists of codes need the
 * order). Files are written and read block by block (bounded memory whatever their size), written to
 * a temporary name and renamed, so a crash never leaves a half-written index.
 *
 * The same bytes held in memory are `serialize`'s and `deserializeIndex`'s (src/io/index-bytes.ts);
 * the header, the writer and the reader themselves are in src/io/index-stream.ts, shared by both.
 *
 * Reading checks every field, not only the checksum (a file can be rewritten with a valid one):
 * the header (type, metric, 1 <= dim <= 65536; Flat types: nlist = nprobe = 0; IVF types: nlist >= 1
 * and 1 <= nprobe <= nlist; the codec word as above, M dividing dim), the size, offsets[0] = 0, non-decreasing offsets,
 * offsets[nlist] = ntotal, ids a permutation of 0 .. ntotal - 1, all floats finite, and for cosine
 * unit-norm (or zero) rows. And the values, against the one bound every vector a query is
 * compared with must keep (the bound `add` holds vectors to: a squared norm of at most
 * MAX_SQUARED_NORM, a quarter of float32's range, so that every distance stays finite): float
 * rows (xb, transformed rows, refine rows) and centroids each within it; a codec's tables such
 * that every code's reconstruction is (for IVF, each list's centroid plus it; Codec.checkBound);
 * codes with no bit set past their code (padding 0) and SQfp16 halves finite (badCodeRow); an
 * LSHr rotation or a PCA matrix with orthonormal rows (checkOrthonormalRows, so that a rotated or
 * projected query keeps its norm). Each refusal is one line naming the file, the section and the
 * field. The vectors are checked block by block as they are read; the checksum,
 * which covers the whole file, is checked at the end (`IndexReader.finish`): a loader must
 * drop what it built when that fails.
 */
import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { fileError, openForReading } from './file-error.js';
import type { IndexFileHeader } from './index-format.js';
import { type ByteSource, IndexReader, writeIndexStream } from './index-stream.js';
import { AtomicFile, commitOutputs } from './stream-writer.js';
import { InvalidArgumentError } from '../errors.js';

export { type IndexFileHeader, type IndexFileType, TRANSFORM_FILE_TYPE, checkLists, codecFileType, idSection } from './index-format.js';
export { INDEX_FORMAT_VERSION, INDEX_MAGIC, IndexReader, indexFileBytes, isIvfType } from './index-stream.js';

/**
 * Writes an index file from `parts`, the arrays in file order (see above) in as many pieces as the
 * caller likes, so that no piece need hold a whole array (writeIndexStream: the bytes `serialize`
 * gives). Checks that they add up to what the header describes; on any failure nothing is left
 * behind (an old file at `path` stays).
 */
export async function writeIndexFile(
  path: string,
  header: IndexFileHeader,
  parts: AsyncIterable<Float32Array | Uint32Array | Float64Array | BigInt64Array>,
  onProgress?: (bytesDone: number, bytesTotal: number) => void,
): Promise<void> {
  const file = new AtomicFile(path);
  try {
    await writeIndexStream(path, header, parts, file, createHash('sha256'), onProgress);
  } catch (err) {
    file.abort();
    throw err;
  }
  commitOutputs([file]);
}

/** The bytes of an open file, read where asked (fs reads take < 2 GiB at a time). */
function fileSource(path: string, fh: FileHandle, size: number): ByteSource {
  return {
    noun: 'the file',
    size,
    async read(into, offset) {
      for (let o = 0; o < into.byteLength; ) {
        let got: number;
        try {
          got = (await fh.read(into, o, Math.min(into.byteLength - o, 1 << 30), offset + o)).bytesRead;
        } catch (err) {
          throw fileError(path, 'cannot read', err);
        }
        if (got === 0) throw new InvalidArgumentError(`${path}: truncated at byte ${offset + o}`);
        o += got;
      }
    },
    close: () => fh.close(),
  };
}

/** The index file at `path`, open for reading (IndexReader: its header checked; close or finish it). */
export async function openIndexFile(path: string, onProgress?: (bytesDone: number, bytesTotal: number) => void): Promise<IndexReader> {
  const { handle: fh, stat: st } = await openForReading(path);
  try {
    return await IndexReader.open(path, fileSource(path, fh, st.size), createHash('sha256'), onProgress);
  } catch (err) {
    await fh.close();
    throw err instanceof InvalidArgumentError ? err : fileError(path, 'cannot read', err);
  }
}

/** The header of the index file at `path` (checked as openIndexFile checks it), reading only its first bytes. */
export async function readIndexHeader(path: string): Promise<IndexFileHeader> {
  const reader = await openIndexFile(path);
  await reader.close();
  return reader.header;
}
