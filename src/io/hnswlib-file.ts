/**
 * hnswlib's index file (nmslib/hnswlib, hnswlib/hnswalg.h: saveIndex and loadIndex), written from a
 * one-layer graph such as CAGRA's: every node at level 0 and no upper layer, as cuVS's
 * `serialize_to_hnswlib` and Faiss's IndexHNSWCagra export it. Little-endian, size_t = 8 bytes:
 *   header (96 bytes)  size_t offsetLevel0_ (0), size_t max_elements_ (n), size_t cur_element_count
 *                      (n), size_t size_data_per_element_ (4 + 4 maxM0 + 4 dim + 8), size_t
 *                      label_offset_ (4 + 4 maxM0 + 4 dim), size_t offsetData_ (4 + 4 maxM0),
 *                      int maxlevel_ (0; -1 for an empty index), u32 enterpoint_node_ (0xffffffff
 *                      for an empty index), size_t maxM_ (M), size_t maxM0_ (the degree), size_t M_,
 *                      double mult_ (1 / ln M, as hnswlib sets it; for M < 2, 1 / ln 2), size_t
 *                      ef_construction_ (max(M, 200), hnswlib-node's default)
 *   level 0            per element, size_data_per_element_ bytes: the link list header (u32
 *                      linklistsizeint: the link count in its low 16 bits, hnswlib's
 *                      get/setListCount; byte 2 the deleted mark, 0; byte 3 0), maxM0_ u32 link
 *                      slots (the count's real edges first, then zeros), the vector (float32 x dim),
 *                      the label (size_t: the vector's id)
 *   upper levels       per element a u32 link list size in bytes: 0 (no upper layer)
 * hnswlib's loadIndex checks that the file ends exactly after the upper levels. maxM0_ is the
 * graph's degree (cuVS sets M = degree / 2 and maxM0 = degree, hnswlib's maxM0 = 2 M); M only
 * matters to points added after loading. cuVS writes maxlevel_ 1 over empty upper lists; stock
 * hnswlib's searchKnn then reads level 1's list of the entry point, which loadIndex left null: 0
 * is the level of a graph with no upper layer. The file does not say which distance the vectors
 * were compared with: the reader names a space ('l2': squared L2; 'ip': 1 - dot product, also
 * cosine on unit-norm rows).
 *
 * `writeHnswlibFile` writes element by element through AtomicFile (nothing is left at the path
 * if it fails); `readHnswlibFile` reads one back, checking what hnswlib's loadIndex relies on.
 */
import { readFile } from 'node:fs/promises';
import { InvalidArgumentError } from '../errors.js';
import { PAD_ID } from '../kernel-facts.js';
import { fileError } from './file-error.js';
import { AtomicFile, commitOutputs } from './stream-writer.js';

/** A graph's link slot that holds no edge. */
const NO_EDGE = PAD_ID;
export const HNSWLIB_HEADER_BYTES = 96;
/** hnswlib's link count is an unsigned short (getListCount). */
const MAX_LINKS = 0xffff;
/** Elements a write puts together before writing them. */
const ELEMENTS_PER_WRITE = 4096;

export interface HnswlibGraph {
  /** Vectors (elements). */
  n: number;
  dim: number;
  /** Link slots an element (maxM0_): the graph's degree. */
  degree: number;
  /** n x dim float32, in one array or in blocks of whole rows (an async iterable is read once). */
  rows: Float32Array | Iterable<Float32Array> | AsyncIterable<Float32Array>;
  /** n x degree out-edges, each below n or 0xffffffff (none). */
  graph: Uint32Array;
  /** Each element's label (its id): n integers in [0, 2^53 - 1]. */
  labels: ArrayLike<number>;
  /** The node searches start from (below n). */
  entryPoint: number;
  /** hnswlib's M (default max(1, floor(degree / 2)), as cuVS). */
  m?: number;
}

export interface HnswlibHeader {
  offsetLevel0: number;
  maxElements: number;
  curElementCount: number;
  sizeDataPerElement: number;
  labelOffset: number;
  offsetData: number;
  maxLevel: number;
  enterPoint: number;
  maxM: number;
  maxM0: number;
  m: number;
  mult: number;
  efConstruction: number;
}

