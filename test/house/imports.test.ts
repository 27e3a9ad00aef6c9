/**
 * The house's import rules, checked against the imports of every src/**\/*.ts file (issue 34):
 * no import cycle, every file in a layer that imports only its own layer or lower ones, and a few
 * named rules that say in words what the layers mean. The tables below are the rules; a file that
 * moves or a new folder is one line here.
 *
 * Every edge counts: value and type-only imports, re-exports, side-effect imports and dynamic
 * `import('x')` with a string literal. Only the browser-core rule reads a narrower graph (what a
 * bundle of src/browser.ts would load), and says so.
 */
import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type EdgeKind,
  type ImportEdge,
  matchesGlob,
  ROOT,
  readImportGraph,
  stronglyConnected,
} from '../helpers/import-graph.js';

/**
 * Each src file's layer, from its path. A file may import files of its own rank or lower ones.
 * `*` matches within a folder, `**` any depth.
 */
const LAYERS: readonly { readonly rank: number; readonly files: readonly string[]; readonly what: string }[] = [
  { rank: 0, files: ['src/types.ts', 'src/errors.ts', 'src/kernel-facts.ts'], what: 'the vocabulary' },
  { rank: 1, files: ['src/device.ts', 'src/common/**'], what: 'the device interface and helpers' },
  { rank: 2, files: ['src/contracts.ts', 'src/platform/**'], what: 'contracts and the platform' },
  { rank: 3, files: ['src/cpu/**', 'src/gpu/**', 'src/gpujs/**'], what: 'the devices' },
  { rank: 4, files: ['src/stores/**'], what: 'stores' },
  { rank: 5, files: ['src/codecs/**'], what: 'codecs' },
  { rank: 6, files: ['src/plans/kit/**'], what: "the plans' kit" },
  { rank: 7, files: ['src/plans/*.ts'], what: 'plans' },
  { rank: 8, files: ['src/backend/**'], what: 'the backend' },
  { rank: 9, files: ['src/io/**'], what: 'files' },
  { rank: 10, files: ['src/indexes/**'], what: 'indexes' },
  { rank: 11, files: ['src/jobs/**'], what: 'jobs' },
  { rank: 12, files: ['src/cli/**'], what: 'the CLI' },
  { rank: 13, files: ['src/index.ts', 'src/browser.ts'], what: 'the entries' },
];

interface Exception {
  /** The rule it excuses: 'layers' or a NAMED_RULES name. */
  readonly rule: string;
  readonly from: string;
  readonly to: string;
  /** When given, only an edge of this kind is excused (a static import of the same file is not). */
  readonly kind?: EdgeKind;
  readonly reason: string;
}

/** Edges a rule allows although it would refuse them. Each must still match an edge it excuses. */
const EXCEPTIONS: readonly Exception[] = [
  {
    rule: 'layers',
    from: 'src/platform/platform.ts',
    to: 'src/io/index-file.ts',
    kind: 'dynamic',
    reason: 'the Node platform loads the index writer lazily, so the core never imports fs in a browser',
  },
  {
    rule: 'layers',
    from: 'src/platform/types.ts',
    to: 'src/io/index-file.ts',
    reason: "the platform's writeIndexFile is the Node index writer: its type is the writer's signature (erased in the build)",
  },
];

/** A named rule: no file matching `from` imports a file matching `to` (unless it matches `unless`). */
interface NamedRule {
  readonly name: string;
  readonly why: string;
  readonly from: readonly string[];
  readonly to: readonly string[];
  readonly unless?: readonly string[];
}

