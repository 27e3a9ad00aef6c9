/**
 * The index-kind registry (src/indexes/registry.ts): every index file type is read by exactly one
 * kind, each kind's factory strings parse to it and spell back the same, and the factory, loadIndex
 * and the kinds' own parameters agree with what each kind says of itself.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createBackend } from '../../src/backend/create-backend.js';
import { randomFloats } from '../../src/common/random.js';
import { createIndex, describeIndexType, parseIndexType } from '../../src/indexes/factory.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';
import { IvfFlatIndex } from '../../src/indexes/ivf/ivf-flat-index.js';
import { GraphIndex } from '../../src/indexes/graph/graph-index.js';
import { loadIndex } from '../../src/indexes/load-index.js';
import { INDEX_KINDS, indexKind, kindOfFileType } from '../../src/indexes/registry.js';
import { KIND_SEARCH_PARAMS, kindSearchFlag } from '../../src/indexes/kind.js';
import { TYPE_CODES } from '../../src/io/index-format.js';

const dir = mkdtempSync(join(tmpdir(), 'wgknn-registry-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Factory strings of each kind, in their canonical spelling. */
const SPELLINGS: Record<string, string[]> = {
  Flat: ['Flat', 'SQ8', 'SQ4,RFlat', 'SQfp16', 'PQ4', 'PQ4x6,Refine(SQfp16)', 'LSHrt,RFlat', 'PCAR4,Flat,RFlat', 'Prefix4,Flat'],
  IVF: ['IVF4,Flat', 'IVF1,SQ8', 'IVF16,PQ4,RFlat', 'IVF4294967295,SQfp16'],
  CAGRA: ['CAGRA32', 'CAGRA1', 'CAGRA256'],
};

describe('index kinds', () => {
  it('each file type is read by exactly one kind, and every type a kind claims is one', () => {
    for (const type of TYPE_CODES) {
      const owners = INDEX_KINDS.filter((k) => k.fileTypes.includes(type)).map((k) => k.name);
      expect(owners, type).toHaveLength(1);
      expect(kindOfFileType(type).name).toBe(owners[0]);
    }
    for (const kind of INDEX_KINDS) for (const type of kind.fileTypes) expect(TYPE_CODES as readonly string[]).toContain(type);
    expect(() => kindOfFileType('Graph' as never)).toThrow('no index kind reads files of type Graph');
  });

  it('names are unique and found by name; every kind has spellings here', () => {
    const names = INDEX_KINDS.map((k) => k.name);
    expect(new Set(names).size).toBe(names.length);
    for (const kind of INDEX_KINDS) {
      expect(indexKind(kind.name)).toBe(kind);
      expect(SPELLINGS[kind.name], `add ${kind.name}'s factory strings to SPELLINGS`).toBeDefined();
    }
    expect(() => indexKind('HNSW' as never)).toThrow('unknown index kind "HNSW"; expected Flat, IVF or CAGRA');
  });

  it("a kind's factory strings parse to it and spell back the same; no other kind claims its stage", () => {
    for (const [name, spellings] of Object.entries(SPELLINGS)) {
      for (const s of spellings) {
        const type = parseIndexType(s);
        expect(type.type, s).toBe(name);
        expect(describeIndexType(type)).toBe(s);
        const bad = (): Error => new Error('out of range');
        const first = s.split(',')[0];
        const claims = INDEX_KINDS.filter((k) => k.parseStage(first, bad) !== null).map((k) => k.name);
        expect(claims, s).toEqual(indexKind(name as never).stage(type) === '' ? [] : [name]);
        if (claims.length > 0) expect(first).toBe(indexKind(name as never).stage(type));
      }
    }
  });

  it("each kind's own search parameters and training stage", () => {
    expect(indexKind('Flat').searchParams(parseIndexType('Flat'))).toEqual({});
    expect(indexKind('Flat').training(parseIndexType('SQ8'))).toBeNull();
    expect(indexKind('IVF').searchParams(parseIndexType('IVF16,Flat'))).toEqual({ nprobe: { min: 1, max: 16, expected: 'an integer in [1, 16] (nlist)' } });
    expect(indexKind('IVF').training(parseIndexType('IVF16,SQ8'))).toEqual({ minRows: 16, what: 'nlist = 16' });
    const cagra = indexKind('CAGRA').searchParams(parseIndexType('CAGRA32'));
    expect(Object.keys(cagra)).toEqual(['itopk', 'searchWidth', 'maxIterations', 'seeds', 'entryRows']);
    expect(cagra.searchWidth).toEqual({ min: 1, max: 16, expected: 'an integer in [1, 16]' }); // 512 neighbours an iteration: 16 rows of 32
    expect(indexKind('CAGRA').searchParams(parseIndexType('CAGRA8')).searchWidth!.max).toBe(32);
  });

  it("every kind's own search parameters are KIND_SEARCH_PARAMS, which the CLI spells as flags and shard jobs carry", () => {
    for (const s of ['Flat', 'IVF16,Flat', 'IVF16,SQ8', 'CAGRA32']) {
      const type = parseIndexType(s);
      for (const key of Object.keys(indexKind(type.type).searchParams(type))) expect(KIND_SEARCH_PARAMS, `${s}: ${key}`).toContain(key);
    }
    expect(KIND_SEARCH_PARAMS.map(kindSearchFlag)).toEqual(['nprobe', 'itopk', 'search-width', 'max-iterations', 'seeds', 'entry-rows']);
  });

  it('createIndex makes the kind\'s class, and loadIndex reads its file back through the kind', async () => {
    const backend = await createBackend({ backend: 'cpu' });
    try {
      const d = 8;
      const x = randomFloats(64 * d, 7);
      for (const [s, cls] of [['Flat', FlatIndex], ['SQ8', FlatIndex], ['IVF4,Flat', IvfFlatIndex], ['IVF4,SQ8', IvfFlatIndex], ['CAGRA8', GraphIndex]] as const) {
        const index = createIndex(backend, d, parseIndexType(s), 'l2', { nprobe: 2 });
        expect(index, s).toBeInstanceOf(cls);
        await index.train(x);
        await index.add(x);
        const path = join(dir, `${s.replace(/,/g, '_')}.idx`);
        await index.save(path);
        const loaded = await loadIndex(backend, path);
        expect(loaded, s).toBeInstanceOf(cls);
        const [a, b] = [await index.search(x.subarray(0, 4 * d), 5), await loaded.search(x.subarray(0, 4 * d), 5)];
        expect(Array.from(b.labels)).toEqual(Array.from(a.labels));
        expect(Array.from(b.distances)).toEqual(Array.from(a.distances));
        await index.dispose();
        await loaded.dispose();
      }
    } finally {
      backend.dispose();
    }
  });
});
