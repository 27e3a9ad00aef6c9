import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { asSelfQueries } from '../../bench/data.js';
import { benchReference, dropSelf, exactScores, tieAwareRecall } from '../../bench/exact.js';
import { codeBytes, defaultQuantizeStrings, nearestDivisor } from '../../bench/quantize.js';
import {
  QUANTIZE_FILES, QUANTIZE_HEADER, type QuantizeRecord, type QuantizeRun, quantizeFront, quantizeMarkdown, quantizeSvg,
} from '../../bench/quantize-report.js';
import { writeVectors } from '../../src/io/vectors.js';
import { clusteredFloats } from '../../src/common/random.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** A record with only what the report and the front read filled in. */
function rec(index: string, kFactor: number | null, bytesPerVector: number, recall10: number, extra: Partial<QuantizeRecord> = {}): QuantizeRecord {
  return {
    bench: 'quantize', data: 'hand', n: 10, d: 8, nq: 2, k: 10, metric: 'l2', selfQueries: false, index, kFactor, builtOn: 'cpu',
    buildSeconds: 0, indexBytes: bytesPerVector * 10, bytesPerVector, codeBytesPerVector: codeBytes(index, 8), recall1: recall10, recall10,
    recall100: null, backends: { cpu: { qps: 100, spread: 0, recall1: recall10, recall10, recall100: null } }, labelsDiffer: null, ...extra,
  };
}

function run(records: QuantizeRecord[], notMeasured: string[] = []): QuantizeRun {
  return {
    meta: {
      title: 'webgpu-knn quantize', data: 'hand', n: 10, d: 8, nq: 2, k: 10, metric: 'l2', selfQueries: false, reference: 'exact search (float64 brute force)',
      machine: 'test', adapter: null, node: 'v20', date: '2026-01-01', settings: [], command: 'webgpu-knn bench quantize', seconds: 1,
    },
    records,
    notMeasured,
  };
}

describe('quantize: Pareto front over (bytes per vector, recall@10)', () => {
  it('keeps equal points together, drops points beaten at equal bytes or equal recall', () => {
    const records = [
      rec('A', null, 10, 0.5),
      rec('B', null, 10, 0.5), // equal to A: neither beats the other, both on the front
      rec('C', null, 10, 0.4), // same bytes as A, lower recall
      rec('D', null, 20, 0.5), // same recall as A, more bytes
      rec('E', null, 20, 0.9),
      rec('F', null, 5, 0.3),
      rec('G', null, 30, 0.9), // E has the same recall for fewer bytes
      rec('H', null, 40, 1.0),
    ];
    expect(quantizeFront(records)).toEqual([true, true, false, false, true, true, false, true]);
  });

  it('draws every front point ringed and joins them by a step line, in a valid SVG', () => {
    const records = [rec('PQ8', null, 9, 0.4), rec('SQ8', null, 17, 0.9), rec('SQ8,RFlat', 4, 49, 1.0), rec('SQ8,RFlat', 10, 49, 1.0), rec('SQ4', null, 20, 0.8)];
    const svg = quantizeSvg(run(records));
    expect(XMLValidator.validate(svg)).toBe(true);
    const doc = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '' }).parse(svg) as { svg: { path: { class?: string; d: string }[] | { class?: string; d: string } } };
    const paths = ([] as { class?: string; d: string }[]).concat(doc.svg.path);
    const frontier = paths.find((p) => p.class === 'frontier');
    expect(frontier, 'the step line').toBeDefined();
    // PQ8, SQ8 and the two equal SQ8,RFlat points: 3 distinct x, so M + 3 (H, V) steps.
    expect(frontier!.d.match(/H/g)).toHaveLength(3);
    // By code bytes (d = 8) the ,RFlat rows cost nothing: SQ8,RFlat (8 bytes, recall 1) beats PQ8 and
    // SQ8 (8 bytes each); SQ4 (4 bytes) is the smallest, so on the front.
    expect(quantizeFront(records, 'code')).toEqual([false, false, true, true, true]);
    expect((svg.match(/class="pareto"/g) ?? []).length).toBe(4);
    for (const label of ['SQ8+R4', 'codes alone', ',RFlat kFactor 10', 'Pareto front']) expect(svg).toContain(label);
  });
});