const NAMED_RULES: readonly NamedRule[] = [
  {
    name: 'no store, plan or codec imports the backend',
    why: 'the backend composes them; they see the device through src/device.ts and src/contracts.ts',
    from: ['src/stores/**', 'src/plans/**', 'src/codecs/**'],
    to: ['src/backend/**'],
  },
  {
    name: 'no store imports a plan',
    why: 'plans read stores through the interfaces in src/contracts.ts, never the other way round',
    from: ['src/stores/**'],
    to: ['src/plans/**'],
  },
  {
    name: 'no plan imports another plan',
    why: 'each plan stands alone; what two plans share lives in src/plans/kit/',
    from: ['src/plans/*.ts'],
    to: ['src/plans/*.ts'],
  },
  {
    name: 'no index imports jobs',
    why: 'jobs are built on indexes; an index that needs a job would tie the two into one layer',
    from: ['src/indexes/**'],
    to: ['src/jobs/**'],
  },
  {
    name: 'io never imports an index',
    why: 'files are read and written below the indexes, which hand io plain data',
    from: ['src/io/**'],
    to: ['src/indexes/**'],
  },
  {
    name: 'the CPU device imports its kernels only through src/cpu/twins.ts',
    why: 'a new kernel is one line in the registry, never an edit to the device',
    from: ['src/cpu/cpu-device.ts'],
    to: ['src/cpu/*.ts'],
    unless: ['src/cpu/twins.ts'],
  },
  {
    name: 'the GPU device imports its kernels only through src/gpu/kernels/kernels.ts and registry.ts',
    why: 'a new kernel is one line in the registry, never an edit to the device',
    from: ['src/gpu/gpu-device.ts'],
    to: ['src/gpu/kernels/*.ts'],
    unless: ['src/gpu/kernels/kernels.ts', 'src/gpu/kernels/registry.ts'],
  },
];

/** The browser entry, and the packages its bundle must never load (with every Node built-in). */
const BROWSER_ENTRY = 'src/browser.ts';
const NODE_ONLY_PACKAGES = ['webgpu', 'bullmq', 'ioredis'];
/**
 * Files the browser build swaps for others, as scripts/build-browser.mjs does (its
 * `browser-platform` plugin), each with the text that shows the build still does it; `by` null: a
 * module the build generates, which imports nothing (the WGSL texts).
 */
const BROWSER_SWAPS: readonly { readonly file: string; readonly by: string | null; readonly buildSays: string }[] = [
  {
    file: 'src/platform/platform.ts',
    by: 'src/platform/browser.ts',
    buildSays: 'path: `${root}src/platform/browser.ts`',
  },
  {
    file: 'src/platform/shader-files.ts',
    by: null,
    buildSays: "path: 'browser-shader-files', namespace: 'webgpu-knn'",
  },
];

const graph = readImportGraph();
/** An edge between two src files. */
type SrcEdge = ImportEdge & { readonly to: string };
const srcEdges = graph.edges.filter((e): e is SrcEdge => e.to !== null);

const matchesAny = (path: string, patterns: readonly string[]): boolean => patterns.some((p) => matchesGlob(path, p));

function describeEdge(e: ImportEdge): string {
  const notes = [e.kind === 'static' ? '' : e.kind, e.typeOnly && e.kind !== 'import-type' ? 'type-only' : '']
    .filter(Boolean)
    .join(', ');
  return `${e.from}:${e.line} -> ${e.to ?? e.specifier}${notes ? ` (${notes})` : ''}`;
}

/** The rule's refused edges, less its exceptions. */
function unexcused(rule: string, refused: readonly SrcEdge[]): SrcEdge[] {
  return refused.filter((e) => !EXCEPTIONS.some((x) => x.rule === rule && excuses(x, e)));
}

function excuses(x: Exception, e: ImportEdge): boolean {
  return x.from === e.from && x.to === e.to && (x.kind === undefined || x.kind === e.kind);
}

function ranksOf(file: string): number[] {
  return LAYERS.filter((layer) => matchesAny(file, layer.files)).map((layer) => layer.rank);
}

function layerRefusals(): SrcEdge[] {
  return srcEdges.filter((e) => {
    const [from] = ranksOf(e.from);
    const [to] = ranksOf(e.to);
    return from !== undefined && to !== undefined && to > from;
  });
}

