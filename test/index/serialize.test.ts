/**
 * serialize() and deserializeIndex (src/io/index-bytes.ts, src/indexes/read-index.ts): for every
 * registered kind and file type, the bytes are exactly the file save writes, deserializeIndex
 * gives the index loadIndex gives (the same searches, the same bytes again, the same memory),
 * on both backends; bad bytes are refused, naming the fault. memoryBytes is counted from the
 * arrays and buffers (src/indexes/memory.ts): host and device as each backend keeps them.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import { createBackend } from '../../src/backend/create-backend.js';
import { randomFloats } from '../../src/common/random.js';
import { createIndex, parseIndexType } from '../../src/indexes/factory.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { loadIndex } from '../../src/indexes/load-index.js';
import { deserializeIndex } from '../../src/indexes/read-index.js';
import { INDEX_KINDS } from '../../src/indexes/registry.js';
import type { VectorIndex } from '../../src/indexes/vector-index.js';
import { TYPE_CODES } from '../../src/io/index-format.js';
import { parseHeader } from '../../src/io/index-stream.js';
import { Sha256 } from '../../src/io/sha256.js';
import { InvalidArgumentError } from '../../src/errors.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

const dir = mkdtempSync(join(tmpdir(), 'wgknn-serialize-'));
const cpu = await createBackend({ backend: 'cpu' });
const gpu = await gpuBackend();
afterAll(() => {
  cpu.dispose();
  disposeGpuBackends();
  rmSync(dir, { recursive: true, force: true });
});

const d = 8;
const n = 300;
const x = randomFloats(n * d, 11);
const xq = randomFloats(6 * d, 12);
const K = 5;

/** Factory strings that between them write every file type (checked below), with refine rows, transforms and codes. */
const CASES: [string, 'l2' | 'cosine'][] = [
  ['Flat', 'l2'], ['Flat', 'cosine'], ['SQ8', 'l2'], ['SQ4,RFlat', 'l2'], ['SQfp16', 'cosine'], ['PQ4x6', 'l2'], ['PQ4x6,Refine(SQfp16)', 'l2'],
  ['LSHrt,RFlat', 'l2'], ['PCAR4,Flat,RFlat', 'l2'], ['Prefix4,Flat', 'cosine'],
  ['IVF4,Flat', 'l2'], ['IVF4,SQ8', 'l2'], ['IVF4,SQ4', 'cosine'], ['IVF4,SQfp16', 'l2'], ['IVF4,PQ4x6,RFlat', 'l2'], ['CAGRA8', 'l2'],
];

/** A trained index of `spec` holding x with caller ids, in two adds, then removals: so the ids section and the live rows matter. */
async function built(backend: Backend, spec: string, metric: 'l2' | 'cosine', hostCopy?: boolean): Promise<VectorIndex> {
  const index = createIndex(backend, d, parseIndexType(spec), metric, { nprobe: 2, hostCopy });
  await index.train(x);
  const ids = Float64Array.from({ length: n }, (_, i) => 10_000 + 3 * i);
  await index.addWithIds(x.subarray(0, (n / 2) * d), ids.subarray(0, n / 2));
  await index.addWithIds(x.subarray((n / 2) * d), ids.subarray(n / 2));
  await index.removeIds([10_000, 10_003, 10_300]);
  return index;
}

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

