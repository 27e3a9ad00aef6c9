/**
 * The hnswlib index file (src/io/hnswlib-file.ts): every header field and element byte where
 * hnswlib's saveIndex puts it, a graph with PAD entries (link counts, zeros after), labels as the
 * index's ids after removal, failures that leave nothing behind, and a search of the file by
 * hnswlib's own level-0 walk (searchBaseLayerST, ported below) from its entry point.
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { randomFloats } from '../../src/common/random.js';
import { GraphIndex } from '../../src/indexes/graph/graph-index.js';
import { type HnswlibFile, HNSWLIB_HEADER_BYTES, nearestToMean, readHnswlibFile, writeHnswlibFile } from '../../src/io/hnswlib-file.js';
import { PAD_ID } from '../../src/kernel-facts.js';
import { cpuBackend } from '../helpers/cpu.js';

const dir = mkdtempSync(join(tmpdir(), 'wgknn-hnswlib-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const at = (name: string): string => join(dir, name);
const noTemps = (): void => expect(readdirSync(dir).filter((f) => f.includes('webgpu-knn-tmp'))).toEqual([]);

/**
 * hnswlib's searchKnn on a one-layer index (maxlevel_ 0): searchBaseLayerST from the entry point
 * with ef, squared L2 (hnswlib's L2Space), the k nearest labels, nearest first.
 */
function hnswlibSearch(f: HnswlibFile, q: Float32Array, k: number, ef: number): number[] {
  const { dim } = f;
  const dist = (i: number): number => {
    let s = 0;
    for (let j = 0; j < dim; j++) s += (q[j] - f.rows[i * dim + j]) ** 2;
    return s;
  };
  const ep = f.header.enterPoint;
  const visited = new Set([ep]);
  const top: [number, number][] = [[dist(ep), ep]]; // kept sorted, nearest first, at most ef
  const candidates: [number, number][] = [[dist(ep), ep]];
  while (candidates.length > 0) {
    candidates.sort((a, b) => a[0] - b[0]);
    const [d, c] = candidates.shift()!;
    if (d > top[top.length - 1][0] && top.length === ef) break;
    for (let e = 0; e < f.counts[c]; e++) {
      const nb = f.links[c * f.header.maxM0 + e];
      if (visited.has(nb)) continue;
      visited.add(nb);
      const dn = dist(nb);
      if (top.length < ef || dn < top[top.length - 1][0]) {
        candidates.push([dn, nb]);
        top.push([dn, nb]);
        top.sort((a, b) => a[0] - b[0]);
        if (top.length > ef) top.pop();
      }
    }
  }
  return top.slice(0, k).map(([, i]) => Number(f.labels[i]));
}

/** The k nearest labels of `q` among the file's rows (squared L2, exact). */
function exactLabels(f: HnswlibFile, q: Float32Array, k: number): number[] {
  const n = f.header.curElementCount;
  const d = (i: number): number => f.rows.subarray(i * f.dim, (i + 1) * f.dim).reduce((s, v, j) => s + (v - q[j]) ** 2, 0);
  return Array.from({ length: n }, (_, i) => [d(i), i]).sort((a, b) => a[0] - b[0] || a[1] - b[1]).slice(0, k).map(([, i]) => Number(f.labels[i]));
}

