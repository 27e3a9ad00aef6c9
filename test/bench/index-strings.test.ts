import { describe, expect, it } from 'vitest';
import { DEFAULT_ITOPKS, faissHnswM, faissString, parseIndexString, searchGrid, searchParams } from '../../bench/index-strings.js';

// The factory strings of `bench compare --index`: their shapes, and the searches each runs, ours and Faiss's.
describe('bench index strings', () => {
  it('parses the codec forms and CAGRA<degree>, and refuses others', () => {
    expect(parseIndexString('IVF64,PQ16,RFlat')).toEqual({ description: 'IVF64,PQ16,RFlat', nlist: 64, refine: true, degree: null });
    expect(parseIndexString('SQ8')).toEqual({ description: 'SQ8', nlist: null, refine: false, degree: null });
    expect(parseIndexString('CAGRA32')).toEqual({ description: 'CAGRA32', nlist: null, refine: false, degree: 32 });
    for (const bad of ['CAGRA0', 'CAGRA', 'IVF8,CAGRA32', 'CAGRA32,RFlat', 'CAGRA32,Flat', 'HNSW16', 'IVF0,Flat', 'SQ9']) expect(parseIndexString(bad), bad).toBeNull();
  });

  it('sweeps nprobe up to nlist, kFactor for ,RFlat, itopk for CAGRA', () => {
    const grid = (text: string, itopks?: number[]) => searchGrid(parseIndexString(text)!, [1, 8, 64], [2, 4], itopks).map((c) => c.param);
    expect(grid('IVF8,SQ8,RFlat')).toEqual(['nprobe=1,kFactor=2', 'nprobe=1,kFactor=4', 'nprobe=8,kFactor=2', 'nprobe=8,kFactor=4']);
    expect(grid('Flat')).toEqual(['-']);
    expect(grid('CAGRA32')).toEqual(DEFAULT_ITOPKS.map((l) => `itopk=${l}`));
    expect(grid('CAGRA32', [48, 256])).toEqual(['itopk=48', 'itopk=256']);
    const [c] = searchGrid(parseIndexString('CAGRA16')!, [8], [4], [64]);
    expect(c).toEqual({ param: 'itopk=64', nprobe: null, kFactor: null, itopk: 64 });
    expect(searchParams(c)).toEqual({ itopk: 64 });
    // --search-width and --seeds: in every CAGRA row's param and search, and nowhere else.
    const [w] = searchGrid(parseIndexString('CAGRA16')!, [8], [4], [16, 32], { searchWidth: 2, seeds: 128 });
    expect(w).toEqual({ param: 'itopk=16,width=2,seeds=128', nprobe: null, kFactor: null, itopk: 16, searchWidth: 2, seeds: 128 });
    expect(searchParams(w)).toEqual({ itopk: 16, searchWidth: 2, seeds: 128 });
    expect(searchGrid(parseIndexString('CAGRA16')!, [8], [4], [16], { seeds: 8 }).map((g) => g.param)).toEqual(['itopk=16,seeds=8']);
    const [e] = searchGrid(parseIndexString('CAGRA16')!, [8], [4], [16], { entryRows: 2048 });
    expect(e.param).toBe('itopk=16,entries=2048');
    expect(searchParams(e)).toEqual({ itopk: 16, entryRows: 2048 });
    expect(searchGrid(parseIndexString('IVF8,Flat')!, [8], [4], [16], { seeds: 8 })[0]).toEqual({ param: 'nprobe=8', nprobe: 8, kFactor: null, itopk: null });
    expect(searchParams(searchGrid(parseIndexString('IVF8,Flat,RFlat')!, [8], [4])[0])).toEqual({ nprobe: 8, kFactor: 4 });
  });

  it('gives Faiss the same string, or HNSW<degree/2> at each ef for CAGRA<degree>', () => {
    expect(faissString(parseIndexString('IVF8,Flat')!, [2, 8], [4], [32])).toEqual({
      description: 'IVF8,Flat',
      configs: [{ param: 'nprobe=2', nprobe: 2, kFactor: null, itopk: null }, { param: 'nprobe=8', nprobe: 8, kFactor: null, itopk: null }],
    });
    expect(faissString(parseIndexString('CAGRA32')!, [8], [4], [32, 64])).toEqual({
      description: 'HNSW16',
      efConstruction: 40,
      configs: [{ param: 'ef=32', nprobe: null, kFactor: null, efSearch: 32 }, { param: 'ef=64', nprobe: null, kFactor: null, efSearch: 64 }],
    });
    expect([faissHnswM(64), faissHnswM(33), faissHnswM(1)]).toEqual([32, 16, 1]);
    // bench compare --faiss-hnsw-m 32: HNSW32 beside CAGRA32.
    expect(faissString(parseIndexString('CAGRA32')!, [8], [4], [16], 32)).toMatchObject({ description: 'HNSW32', configs: [{ param: 'ef=16', efSearch: 16 }] });
  });
});