describe.each([
  ['cpu', cpu],
  ['webgpu', gpu],
] as const)('serialize and deserializeIndex on %s', (name, backend) => {
  it.skipIf(!backend).each(CASES)('%s (%s): the bytes save writes; deserializeIndex = loadIndex', async (spec, metric) => {
    const b = backend!;
    const index = await built(b, spec, metric);
    const bytes = await index.serialize();
    const path = join(dir, `${name}-${spec.replace(/[^A-Za-z0-9]/g, '_')}-${metric}.idx`);
    await index.save(path);
    expect(sha(bytes), 'serialize = the file save wrote').toBe(sha(readFileSync(path)));
    expect(bytes.byteLength).toBe(readFileSync(path).byteLength);

    const fromBytes = await deserializeIndex(b, bytes);
    const fromFile = await loadIndex(b, path);
    expect(fromBytes.constructor).toBe(fromFile.constructor);
    expect([fromBytes.ntotal, fromBytes.dim, fromBytes.metric]).toEqual([index.ntotal, d, metric]);
    const [a, c, f] = [await index.search(xq, K), await fromBytes.search(xq, K), await fromFile.search(xq, K)];
    expect(Array.from(c.labels), 'deserialized = loaded').toEqual(Array.from(f.labels));
    expect(Array.from(c.distances)).toEqual(Array.from(f.distances));
    expect(Array.from(c.labels), 'deserialized = the original').toEqual(Array.from(a.labels));
    expect(fromBytes.contains(10_003)).toBe(false);
    expect(fromBytes.contains(10_006)).toBe(true);
    expect(sha(await fromBytes.serialize()), 'serialized again: the same bytes').toBe(sha(bytes));
    expect(fromBytes.memoryBytes, 'the same index holds the same memory').toEqual(fromFile.memoryBytes);

    const m = index.memoryBytes;
    expect(m.host).toBeGreaterThan(0);
    if (name === 'cpu') expect(m.device, 'the CPU backend has no device memory').toBe(0);
    else expect(m.device).toBeGreaterThan(0);
    for (const i of [index, fromBytes, fromFile]) await i.dispose();
  }, 120_000);
});

describe('every file type is covered', () => {
  it('the cases above write each type of TYPE_CODES, and every kind', async () => {
    const types = new Set<string>();
    const kinds = new Set<string>();
    for (const [spec, metric] of CASES) {
      const index = await built(cpu, spec, metric);
      types.add(parseHeader('case', (await index.serialize()).subarray(0, 40)).type);
      kinds.add(parseIndexType(spec).type);
      await index.dispose();
    }
    expect([...types].sort()).toEqual([...TYPE_CODES].sort());
    expect([...kinds].sort()).toEqual(INDEX_KINDS.map((k) => k.name).sort());
  }, 120_000);
});