export interface HnswlibFile {
  header: HnswlibHeader;
  dim: number;
  /** Each element's link count (level 0). */
  counts: Uint32Array;
  /** Each element's maxM0 link slots (level 0), unused slots as stored. */
  links: Uint32Array;
  /** n x dim. */
  rows: Float32Array;
  labels: BigUint64Array;
  /** Each element's upper-level link list size in bytes. */
  upperSizes: Uint32Array;
}

/** The header hnswlib's loadIndex reads for `g` (see above). */
export function hnswlibHeader(g: Pick<HnswlibGraph, 'n' | 'dim' | 'degree' | 'entryPoint' | 'm'>): HnswlibHeader {
  const m = g.m ?? Math.max(1, Math.floor(g.degree / 2));
  const offsetData = 4 + 4 * g.degree;
  const labelOffset = offsetData + 4 * g.dim;
  return {
    offsetLevel0: 0,
    maxElements: g.n,
    curElementCount: g.n,
    sizeDataPerElement: labelOffset + 8,
    labelOffset,
    offsetData,
    maxLevel: g.n === 0 ? -1 : 0,
    enterPoint: g.n === 0 ? NO_EDGE : g.entryPoint,
    maxM: m,
    maxM0: g.degree,
    m,
    mult: 1 / Math.log(Math.max(2, m)),
    efConstruction: Math.max(m, 200),
  };
}

function headerBytes(h: HnswlibHeader): Uint8Array {
  const out = new Uint8Array(HNSWLIB_HEADER_BYTES);
  const v = new DataView(out.buffer);
  let o = 0;
  const size = (x: number): void => {
    v.setBigUint64(o, BigInt(x), true);
    o += 8;
  };
  size(h.offsetLevel0);
  size(h.maxElements);
  size(h.curElementCount);
  size(h.sizeDataPerElement);
  size(h.labelOffset);
  size(h.offsetData);
  v.setInt32(o, h.maxLevel, true);
  v.setUint32(o + 4, h.enterPoint, true);
  o += 8;
  size(h.maxM);
  size(h.maxM0);
  size(h.m);
  v.setFloat64(o, h.mult, true);
  o += 8;
  size(h.efConstruction);
  return out;
}

function checkGraph(path: string, g: HnswlibGraph): void {
  const bad = (what: string): InvalidArgumentError => new InvalidArgumentError(`${path}: cannot write an hnswlib index: ${what}`);
  const int = (v: number, min: number): boolean => Number.isInteger(v) && v >= min;
  if (!int(g.n, 0) || g.n > NO_EDGE) throw bad(`n is ${g.n}; expected an integer in [0, ${NO_EDGE}] (hnswlib's node numbers are u32)`);
  if (!int(g.dim, 1)) throw bad(`dim is ${g.dim}; expected an integer >= 1`);
  if (!int(g.degree, 1) || g.degree > MAX_LINKS) throw bad(`degree is ${g.degree}; expected an integer in [1, ${MAX_LINKS}]`);
  if (g.m !== undefined && !int(g.m, 1)) throw bad(`M is ${g.m}; expected an integer >= 1`);
  if (g.graph.length !== g.n * g.degree) throw bad(`the graph holds ${g.graph.length} edges; expected n x degree = ${g.n * g.degree}`);
  if (g.labels.length !== g.n) throw bad(`${g.labels.length} labels for ${g.n} vectors`);
  if (g.n > 0 && !(int(g.entryPoint, 0) && g.entryPoint < g.n)) throw bad(`the entry point is ${g.entryPoint}; expected a node in [0, ${g.n - 1}]`);
  for (let p = 0; p < g.graph.length; p++) {
    const e = g.graph[p];
    if (e !== NO_EDGE && e >= g.n) throw bad(`graph[${p}] (node ${Math.floor(p / g.degree)}) is ${e}; expected a node in [0, ${g.n - 1}] or 0xffffffff (none)`);
  }
  for (let i = 0; i < g.n; i++) {
    const l = g.labels[i];
    if (!(Number.isInteger(l) && l >= 0 && l <= Number.MAX_SAFE_INTEGER)) throw bad(`label ${i} is ${l}; expected an integer in [0, 2^53 - 1]`);
  }
}

async function* rowBlocks(rows: HnswlibGraph['rows']): AsyncGenerator<Float32Array> {
  if (rows instanceof Float32Array) yield rows;
  else yield* rows;
}

/**
 * Writes `g` as an hnswlib index file at `path` (see above), element by element; on any failure
 * (a bad field, rows that do not add up to n x dim, a full disk) nothing is left at `path` (an old
 * file there stays).
 */
