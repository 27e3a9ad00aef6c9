/**
 * The tool-wide --quiet and --json, and `-` for stdin and stdout (src/cli/report.ts,
 * src/cli/stdio.ts). End to end through a child process, against the built CLI (scripts/test.sh
 * builds first), spawned here rather than by test/helpers/cli.ts's cliIn, which neither feeds
 * stdin nor keeps stdout's bytes; --backend cpu throughout, so that no native driver writes to stderr.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { randomFloats } from '../../src/common/random.js';
import { writeVectors } from '../../src/io/vectors.js';
import { CLI_MAIN } from '../helpers/cli.js';

const main = CLI_MAIN;
const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-streams-'));
/** The child's own temporary directory: what the private files behind `-` leave there is checked. */
const childTmp = join(dir, 'tmp');
mkdirSync(childTmp);

/** Runs the CLI with `input` on its stdin (bytes; none: an empty stdin). */
const cli = (args: string[], input: Uint8Array | string = '') => {
  const r = spawnSync(process.execPath, [main, ...args], { cwd: dir, input, timeout: 120_000, env: { ...process.env, TMPDIR: childTmp } });
  return { code: r.status, out: r.stdout, err: r.stderr.toString('utf8') };
};
const run = (...args: string[]) => cli(args);

const d = 8;
const n = 120;
writeVectors(join(dir, 'x.fvecs'), randomFloats(n * d, 3), n, d);
writeVectors(join(dir, 'q.npy'), randomFloats(7 * d, 4), 7, d);
writeVectors(join(dir, 'q5.fvecs'), randomFloats(7 * 5, 5), 7, 5);
const xBytes = readFileSync(join(dir, 'x.fvecs'));
const qBytes = readFileSync(join(dir, 'q.npy'));
const cpu = ['--backend', 'cpu'];

expect(run('build', '--input', 'x.fvecs', '--out', 'x.idx', ...cpu).code).toBe(0);

/** A summary on stdout: exactly one JSON document (one line). */
function summaryOf(r: ReturnType<typeof cli>): Record<string, unknown> {
  expect(r.code, r.err).toBe(0);
  const text = r.out.toString('utf8');
  expect(text.trimEnd().split('\n')).toHaveLength(1);
  return JSON.parse(text) as Record<string, unknown>;
}

describe('--quiet', () => {
  it('leaves stderr empty on success, for every kind of command', () => {
    for (const args of [
      ['build', '--input', 'x.fvecs', '--out', 'q1.idx', '--type', 'IVF4,Flat'],
      ['search', '--index', 'x.idx', '--queries', 'q.npy', '--k', '3', '--out', 'q1.npy'],
      ['range-search', '--index', 'x.idx', '--queries', 'q.npy', '--radius', '1', '--out', 'q1.csv'],
      ['dedup', '--input', 'x.fvecs', '--metric', 'l2', '--threshold', '0.5', '--out', 'q2.csv'],
      ['knn-graph', '--input', 'x.fvecs', '--k', '2', '--out', 'q2.npy'],
      ['info'],
    ]) {
      const loud = run(...args, ...cpu);
      expect(loud.code, loud.err).toBe(0);
      if (args[0] !== 'info') expect(loud.err, args[0]).not.toBe(''); // so that quiet has something to hold back
      for (const flag of ['--quiet', '-q']) {
        const r = run(...args, ...cpu, flag);
        expect(r.code, `${args[0]} ${flag}: ${r.err}`).toBe(0);
        expect(r.err, `${args[0]} ${flag}`).toBe('');
      }
    }
    // info's report is its output, on stdout, quiet or not.
    expect(run('info', ...cpu, '-q').out.toString()).toMatch(/^backend: cpu/);
  });

  it('still prints errors, with the same exit codes', () => {
    const usage = run('search', '--index', 'x.idx', '--queries', 'q.npy', '--k', '0', '--out', 'e.npy', '-q');
    expect(usage.code).toBe(2);
    expect(usage.err).toMatch(/^webgpu-knn search: --k must be an integer in \[1, \d+\]; got 0\n$/);
    const missing = run('search', '--index', 'nope.idx', '--queries', 'q.npy', '--k', '1', '--out', 'e.npy', ...cpu, '--quiet');
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/nope\.idx/);
  });
});