function namedRefusals(rule: NamedRule): SrcEdge[] {
  return srcEdges.filter(
    (e) =>
      e.from !== e.to &&
      matchesAny(e.from, rule.from) &&
      matchesAny(e.to, rule.to) &&
      !matchesAny(e.to, rule.unless ?? []),
  );
}

function refusalsOf(rule: string): SrcEdge[] {
  if (rule === 'layers') return layerRefusals();
  const named = NAMED_RULES.find((r) => r.name === rule);
  return named ? namedRefusals(named) : [];
}

/** The shortest way from `start` back to itself along `edges` (which tie one cycle). */
function shortestLoop(start: string, edges: readonly { from: string; to: string }[]): string[] {
  const back = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.shift()!;
    for (const e of edges) {
      if (e.from !== file || back.has(e.to)) continue;
      back.set(e.to, file);
      if (e.to === start) {
        const loop = [start];
        for (let f = file; f !== start; f = back.get(f)!) loop.unshift(f);
        return [start, ...loop];
      }
      queue.push(e.to);
    }
  }
  return [start];
}

describe('the import graph', () => {
  it('reads every src file, and every relative import names a src file', () => {
    expect(graph.files).toContain(BROWSER_ENTRY);
    expect(graph.files).toContain('src/index.ts');
    const unresolved = graph.edges.filter((e) => e.to === null && e.specifier.startsWith('.'));
    expect(
      unresolved.map(describeEdge),
      'a relative import that names no src/**/*.ts file would be an edge these rules cannot see',
    ).toEqual([]);
  });
});

describe('no import cycle', () => {
  it('no cycle among src files, counting type-only and dynamic imports', () => {
    const next = new Map<string, string[]>();
    for (const e of srcEdges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
    const cycles = stronglyConnected(graph.files, (f) => next.get(f) ?? []).filter(
      (c) => c.length > 1 || srcEdges.some((e) => e.from === c[0] && e.to === c[0]),
    );
    const report = cycles.map((files) => {
      const members = new Set(files);
      const ties = srcEdges.filter((e) => members.has(e.from) && members.has(e.to));
      return [
        `cycle of ${files.length}: ${files.join(', ')}`,
        `  shortest loop: ${shortestLoop(files[0], ties).join(' -> ')}`,
        '  the edges that tie them:',
        ...ties.map((e) => `    ${describeEdge(e)}`),
      ].join('\n');
    });
    expect(
      report,
      'files that import each other (even for types, even lazily) are one module in disguise: ' +
        'move what they share into a lower file',
    ).toEqual([]);
  });
});

describe('layers', () => {
  it('every src file has exactly one layer', () => {
    const problems = graph.files.flatMap((f) => {
      const ranks = ranksOf(f);
      if (ranks.length === 0) return [`${f} has no layer: add it to the table in test/house/imports.test.ts`];
      if (ranks.length > 1) return [`${f} matches several layers (${ranks.join(', ')}): make the table unambiguous`];
      return [];
    });
    expect(problems).toEqual([]);
  });

  it('a file imports only files of its own layer or lower ones', () => {
    const refused = unexcused('layers', layerRefusals()).map(
      (e) => `${describeEdge(e)} (rank ${ranksOf(e.from)[0]} -> rank ${ranksOf(e.to)[0]})`,
    );
    expect(
      refused,
      'an import reaches up the layers (' +
        LAYERS.map((l) => `${l.rank} ${l.what}`).join(', ') +
        '): move the shared code down, or add an exception with its reason',
    ).toEqual([]);
  });
});

describe('named rules', () => {
  for (const rule of NAMED_RULES) {
    it(rule.name, () => {
      const refused = unexcused(rule.name, namedRefusals(rule)).map(describeEdge);
      expect(refused, `${rule.name}: ${rule.why}`).toEqual([]);
    });
  }

  it('the browser build stays free of Node: nothing src/browser.ts loads, its lazy chunks included, imports node:, webgpu, bullmq or ioredis', () => {
    // What the browser build of src/browser.ts loads, its chunks included: its value imports,
    // static and dynamic (the devices, ml-matrix: each a chunk), and re-exports and side-effect
    // imports, followed from file to file. Type-only imports are erased, so not followed.
    // A swapped file is replaced by its stand-in, as the build resolves it.
    const build = readFileSync(join(ROOT, 'scripts', 'build-browser.mjs'), 'utf8');
    for (const swap of BROWSER_SWAPS) {
      expect(build, `scripts/build-browser.mjs no longer swaps ${swap.file} for ${swap.by ?? 'a generated module'}`).toContain(swap.buildSays);
    }
    const swapped = (file: string): string | null => {
      const swap = BROWSER_SWAPS.find((s) => s.file === file);
      return swap ? swap.by : file;
    };
    const via = new Map<string, SrcEdge | null>([[BROWSER_ENTRY, null]]);
    const queue = [BROWSER_ENTRY];
    while (queue.length > 0) {
      const file = queue.shift()!;
      for (const e of srcEdges) {
        const to = swapped(e.to);
        if (to === null || e.from !== file || e.typeOnly || via.has(to)) continue;
        via.set(to, e);
        queue.push(to);
      }
    }
    const nodeOnly = (specifier: string): boolean => {
      const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0];
      return specifier.startsWith('node:') || builtinModules.includes(name) || NODE_ONLY_PACKAGES.includes(name);
    };
    const chain = (file: string): string => {
      const steps = [file];
      for (let e = via.get(file); e; e = via.get(e.from)) {
        if (swapped(e.to) !== e.to) steps[0] = `${e.to} (built as ${steps[0]})`;
        steps.unshift(e.from);
      }
      return steps.join(' -> ');
    };
    const refused = graph.edges
      .filter((e) => e.to === null && via.has(e.from) && !e.typeOnly && nodeOnly(e.specifier))
      .map((e) => `${describeEdge(e)}, reached by ${chain(e.from)}`);
    expect(
      refused,
      'the browser bundle must not load Node: a file src/browser.ts imports (for values, statically or lazily) ' +
        'imports a Node-only module; reach it through the platform (src/platform/) instead',
    ).toEqual([]);
  });
});