export async function writeHnswlibFile(path: string, g: HnswlibGraph): Promise<void> {
  checkGraph(path, g);
  const h = hnswlibHeader(g);
  const { n, dim, degree } = g;
  const per = h.sizeDataPerElement;
  const file = new AtomicFile(path);
  try {
    file.write(headerBytes(h));
    const buf = new Uint8Array(Math.min(Math.max(n, 1), ELEMENTS_PER_WRITE) * per);
    const view = new DataView(buf.buffer);
    let node = 0;
    let held = 0;
    // Rows as they come (a block need not hold whole elements' worth of other data).
    let pending = new Float32Array(0);
    const flush = (): void => {
      if (held > 0) file.write(buf.subarray(0, held * per));
      held = 0;
    };
    const element = (row: Float32Array): void => {
      if (node >= n) throw new InvalidArgumentError(`${path}: cannot write an hnswlib index: more than n = ${n} rows of dim ${dim}`);
      const o = held * per;
      buf.fill(0, o, o + per);
      let count = 0;
      for (let e = 0; e < degree; e++) {
        const id = g.graph[node * degree + e];
        if (id !== NO_EDGE) view.setUint32(o + 4 + 4 * count++, id, true);
      }
      view.setUint32(o, count, true); // the count's 16 bits; the deleted mark and byte 3: 0
      for (let j = 0; j < dim; j++) view.setFloat32(o + h.offsetData + 4 * j, row[j], true);
      view.setBigUint64(o + h.labelOffset, BigInt(g.labels[node]), true);
      node++;
      if (++held * per === buf.byteLength) flush();
    };
    for await (const block of rowBlocks(g.rows)) {
      let b = block;
      if (pending.length > 0) {
        const joined = new Float32Array(pending.length + block.length);
        joined.set(pending);
        joined.set(block, pending.length);
        b = joined;
      }
      const whole = Math.floor(b.length / dim);
      for (let r = 0; r < whole; r++) element(b.subarray(r * dim, (r + 1) * dim));
      pending = b.slice(whole * dim);
    }
    flush();
    if (node !== n || pending.length > 0) {
      throw new InvalidArgumentError(`${path}: cannot write an hnswlib index: the rows hold ${node * dim + pending.length} floats; expected n x dim = ${n * dim}`);
    }
    // No upper layer: every element's upper link list is 0 bytes.
    const zeros = new Uint8Array(4 * Math.min(Math.max(n, 1), ELEMENTS_PER_WRITE));
    for (let i = 0; i < n; i += zeros.length / 4) file.write(zeros.subarray(0, 4 * Math.min(zeros.length / 4, n - i)));
  } catch (err) {
    file.abort();
    throw err;
  }
  commitOutputs([file]);
}

/**
 * Reads an hnswlib index file of `dim`-dimensional float32 vectors (the file does not store dim:
 * hnswlib takes it from the space; here it is checked against the header's offsets), checking
 * what hnswlib's loadIndex relies on: the offsets, the size (the file ends after the upper
 * levels), each link count at most maxM0 and each link below n. For tests and checks; it holds
 * the whole file.
 */