describe('--json', () => {
  it('prints one summary object on stdout, with the counts and files', () => {
    const b = summaryOf(run('build', '--input', 'x.fvecs', '--out', 'j.idx', '--type', 'IVF4,Flat', '--metric', 'ip', ...cpu, '--json'));
    expect(b).toMatchObject({ command: 'build', input: 'x.fvecs', out: 'j.idx', type: 'IVF4,Flat', metric: 'ip', rows: n, dim: d, ntotal: n });
    expect(b.backend).toMatch(/^cpu/);
    expect(typeof b.seconds).toBe('number');

    const s = summaryOf(run('search', '--index', 'x.idx', '--queries', 'q.npy', '--k', '4', '--out', 'j.csv', '--distances', 'j.fvecs', ...cpu, '--json'));
    expect(s).toMatchObject({ command: 'search', index: 'x.idx', queries: 'q.npy', rows: 7, k: 4, out: 'j.csv', distances: 'j.fvecs' });
    const t = s.timings as Record<string, number>;
    expect(t.computeMs).toBeGreaterThan(0);
    expect(readFileSync(join(dir, 'j.csv'), 'utf8').trimEnd().split('\n')).toHaveLength(7);

    const p = summaryOf(run('dedup', '--input', 'x.fvecs', '--metric', 'l2', '--threshold', '0.6', '--out', 'j-pairs.csv', '--clusters', 'j.json', ...cpu, '--json'));
    const pairs = readFileSync(join(dir, 'j-pairs.csv'), 'utf8').trimEnd().split('\n').length - 1;
    expect(pairs).toBeGreaterThan(0);
    expect(p).toMatchObject({ command: 'dedup', input: 'x.fvecs', rows: n, pairs, clustersFile: 'j.json' });
    const groups = JSON.parse(readFileSync(join(dir, 'j.json'), 'utf8')) as { clusters: number[][]; drop: number[] };
    expect(p.clusters).toBe(groups.clusters.length);
    expect(p.drop).toBe(groups.drop.length);

    const r = summaryOf(run('range-search', '--index', 'x.idx', '--queries', 'q.npy', '--radius', '1.5', '--out', 'j-range.jsonl', ...cpu, '--json'));
    expect(r.results).toBe(readFileSync(join(dir, 'j-range.jsonl'), 'utf8').split('\n').filter(Boolean).length);

    // What info prints on stdout goes to stderr; stdout is the JSON alone.
    const i = summaryOf(run('info', ...cpu, '--json'));
    expect(i).toMatchObject({ command: 'info', kind: 'cpu' });
    expect(i.maxK).toBeGreaterThan(0);
    // The demo prints its report on stdout; with --json that goes to stderr, and its findings here.
    const demo = summaryOf(run('demo', '--json'));
    expect(demo).toMatchObject({ command: 'demo', rows: 778, dim: 384, threshold: 0.95 });
    expect(demo.pairs).toBeGreaterThan(0);
    expect((demo.timings as unknown[]).length).toBeGreaterThan(0);
  });

  it('on failure: exit code as without it, the message on stderr and as {"error", "exitCode"} on stdout', () => {
    const r = run('search', '--index', 'x.idx', '--queries', 'q.npy', '--k', 'ten', '--out', 'e.npy', '--json');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--k must be an integer .* got ten/);
    expect(JSON.parse(r.out.toString())).toEqual({ error: expect.stringMatching(/--k must be an integer .* got ten/), exitCode: 2 });
    const bad = run('search', '--index', 'q.npy', '--queries', 'q.npy', '--k', '1', '--out', 'e.npy', ...cpu, '--json');
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.out.toString())).toMatchObject({ exitCode: 1 });
  });

  it('is refused for bench and worker, and with an output on stdout', () => {
    expect(run('bench', 'flat', '--json').err).toMatch(/--json does not apply to bench/);
    expect(run('worker', '--json').err).toMatch(/--json does not apply to worker/);
    const r = cli(['search', '--index', 'x.idx', '--queries', 'q.npy', '--k', '1', '--out', '-', '--stdout-format', 'csv', '--json']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--json prints its summary on stdout, which --out - takes/);
  });
});