/** The optional packages of distributed runs, and the one file that loads them (lazily). */
const QUEUE_PACKAGES = ['bullmq', 'ioredis'];
const QUEUE_LOADER = 'src/cli/cluster/queue-packages.ts';

describe('optional packages', () => {
  it(`bullmq and ioredis are loaded only by ${QUEUE_LOADER}, with a dynamic import()`, () => {
    // They are optional (only the worker and --distributed runs need them): a static value import
    // anywhere would make every command, --help included, die without them. Type-only imports are erased.
    const edges = graph.edges.filter((e) => e.to === null && QUEUE_PACKAGES.includes(e.specifier.split('/')[0]));
    const refused = edges.filter((e) => !e.typeOnly && !(e.from === QUEUE_LOADER && e.kind === 'dynamic')).map(describeEdge);
    expect(refused, `load bullmq and ioredis through queuePackages() in ${QUEUE_LOADER}`).toEqual([]);
    const loads = edges.filter((e) => e.from === QUEUE_LOADER && e.kind === 'dynamic').map((e) => e.specifier);
    expect(loads.sort(), `${QUEUE_LOADER} no longer loads both packages`).toEqual(QUEUE_PACKAGES);
  });
});

describe('exceptions', () => {
  it('every exception names a known rule, gives its reason, and still excuses an edge', () => {
    const rules = new Set(['layers', ...NAMED_RULES.map((r) => r.name)]);
    const stale = EXCEPTIONS.filter(
      (x) => !rules.has(x.rule) || x.reason.trim() === '' || !refusalsOf(x.rule).some((e) => excuses(x, e)),
    ).map((x) => `${x.rule}: ${x.from} -> ${x.to}${x.kind ? ` (${x.kind})` : ''}`);
    expect(stale, 'an exception that excuses nothing is stale: remove it from EXCEPTIONS').toEqual([]);
  });
});