describe('quantize: self-queries', () => {
  // d = 1: rows 0, 0 (a duplicate of row 0), 1, 3.
  const xb = Float32Array.from([0, 0, 1, 3]);
  it('the reference excludes the own row but keeps a duplicate at distance 0', () => {
    const data = asSelfQueries({ name: 'hand', xb, n: 4, d: 1, xq: new Float32Array(0), nq: 0, groundTruth: null }, undefined);
    expect(Array.from(data.selfRows!)).toEqual([0, 1, 2, 3]);
    expect(Array.from(data.xq)).toEqual([0, 0, 1, 3]);
    const ref = benchReference(data, 2, 'l2', () => {});
    // Row 0: its duplicate (0), then 1; row 2: 1 (either zero), then 4 (row 3); row 3: 4, then 9.
    expect(Array.from(ref.scores)).toEqual([0, 1, 0, 1, 1, 1, 4, 9]);
    expect(Array.from(exactScores(xb, data.xq, 4, 4, 1, 2, 'l2'))).toEqual([0, 0, 0, 0, 0, 1, 0, 4]); // without exclusion: self first
  });

  it('drops the own row from k + 1 results, or the last where it is absent', () => {
    // k = 2, so 3 results a query; own rows 0, 1, 2.
    const labels = Int32Array.from([0, 1, 2, /* own first */ 0, 1, 2, /* own second (a tie) */ 3, 1, 0 /* absent */]);
    expect(Array.from(dropSelf(labels, 3, 2, Int32Array.from([0, 1, 2])))).toEqual([1, 2, 0, 2, 3, 1]);
  });

  it('a duplicate returned in place of the own row counts as a true neighbour', () => {
    const data = asSelfQueries({ name: 'hand', xb, n: 4, d: 1, xq: new Float32Array(0), nq: 0, groundTruth: null }, undefined);
    const ref = benchReference(data, 1, 'l2', () => {});
    // Query 1 (value 0) returned [0, 1]: its own row 1 dropped, row 0 (distance 0) kept: a hit.
    const got = dropSelf(Int32Array.from([1, 0, 0, 1, 2, 1, 3, 2]), 4, 1, data.selfRows!);
    expect(Array.from(got)).toEqual([1, 0, 1, 2]);
    expect(tieAwareRecall(1, got, 1, ref.scores, 1, xb, data.xq, 1, 'l2')).toBe(1);
    // The own row left in (not dropped) is never a hit, though its distance 0 beats every other.
    expect(tieAwareRecall(1, Int32Array.from([0, 1, 2, 3]), 1, ref.scores, 1, xb, data.xq, 1, 'l2', data.selfRows)).toBe(0);
  });
});

describe('quantize: the report', () => {
  it('lists a string the factory cannot build as not measured, with its reason', () => {
    const md = quantizeMarkdown(run([rec('Flat', null, 40, 1)], ['LSHrt: unknown index description "LSHrt"']));
    expect(md).toContain('- not measured: LSHrt: unknown index description "LSHrt"');
    expect(md).toContain(`| ${QUANTIZE_HEADER.join(' | ')} |`);
    expect(md).toContain('| Flat | - | 40.0 | 32 | 1.000 | 1.000 | - | - | 100.0 | - | yes |');
  });

  it('the default list follows d', () => {
    expect(nearestDivisor(784, 784 / 16)).toBe(49);
    expect(nearestDivisor(100, 100 / 8)).toBe(10); // 12.5: 10 and 20 are the divisors around it, 10 nearer
    const s = defaultQuantizeStrings(128);
    expect(s[0]).toBe('Flat');
    for (const x of ['PQ16', 'PQ8,RFlat', 'LSHrt,RFlat', 'Prefix64,Flat', 'Prefix16,Flat,RFlat', 'PCAR32,Flat']) expect(s).toContain(x);
    expect(s).toHaveLength(1 + 2 * 13);
    expect([codeBytes('PQ16x4', 128), codeBytes('LSHrt,RFlat', 128), codeBytes('PCAR32,Flat,RFlat', 128), codeBytes('HNSW32', 128)]).toEqual([8, 16, 128, null]);
  });
});