describe('- for stdin and stdout', () => {
  it('search --queries - --out - gives the bytes of the run on files', () => {
    for (const format of ['csv', 'npy', 'ivecs', 'jsonl']) {
      const files = run('search', '--index', 'x.idx', '--queries', 'q.npy', '--k', '5', '--out', `s.${format}`, ...cpu);
      expect(files.code, files.err).toBe(0);
      const piped = cli(['search', '--index', 'x.idx', '--queries', '-', '--stdin-format', 'npy', '--k', '5', '--out', '-', '--stdout-format', format, ...cpu], qBytes);
      expect(piped.code, piped.err).toBe(0);
      expect(Buffer.compare(piped.out, readFileSync(join(dir, `s.${format}`))), format).toBe(0);
      // Messages name the streams, not the private files behind them.
      expect(piped.err).toMatch(/wrote stdout: 7 rows of 5/);
      expect(piped.err).not.toMatch(/webgpu-knn-stdio/);
    }
    // --distances may be the one on stdout, --out a file.
    const dist = cli(['search', '--index', 'x.idx', '--queries', '-', '--stdin-format', 'npy', '--k', '5', '--out', 's2.csv', '--distances', '-', '--stdout-format', 'fvecs', ...cpu], qBytes);
    expect(dist.code, dist.err).toBe(0);
    expect(readFileSync(join(dir, 's2.csv'), 'utf8')).toBe(readFileSync(join(dir, 's.csv'), 'utf8'));
    expect(dist.out.length).toBe(7 * (5 + 1) * 4);
    expect(readdirSync(childTmp)).toEqual([]);
  });

  it('build, knn-graph, dedup and range-search read stdin and write stdout as they do files', () => {
    const built = cli(['build', '--input', '-', '--stdin-format', 'fvecs', '--out', 'p.idx', '--json', ...cpu], xBytes);
    expect(summaryOf(built)).toMatchObject({ input: '-', rows: n, dim: d });
    expect(Buffer.compare(readFileSync(join(dir, 'p.idx')), readFileSync(join(dir, 'x.idx')))).toBe(0);

    const graph = run('knn-graph', '--input', 'x.fvecs', '--k', '3', '--out', 'g.csv', ...cpu);
    expect(graph.code, graph.err).toBe(0);
    const pipedGraph = cli(['knn-graph', '--input', '-', '--stdin-format', 'fvecs', '--k', '3', '--out', '-', '--stdout-format', 'csv', ...cpu], xBytes);
    expect(pipedGraph.out.toString()).toBe(readFileSync(join(dir, 'g.csv'), 'utf8'));

    const pairs = run('dedup', '--input', 'x.fvecs', '--metric', 'l2', '--threshold', '0.6', '--out', 'd.jsonl', ...cpu);
    expect(pairs.code, pairs.err).toBe(0);
    const pipedPairs = cli(['dedup', '--input', '-', '--stdin-format', 'fvecs', '--metric', 'l2', '--threshold', '0.6', '--out', '-', '--stdout-format', 'jsonl', ...cpu], xBytes);
    expect(pipedPairs.out.toString()).toBe(readFileSync(join(dir, 'd.jsonl'), 'utf8'));
    expect(pipedPairs.out.length).toBeGreaterThan(0);

    const range = run('range-search', '--index', 'x.idx', '--queries', 'q.npy', '--radius', '1.5', '--out', 'r.csv', ...cpu);
    expect(range.code, range.err).toBe(0);
    const pipedRange = cli(['range-search', '--index', 'x.idx', '--queries', '-', '--stdin-format', 'npy', '--radius', '1.5', '--out', '-', '--stdout-format', 'csv', ...cpu], qBytes);
    expect(pipedRange.out.toString()).toBe(readFileSync(join(dir, 'r.csv'), 'utf8'));

    // JSON Lines on stdin, with its ids: the search returns them.
    const lines = '{"id": 70, "embedding": [0, 0]}\n{"id": 71, "embedding": [3, 4]}\n';
    expect(cli(['build', '--input', '-', '--stdin-format', 'jsonl', '--out', 'ids.idx', ...cpu], lines).code).toBe(0);
    const found = cli(['search', '--index', 'ids.idx', '--queries', '-', '--stdin-format', 'jsonl', '--k', '2', '--out', '-', '--stdout-format', 'csv', ...cpu], '{"embedding": [2.9, 4]}\n');
    expect(found.out.toString()).toBe('71,70\n');
    expect(readdirSync(childTmp)).toEqual([]);
  });

  it('after a failure stdout gets nothing, and the private files are gone', () => {
    const r = cli(['search', '--index', 'x.idx', '--queries', '-', '--stdin-format', 'npy', '--k', '2', '--out', '-', '--stdout-format', 'csv', ...cpu], 'not an npy file');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^webgpu-knn search: stdin: not a \.npy file/m);
    expect(r.out.length).toBe(0);
    const wrongDim = cli(['search', '--index', 'x.idx', '--queries', '-', '--stdin-format', 'fvecs', '--k', '2', '--out', '-', '--stdout-format', 'csv', ...cpu], readFileSync(join(dir, 'q5.fvecs')));
    expect(wrongDim.code).toBe(2);
    expect(wrongDim.out.length).toBe(0);
    expect(readdirSync(childTmp)).toEqual([]);
  });

  it('refuses - where it makes no sense, and a missing or stray format, naming the flag', () => {
    const refused = (args: string[], pattern: RegExp) => {
      const r = cli(args, qBytes);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err).toMatch(pattern);
      expect(r.out.length).toBe(0);
    };
    refused(['search', '--index', '-', '--queries', 'q.npy', '--k', '1', '--out', 'e.npy'], /--index -: an index file is read by seeking/);
    refused(['search', '--index', 'x.idx', '--queries', 'q.npy', '--filter-ids', '-', '--k', '1', '--out', 'e.npy'], /--filter-ids -: an id file is read by its path/);
    refused(['build', '--input', 'x.fvecs', '--out', '-'], /--out -: an index file is written under a lock/);
    refused(['build', '--input', 'x.fvecs', '--ids', '-', '--out', 'e.idx'], /--ids -: an id file/);
    refused(['build', '--input', '-', '--stdin-format', 'npy', '--out', 'e.json', '--shards', '2'], /--input -: a sharded build's manifest names its input file/);
    refused(['remove', '--index', 'x.idx', '--ids', 'ids.txt', '--out', '-'], /--out -: an index file/);
    refused(['export', '--format', 'hnswlib', '--index', 'x.idx', '--out', '-'], /--out -: an hnswlib file/);
    refused(['dedup', '--input', 'x.fvecs', '--metric', 'l2', '--threshold', '0', '--out', 'e.csv', '--clusters', '-'], /--clusters -: only the pairs \(--out\) can go to stdout/);
    refused(['search', '--index', 'm.json', '--queries', '-', '--stdin-format', 'npy', '--k', '1', '--out', 'e.npy', '--distributed', 'redis://127.0.0.1:1'], /--queries -: with --distributed, workers on other hosts open the files by path/);
    refused(['knn-graph', '--input', '-', '--queries', '-', '--stdin-format', 'npy', '--k', '1', '--out', 'e.npy'], /--input - and --queries -: stdin is one stream/);
    refused(['search', '--index', 'x.idx', '--queries', 'q.npy', '--k', '1', '--out', '-', '--distances', '-', '--stdout-format', 'npy'], /--out - and --distances -: stdout is one stream/);
    refused(['search', '--index', 'x.idx', '--queries', '-', '--k', '1', '--out', 'e.npy'], /--queries - reads stdin: give its format with --stdin-format fvecs\|bvecs\|ivecs\|npy\|jsonl/);
    refused(['search', '--index', 'x.idx', '--queries', 'q.npy', '--k', '1', '--out', '-'], /--out - writes stdout: give its format with --stdout-format ivecs\|npy\|csv\|jsonl/);
    refused(['search', '--index', 'x.idx', '--queries', '-', '--stdin-format', 'csv', '--k', '1', '--out', 'e.npy'], /--stdin-format for --queries must be fvecs, bvecs, ivecs, npy or jsonl; got csv/);
    refused(['search', '--index', 'x.idx', '--queries', 'q.npy', '--k', '1', '--out', '-', '--stdout-format', 'fvecs'], /--stdout-format for --out must be ivecs, npy, csv or jsonl; got fvecs/);
    refused(['search', '--index', 'x.idx', '--queries', 'q.npy', '--k', '1', '--out', 'e.npy', '--stdin-format', 'npy'], /--stdin-format applies when a file flag is - \(stdin\); none is/);
    refused(['search', '--index', 'x.idx', '--queries', 'q.npy', '--k', '1', '--out', 'e.npy', '--stdout-format', 'npy'], /--stdout-format applies when a file flag is - \(stdout\); none is/);
    expect(readdirSync(childTmp)).toEqual([]);
  });

  // `script` runs the command on a pseudo-terminal: its stdin is a terminal, not a pipe.
  const hasScript = spawnSync('script', ['--version']).status === 0;
  it.skipIf(!hasScript)(`refuses - for stdin when stdin is a terminal${hasScript ? '' : ' [skipped: no script(1)]'}`, () => {
    const command = [process.execPath, main, 'search', '--index', 'x.idx', '--queries', '-', '--stdin-format', 'fvecs', '--k', '1', '--out', 'tty.csv', ...cpu].join(' ');
    const r = spawnSync('script', ['-qec', command, '/dev/null'], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(2);
    expect(r.stdout).toMatch(/--queries - reads stdin, which is a terminal: pipe the vectors in/);
  });

  it('--help says so, for the tool and the commands that take -', () => {
    const top = run('--help').out.toString();
    expect(top).toMatch(/-q, --quiet/);
    expect(top).toMatch(/--json/);
    expect(top).toMatch(/--stdin-format/);
    for (const c of ['build', 'search', 'range-search', 'dedup', 'knn-graph']) {
      const help = run(c, '--help', '--json').out.toString();
      expect(help, c).toMatch(/^usage: webgpu-knn/); // help, not a summary
      expect(help, c).toMatch(/--stdin-format F/);
      expect(help, c).toMatch(/or - \(stdin/);
      if (c !== 'build') expect(help, c).toMatch(/--stdout-format F/);
    }
  });
});