export async function readHnswlibFile(path: string, dim: number): Promise<HnswlibFile> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (err) {
    throw fileError(path, 'cannot read', err);
  }
  const bad = (what: string): InvalidArgumentError => new InvalidArgumentError(`${path}: not an hnswlib index of dim ${dim}: ${what}`);
  if (bytes.byteLength < HNSWLIB_HEADER_BYTES) throw bad(`${bytes.byteLength} bytes, fewer than the header's ${HNSWLIB_HEADER_BYTES}`);
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let o = 0;
  const size = (): number => {
    const x = v.getBigUint64(o, true);
    o += 8;
    if (x > BigInt(Number.MAX_SAFE_INTEGER)) throw bad(`a size_t field at byte ${o - 8} is ${x}`);
    return Number(x);
  };
  const offsetLevel0 = size();
  const maxElements = size();
  const curElementCount = size();
  const sizeDataPerElement = size();
  const labelOffset = size();
  const offsetData = size();
  const maxLevel = v.getInt32(o, true);
  const enterPoint = v.getUint32(o + 4, true);
  o += 8;
  const maxM = size();
  const maxM0 = size();
  const m = size();
  const mult = v.getFloat64(o, true);
  o += 8;
  const efConstruction = size();
  const header: HnswlibHeader = { offsetLevel0, maxElements, curElementCount, sizeDataPerElement, labelOffset, offsetData, maxLevel, enterPoint, maxM, maxM0, m, mult, efConstruction };
  const n = curElementCount;
  if (offsetLevel0 !== 0) throw bad(`offsetLevel0_ is ${offsetLevel0}; expected 0`);
  if (offsetData !== 4 + 4 * maxM0) throw bad(`offsetData_ is ${offsetData}; expected 4 + 4 maxM0_ = ${4 + 4 * maxM0}`);
  if (labelOffset !== offsetData + 4 * dim) throw bad(`label_offset_ is ${labelOffset}; expected offsetData_ + 4 dim = ${offsetData + 4 * dim}`);
  if (sizeDataPerElement !== labelOffset + 8) throw bad(`size_data_per_element_ is ${sizeDataPerElement}; expected label_offset_ + 8 = ${labelOffset + 8}`);
  if (maxElements < n) throw bad(`max_elements_ ${maxElements} < cur_element_count ${n}`);
  if (n > 0 && enterPoint >= n) throw bad(`enterpoint_node_ is ${enterPoint}; expected a node below ${n}`);
  const level0End = HNSWLIB_HEADER_BYTES + n * sizeDataPerElement;
  if (bytes.byteLength < level0End + 4 * n) throw bad(`${bytes.byteLength} bytes; level 0 and the upper levels' sizes need at least ${level0End + 4 * n}`);
  const counts = new Uint32Array(n);
  const links = new Uint32Array(n * maxM0);
  const rows = new Float32Array(n * dim);
  const labels = new BigUint64Array(n);
  for (let i = 0; i < n; i++) {
    const at = HNSWLIB_HEADER_BYTES + i * sizeDataPerElement;
    const word = v.getUint32(at, true);
    counts[i] = word & MAX_LINKS;
    if (word >>> 16 !== 0) throw bad(`element ${i}: link header ${word.toString(16)}: the deleted mark or byte 3 set`);
    if (counts[i] > maxM0) throw bad(`element ${i}: ${counts[i]} links; at most maxM0_ = ${maxM0}`);
    for (let e = 0; e < maxM0; e++) links[i * maxM0 + e] = v.getUint32(at + 4 + 4 * e, true);
    for (let e = 0; e < counts[i]; e++) if (links[i * maxM0 + e] >= n) throw bad(`element ${i}: link ${e} is ${links[i * maxM0 + e]}; expected a node below ${n}`);
    for (let j = 0; j < dim; j++) rows[i * dim + j] = v.getFloat32(at + offsetData + 4 * j, true);
    labels[i] = v.getBigUint64(at + labelOffset, true);
  }
  const upperSizes = new Uint32Array(n);
  let at = level0End;
  for (let i = 0; i < n; i++) {
    upperSizes[i] = v.getUint32(at, true);
    at += 4 + upperSizes[i];
    if (at > bytes.byteLength) throw bad(`element ${i}: its upper levels run past the end of the file`);
  }
  if (at !== bytes.byteLength) throw bad(`${bytes.byteLength - at} bytes after the upper levels (hnswlib's loadIndex refuses the file)`);
  return { header, dim, counts, links, rows, labels, upperSizes };
}

/**
 * The row nearest the mean of the rows (squared L2; the first of equals): an entry point for a
 * one-layer graph, whose searches all start there. `rows` is called twice (the mean, then the
 * nearest row).
 */
export async function nearestToMean(rows: () => AsyncIterable<Float32Array>, dim: number): Promise<number> {
  const mean = new Float64Array(dim);
  let n = 0;
  for await (const block of rows()) {
    for (let p = 0; p < block.length; p++) mean[p % dim] += block[p];
    n += block.length / dim;
  }
  if (n === 0) return 0;
  for (let j = 0; j < dim; j++) mean[j] /= n;
  let best = 0;
  let bestD = Infinity;
  let r = 0;
  for await (const block of rows()) {
    for (let i = 0; i < block.length / dim; i++, r++) {
      let d = 0;
      for (let j = 0; j < dim; j++) d += (block[i * dim + j] - mean[j]) ** 2;
      if (d < bestD) {
        bestD = d;
        best = r;
      }
    }
  }
  return best;
}