// Both backends where there is an adapter (CI: required); the CPU alone where there is none.
const hasGpu = (await gpuBackend()) !== null;
disposeGpuBackends();

describe('bench quantize end to end (tiny data, built CLI)', () => {
  const backends = hasGpu ? ['webgpu', 'cpu'] : ['cpu'];
  const work = mkdtempSync(join(tmpdir(), 'webgpu-knn-quantize-'));
  const [n, d] = [300, 16];
  const xb = clusteredFloats(n, d, 10, 3, 0.2);
  xb.copyWithin(10 * d, 0, 10 * d); // rows 10..19 duplicate rows 0..9: neighbours at distance 0 that are not self
  writeVectors(join(work, 'base.fvecs'), xb, n, d);

  function quantize(args: string[]) {
    const r = spawnSync(process.execPath, [join(root, 'dist/cli/main.js'), 'bench', 'quantize', '--base', 'base.fvecs', '--k', '10', '--warmup', '0', '--repeats', '1',
      '--batch', '8', '--backends', backends.join(','), '--index', 'Flat', '--index', 'SQ8,RFlat', '--index', 'Nonsense7', '--kfactor', '1,4', ...args], { cwd: work, encoding: 'utf8', timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    return r.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as QuantizeRecord);
  }

  for (const [name, args] of [['held-out queries', ['--nq', '20', '--out', 'held']], ['self-queries', ['--self', '--nq', '20', '--out', 'self']]] as const) {
    it(`${name}: a row per string and kFactor, Flat exact, the unknown string not measured`, () => {
      const records = quantize([...args]);
      expect(records.map((r) => `${r.index} ${r.kFactor}`)).toEqual(['Flat null', 'SQ8,RFlat 1', 'SQ8,RFlat 4']);
      const out = join(work, args[args.length - 1]);
      expect(readFileSync(join(out, QUANTIZE_FILES.jsonl), 'utf8').trim().split('\n').map((l) => JSON.parse(l))).toEqual(records);
      const flat = records[0];
      expect([flat.recall1, flat.recall10, flat.recall100]).toEqual([1, 1, null]);
      expect(flat.selfQueries).toBe(name === 'self-queries');
      expect(flat.n).toBe(name === 'self-queries' ? 300 : 280);
      for (const r of records) {
        expect(Object.keys(r.backends)).toEqual(backends);
        expect(r.builtOn).toBe(backends[0]);
        expect(r.bytesPerVector).toBe(r.indexBytes / r.n);
        if (hasGpu) expect(r.labelsDiffer).toBe(0);
      }
      // ,RFlat keeps the float32 rows: its file is larger than Flat's; its code is d bytes.
      expect(records[1].indexBytes).toBeGreaterThan(flat.indexBytes);
      expect([flat.codeBytesPerVector, records[1].codeBytesPerVector]).toEqual([4 * d, d]);
      const notMeasured = (JSON.parse(readFileSync(join(out, QUANTIZE_FILES.run), 'utf8')) as { notMeasured: string[] }).notMeasured;
      expect(notMeasured).toHaveLength(1);
      expect(notMeasured[0]).toMatch(/^Nonsense7: unknown index description/);
      expect(readFileSync(join(out, QUANTIZE_FILES.report), 'utf8')).toContain('- not measured: Nonsense7');
      for (const plot of [QUANTIZE_FILES.plot, QUANTIZE_FILES.codePlot]) expect(statSync(join(out, plot)).size).toBeGreaterThan(0);
    });
  }
});