describe('bad bytes', () => {
  it('are refused with the fault named: truncated, trailing, wrong magic, short header, corrupt, not bytes', async () => {
    const index = await built(cpu, 'IVF4,SQ8', 'l2');
    const bytes = await index.serialize();
    await index.dispose();
    const refused = async (b: unknown, pattern: RegExp): Promise<void> => {
      const err = await deserializeIndex(cpu, b as Uint8Array).then(() => null, (e: unknown) => e);
      expect(err, String(pattern)).toBeInstanceOf(InvalidArgumentError);
      expect((err as Error).message).toMatch(pattern);
    };
    await refused(bytes.subarray(0, bytes.length - 1), new RegExp(`^index bytes: truncated: the header describes ${bytes.length} bytes; the bytes has ${bytes.length - 1}`));
    await refused(new Uint8Array([...bytes, 0]), /^index bytes: has trailing bytes/);
    const magic = bytes.slice();
    magic[0] = 'X'.charCodeAt(0);
    await refused(magic, /^index bytes: not a webgpu-knn index file \(no "WGPUKNN" magic at byte 0\)/);
    await refused(bytes.subarray(0, 20), /^index bytes: truncated: 20 bytes, fewer than the header's 40/);
    await refused(new Uint8Array(0), /^index bytes: not a webgpu-knn index file/);
    const flipped = bytes.slice();
    flipped[bytes.length - 100] ^= 1; // a bit of the ids section: only the checksum sees it
    await refused(flipped, /^index bytes: checksum mismatch: the bytes is corrupt/);
    const nprobe = bytes.slice();
    new DataView(nprobe.buffer).setUint32(8 + 4 * 6, 99, true);
    await refused(nprobe, /^index bytes: bad header: nprobe is 99; expected an integer in \[1, 4\] \(nlist\)/);
    await refused('WGPUKNN', /^deserializeIndex: bytes must be a Uint8Array or an ArrayBuffer .*; got string/);
    await refused([1, 2, 3], /got an array/);
    // An ArrayBuffer (as IndexedDB may hand it back) and a view inside a larger buffer are read as bytes.
    const inner = new Uint8Array(bytes.length + 8);
    inner.set(bytes, 8);
    for (const b of [bytes.slice().buffer, inner.subarray(8)]) {
      const again = await deserializeIndex(cpu, b);
      expect(again.ntotal).toBe(n - 3);
      await again.dispose();
    }
  });
});

describe('serialize', () => {
  it('refuses an index not yet trained (its tables are part of the bytes), naming the call', async () => {
    const sq = createIndex(cpu, d, parseIndexType('SQ8'), 'l2');
    const ivf = createIndex(cpu, d, parseIndexType('IVF4,Flat'), 'l2');
    await expect(sq.serialize()).rejects.toThrow('FlatIndex.serialize: the SQ8 index is not trained; call train(xt) first');
    await expect(ivf.serialize()).rejects.toThrow('IvfFlatIndex.serialize: the index is not trained; call train(xt) first');
    await sq.dispose();
    await ivf.dispose();
    await expect(sq.serialize()).rejects.toThrow('FlatIndex.serialize: the index was disposed');
  });
});

describe('memoryBytes', () => {
  it('Flat on the CPU: the rows are host memory, at least n * d * 4 bytes, and grow with the rows', async () => {
    const flat = new FlatIndex(cpu, { dim: d });
    expect(flat.memoryBytes).toEqual({ host: 0, device: 0 });
    await flat.add(x);
    const m = flat.memoryBytes;
    expect(m.device).toBe(0);
    expect(m.host).toBeGreaterThanOrEqual(n * d * 4 + n * 8); // rows, ids
    await flat.add(x);
    expect(flat.memoryBytes.host).toBeGreaterThan(m.host);
    await flat.reset();
    expect(flat.memoryBytes.host).toBeLessThan(m.host);
    await flat.dispose();
  });

  it.skipIf(!gpu)('Flat on WebGPU: the rows on the device, and on the host only with a host copy', async () => {
    for (const hostCopy of [true, false]) {
      const flat = new FlatIndex(gpu!, { dim: d, hostCopy });
      await flat.add(x);
      const m = flat.memoryBytes;
      expect(m.device, `hostCopy ${hostCopy}`).toBeGreaterThanOrEqual(n * d * 4 + n * 4); // rows, norms
      if (hostCopy) expect(m.host).toBeGreaterThanOrEqual(n * d * 4 + n * 8);
      else expect(m.host).toBeLessThan(n * d * 4);
      await flat.dispose();
    }
  });

  it('a coded index holds less than its float rows; refine rows and IVF lists count', async () => {
    const flat = await built(cpu, 'Flat', 'l2');
    const sq4 = await built(cpu, 'SQ4', 'l2');
    const sq4r = await built(cpu, 'SQ4,RFlat', 'l2');
    const ivf = await built(cpu, 'IVF4,Flat', 'l2');
    expect(sq4.memoryBytes.host).toBeLessThan(flat.memoryBytes.host);
    expect(sq4r.memoryBytes.host).toBeGreaterThan(sq4.memoryBytes.host + n * d * 4 - 1);
    expect(ivf.memoryBytes.host).toBeGreaterThan(n * d * 4 + n * 4); // rows, their ids in the lists, the centroids
    for (const i of [flat, sq4, sq4r, ivf]) await i.dispose();
  });
});

describe('Sha256 (the bytes checksum)', () => {
  it('equals node:crypto whatever the pieces', () => {
    for (const len of [0, 1, 55, 56, 63, 64, 65, 119, 120, 1000, 70_000]) {
      const b = Uint8Array.from({ length: len }, (_, i) => (i * 31 + 7) & 255);
      const h = new Sha256();
      for (let o = 0; o < len; o += 37) h.update(b.subarray(o, o + 37));
      expect(Buffer.from(h.digest()).toString('hex'), `${len} bytes`).toBe(sha(b));
    }
  });
});