describe('hnswlib index files', () => {
  it('writes every header field and element where hnswlib reads them; PAD entries are left out of the link count', async () => {
    const n = 5;
    const dim = 3;
    const degree = 4;
    const rows = Float32Array.from({ length: n * dim }, (_, i) => i * 0.5 - 3);
    // Node 1 has PADs between its edges, node 4 only PADs.
    const P = PAD_ID;
    const graph = Uint32Array.from([1, 2, 3, 4, 0, P, 2, P, 0, 1, 3, 4, P, P, P, P, P, P, P, P]);
    graph.set([4, 0, 1, 2], 12);
    const labels = [10, 11, 2 ** 40, Number.MAX_SAFE_INTEGER, 0];
    await writeHnswlibFile(at('a.hnsw'), { n, dim, degree, rows, graph, labels, entryPoint: 3 });
    const bytes = readFileSync(at('a.hnsw'));
    const per = 4 + 4 * degree + 4 * dim + 8; // 40
    expect(bytes.byteLength).toBe(HNSWLIB_HEADER_BYTES + n * per + 4 * n);
    // The header, field by field, as saveIndex writes it (size_t 8 bytes, int and tableint 4).
    const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const u64 = (o: number): number => Number(v.getBigUint64(o, true));
    expect(u64(0)).toBe(0); // offsetLevel0_
    expect(u64(8)).toBe(n); // max_elements_
    expect(u64(16)).toBe(n); // cur_element_count
    expect(u64(24)).toBe(per); // size_data_per_element_
    expect(u64(32)).toBe(per - 8); // label_offset_
    expect(u64(40)).toBe(4 + 4 * degree); // offsetData_
    expect(v.getInt32(48, true)).toBe(0); // maxlevel_
    expect(v.getUint32(52, true)).toBe(3); // enterpoint_node_
    expect(u64(56)).toBe(2); // maxM_
    expect(u64(64)).toBe(degree); // maxM0_
    expect(u64(72)).toBe(2); // M_
    expect(v.getFloat64(80, true)).toBeCloseTo(1 / Math.log(2), 12); // mult_
    expect(u64(88)).toBe(200); // ef_construction_
    // Element 1: count 2 (PADs dropped, later edges moved up), zeros after, its row, its label.
    const e1 = HNSWLIB_HEADER_BYTES + per;
    expect(Array.from({ length: 1 + degree }, (_, i) => v.getUint32(e1 + 4 * i, true))).toEqual([2, 0, 2, 0, 0]);
    expect(Array.from({ length: dim }, (_, j) => v.getFloat32(e1 + 20 + 4 * j, true))).toEqual(Array.from(rows.subarray(3, 6)));
    expect(v.getBigUint64(e1 + 32, true)).toBe(11n);
    // The upper levels: a 0 size for each element.
    expect(Array.from({ length: n }, (_, i) => v.getUint32(HNSWLIB_HEADER_BYTES + n * per + 4 * i, true))).toEqual([0, 0, 0, 0, 0]);

    const f = await readHnswlibFile(at('a.hnsw'), dim);
    expect(f.header).toEqual({
      offsetLevel0: 0, maxElements: n, curElementCount: n, sizeDataPerElement: per, labelOffset: per - 8, offsetData: 20,
      maxLevel: 0, enterPoint: 3, maxM: 2, maxM0: degree, m: 2, mult: 1 / Math.log(2), efConstruction: 200,
    });
    expect(Array.from(f.counts)).toEqual([4, 2, 4, 4, 0]);
    expect(Array.from(f.links)).toEqual([1, 2, 3, 4, 0, 2, 0, 0, 0, 1, 3, 4, 4, 0, 1, 2, 0, 0, 0, 0]);
    expect(f.rows).toEqual(rows);
    expect(Array.from(f.labels, Number)).toEqual(labels);
    expect(Array.from(f.upperSizes)).toEqual([0, 0, 0, 0, 0]);
    await expect(readHnswlibFile(at('a.hnsw'), dim + 1)).rejects.toThrow(/label_offset_ is 32; expected offsetData_ \+ 4 dim = 36/);
  });

  it('takes the rows in blocks of any size, and an odd degree (M = floor(degree / 2))', async () => {
    const n = 7;
    const dim = 2;
    const degree = 3;
    const rows = Float32Array.from({ length: n * dim }, (_, i) => i);
    const graph = Uint32Array.from({ length: n * degree }, (_, p) => (Math.floor(p / degree) + 1 + (p % degree)) % n);
    async function* blocks(): AsyncGenerator<Float32Array> {
      yield rows.subarray(0, 3); // a row and a half
      yield rows.subarray(3, 3);
      yield rows.subarray(3);
    }
    await writeHnswlibFile(at('b.hnsw'), { n, dim, degree, rows: blocks(), graph, labels: [0, 1, 2, 3, 4, 5, 6], entryPoint: 0 });
    const f = await readHnswlibFile(at('b.hnsw'), dim);
    expect(f.rows).toEqual(rows);
    expect([f.header.maxM0, f.header.m, f.header.maxM]).toEqual([3, 1, 1]);
    expect(Array.from(f.links)).toEqual(Array.from(graph));
  });

  it('an empty graph: no elements, maxlevel_ -1 and no entry point, as hnswlib writes a new index', async () => {
    await writeHnswlibFile(at('empty.hnsw'), { n: 0, dim: 4, degree: 8, rows: new Float32Array(0), graph: new Uint32Array(0), labels: [], entryPoint: 0 });
    const f = await readHnswlibFile(at('empty.hnsw'), 4);
    expect(statSync(at('empty.hnsw')).size).toBe(HNSWLIB_HEADER_BYTES);
    expect([f.header.curElementCount, f.header.maxLevel, f.header.enterPoint]).toEqual([0, -1, 0xffffffff]);
  });

  it('refuses a bad graph, label, entry point or row count, leaving an old file as it was and no temporary file', async () => {
    const old = at('old.hnsw');
    writeFileSync(old, 'old');
    const base = { n: 3, dim: 2, degree: 2, rows: new Float32Array(6), graph: Uint32Array.from([1, 2, 0, PAD_ID, 0, 1]), labels: [0, 1, 2], entryPoint: 0 };
    const cases: [Partial<typeof base>, RegExp][] = [
      [{ graph: Uint32Array.from([1, 2, 0, 3, 0, 1]) }, /graph\[3\] \(node 1\) is 3; expected a node in \[0, 2\] or 0xffffffff \(none\)/],
      [{ graph: new Uint32Array(5) }, /the graph holds 5 edges; expected n x degree = 6/],
      [{ labels: [0, -1, 2] }, /label 1 is -1; expected an integer in \[0, 2\^53 - 1\]/],
      [{ labels: [0, 1] }, /2 labels for 3 vectors/],
      [{ entryPoint: 3 }, /the entry point is 3; expected a node in \[0, 2\]/],
      [{ rows: new Float32Array(5) }, /the rows hold 5 floats; expected n x dim = 6/],
      [{ rows: new Float32Array(8) }, /more than n = 3 rows of dim 2/],
    ];
    for (const [change, message] of cases) {
      await expect(writeHnswlibFile(old, { ...base, ...change })).rejects.toThrow(message);
      expect(readFileSync(old, 'utf8')).toBe('old');
      noTemps();
    }
    await expect(writeHnswlibFile(at('none.hnsw'), { ...base, rows: new Float32Array(5) })).rejects.toThrow(/cannot write an hnswlib index/);
    expect(existsSync(at('none.hnsw'))).toBe(false);
    noTemps();
  });

  it("a GraphIndex's export: labels are its ids after removal, edges only among the live rows, and hnswlib's walk finds the neighbours", async () => {
    const backend = cpuBackend();
    const n = 1200;
    const d = 16;
    const degree = 16;
    // Uniform rows: the graph is connected. (On tightly clustered rows a CAGRA graph can fall into
    // one component a cluster; hnswlib's walk from its one entry point then stays in one: see docs/index-kinds.md.)
    const x = randomFloats(n * d, 7);
    const index = new GraphIndex(backend, { dim: d, degree });
    const ids = BigInt64Array.from({ length: n }, (_, i) => BigInt(5000 + 3 * i));
    await index.addWithIds(x, ids);
    await index.search(x.subarray(0, d), 1); // builds the graph
    const removed = BigInt64Array.from({ length: 100 }, (_, i) => ids[i * 7]);
    expect(await index.removeIds(removed)).toBe(100);
    const gone = new Set(Array.from(removed, Number));
    const path = at('g.hnsw');
    const entry = await index.exportGraph(async (g) => {
      const entryPoint = await nearestToMean(g.rows, g.dim);
      await writeHnswlibFile(path, { n: g.n, dim: g.dim, degree: g.degree, rows: g.rows(), graph: g.graph, labels: g.ids, entryPoint });
      return entryPoint;
    });
    const f = await readHnswlibFile(path, d);
    const live = Array.from(ids, Number).filter((id) => !gone.has(id));
    expect(f.header.curElementCount).toBe(n - 100);
    expect(f.header.enterPoint).toBe(entry);
    expect(Array.from(f.labels, Number)).toEqual(live);
    // Each element's row is its id's row; its links, as labels, are live ids other than its own.
    for (let i = 0; i < live.length; i++) {
      const row = (live[i] - 5000) / 3;
      expect(f.rows.subarray(i * d, (i + 1) * d)).toEqual(x.subarray(row * d, (row + 1) * d));
      const links = Array.from(f.links.subarray(i * degree, i * degree + f.counts[i]), (l) => Number(f.labels[l]));
      expect(links.length).toBeGreaterThan(0);
      expect(links.includes(live[i])).toBe(false);
      for (const l of links) expect(gone.has(l)).toBe(false);
    }
    // The entry point is the row nearest the mean.
    const mean = new Float64Array(d);
    for (let i = 0; i < live.length; i++) for (let j = 0; j < d; j++) mean[j] += f.rows[i * d + j] / live.length;
    const dm = (i: number): number => f.rows.subarray(i * d, (i + 1) * d).reduce((s, v, j) => s + (v - mean[j]) ** 2, 0);
    for (let i = 0; i < live.length; i++) expect(dm(i)).toBeGreaterThanOrEqual(dm(entry) - 1e-9);
    // hnswlib's level-0 walk from the entry point, ef 64: recall@10 against the exact neighbours.
    const nq = 50;
    const xq = randomFloats(nq * d, 8);
    let hits = 0;
    for (let q = 0; q < nq; q++) {
      const query = xq.subarray(q * d, (q + 1) * d);
      const found = new Set(hnswlibSearch(f, query, 10, 64));
      hits += exactLabels(f, query, 10).filter((id) => found.has(id)).length;
    }
    const recall = hits / (nq * 10);
    // Measured 1.0 (1200 uniform rows of 16 dimensions, CAGRA16, ef 64; 0.94 at ef 16).
    expect(recall).toBeGreaterThanOrEqual(0.95);
    await index.dispose();
  });
});
