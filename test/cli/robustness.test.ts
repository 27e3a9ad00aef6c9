/**
 * The CLI under abuse: bad numbers, outputs that are inputs, missing or corrupt files, huge nlist,
 * interrupted runs. End to end through a child process, against the built CLI (scripts/test.sh
 * builds first).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, ftruncateSync, linkSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync, writeSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { describe, expect, it, onTestFinished } from 'vitest';
import { npyHeader } from '../../src/io/npy.js';
import { writeVectors } from '../../src/io/vectors.js';
import { randomFloats } from '../../src/common/random.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const main = join(root, 'dist/cli/main.js');
const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-robust-'));
const cli = (...args: string[]) => {
  const r = spawnSync(process.execPath, [main, ...args], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
};

const d = 8;
const n = 200;
writeVectors(join(dir, 'x.fvecs'), randomFloats(n * d, 7), n, d);
const xBytes = readFileSync(join(dir, 'x.fvecs'));

/** A user error: the exit code, one line on stderr naming what is wrong, no stack trace. */
function expectUserError(r: ReturnType<typeof cli>, code: number, pattern: RegExp): void {
  expect(r.code, r.err).toBe(code);
  expect(r.err).toMatch(pattern);
  expect(r.err).not.toMatch(/^\s+at /m);
  expect(r.err).not.toMatch(/webgpu-knn-tmp/);
}

const tempsIn = (folder: string): string[] => readdirSync(folder).filter((f) => f.includes('webgpu-knn-tmp'));

describe('numeric flags are parsed strictly', () => {
  const badInts = ['', ' ', '0x10', '0o7', '0b11', '1e1', '3.5', '4abc', 'Infinity', 'NaN', '-3', '0'];
  badInts.forEach((text, i) => {
    it(`--k ${JSON.stringify(text)} is a usage error`, () => {
      const r = cli('knn-graph', '--input', 'x.fvecs', `--k=${text}`, '--out', `k${i}.csv`, '--backend', 'cpu');
      expectUserError(r, 2, /--k must be an integer in \[1, \d+\]; got /);
      expect(r.err).toContain(text.trim() === text && text !== '' ? `got ${text}` : `got ${JSON.stringify(text)}`);
      expect(existsSync(join(dir, `k${i}.csv`))).toBe(false);
    });
  });
  [' ', '', '0x1', 'Infinity', '-Infinity', 'NaN', '0.9x', '1.5', '-2', '.', '1e999'].forEach((text, i) => {
    it(`cosine --threshold ${JSON.stringify(text)} is a usage error`, () => {
      const r = cli('dedup', '--input', 'x.fvecs', '--metric', 'cosine', `--threshold=${text}`, '--out', `t${i}.csv`, '--backend', 'cpu');
      expectUserError(r, 2, /--threshold must be a cosine in \[-1, 1\] \(decimal\); got /);
      expect(existsSync(join(dir, `t${i}.csv`))).toBe(false);
    });
  });
  it('accepts decimal forms: signs, fractions, exponents', () => {
    expect(cli('dedup', '--input', 'x.fvecs', '--metric', 'cosine', '--threshold=+9.5e-1', '--out', 'p.csv', '--backend', 'cpu').code).toBe(0);
    expect(cli('dedup', '--input', 'x.fvecs', '--metric', 'l2', '--threshold', '.25', '--out', 'p.csv', '--backend', 'cpu').code).toBe(0);
    expect(cli('knn-graph', '--input', 'x.fvecs', '--k', '+3', '--out', 'g.csv', '--backend', 'cpu').code).toBe(0);
  });
  it('l2 --threshold must be >= 0', () => {
    expectUserError(cli('dedup', '--input', 'x.fvecs', '--metric', 'l2', '--threshold=-1', '--out', 'p.csv'), 2, /--threshold must be a squared L2 distance >= 0 \(decimal\); got -1/);
    expectUserError(cli('dedup', '--input', 'x.fvecs', '--metric', 'l2', '--threshold=1e999', '--out', 'p.csv'), 2, /--threshold must be a squared L2 distance >= 0 \(decimal\); got 1e999/);
  });
  it('--nprobe and demo flags too', () => {
    expectUserError(cli('build', '--input', 'x.fvecs', '--out', 'i.idx', '--type', 'IVF4,Flat', '--nprobe', '0x2'), 2, /--nprobe must be an integer in \[1, 4\]; got 0x2/);
    expectUserError(cli('demo', '--k', '0x4'), 2, /--k must be an integer in \[1, 100\]; got 0x4/);
    expectUserError(cli('demo', '--threshold', ' '), 2, /--threshold must be a cosine in \[-1, 1\] \(decimal\); got " "/);
    expectUserError(cli('bench', 'flat', '--n', '0x10'), 2, /--n must be a positive integer; got 0x10/);
  });
});

describe('flags and sizes are checked before heavy work', () => {
  it('an nlist larger than the training set is a usage error, at once', () => {
    const t0 = performance.now();
    const r = cli('build', '--input', 'x.fvecs', '--out', 'big.idx', '--type', 'IVF99999999,Flat', '--backend', 'cpu');
    expectUserError(r, 2, /--type IVF99999999,Flat needs at least nlist = 99999999 vectors to train on; x.fvecs has 200/);
    expect(r.err).not.toMatch(/backend:/); // refused before the backend was created
    expect(performance.now() - t0).toBeLessThan(20_000);
    expect(existsSync(join(dir, 'big.idx'))).toBe(false);
  });
  it('--nprobe above nlist is refused in build, knn-graph and search', () => {
    expectUserError(cli('knn-graph', '--input', 'x.fvecs', '--k', '3', '--out', 'g.csv', '--type', 'IVF4,Flat', '--nprobe', '99'), 2, /--nprobe must be an integer in \[1, 4\]; got 99/);
    expect(cli('build', '--input', 'x.fvecs', '--out', 'ivf.idx', '--type', 'IVF4,Flat', '--backend', 'cpu').code).toBe(0);
    const r = cli('search', '--index', 'ivf.idx', '--queries', 'x.fvecs', '--k', '3', '--out', 's.csv', '--nprobe', '9');
    expectUserError(r, 2, /--nprobe must be an integer in \[1, 4\]; got 9/);
    expect(r.err).not.toMatch(/backend:/);
  });
  it('a bad --type, or a k above the backend limit, is a usage error', () => {
    expectUserError(cli('knn-graph', '--input', 'x.fvecs', '--k', '3', '--out', 'g.csv', '--type', 'IVF0,Flat'), 2, /--type: unknown index description "IVF0,Flat"/);
    expectUserError(cli('knn-graph', '--input', 'x.fvecs', '--k', '2000000', '--out', 'g.csv'), 2, /--k must be an integer in \[1, 1048576\]; got 2000000/);
  });
});

describe('an output may not be an input or another output', () => {
  symlinkSync('x.fvecs', join(dir, 'sym.fvecs'));
  linkSync(join(dir, 'x.fvecs'), join(dir, 'hard.fvecs'));
  // (Outputs named c-*: no other test writes them.)
  const cases: [string, string[]][] = [
    ['build --out = --input', ['build', '--input', 'x.fvecs', '--out', 'x.fvecs']],
    ['build --out = --input (other spelling)', ['build', '--input', 'x.fvecs', '--out', `${dir}/./x.fvecs`]],
    ['build --out a symlink to --input', ['build', '--input', 'x.fvecs', '--out', 'sym.fvecs']],
    ['build --out a hard link to --input', ['build', '--input', 'x.fvecs', '--out', 'hard.fvecs']],
    ['dedup --clusters = --input', ['dedup', '--input', 'x.fvecs', '--metric', 'l2', '--threshold', '1', '--out', 'c-p.csv', '--clusters', 'x.fvecs']],
    ['knn-graph --distances = --out', ['knn-graph', '--input', 'x.fvecs', '--k', '2', '--out', 'c-g.csv', '--distances', 'c-g.csv']],
    ['knn-graph --out = --queries', ['knn-graph', '--input', 'x.fvecs', '--queries', 'q.npy', '--k', '2', '--out', 'q.npy']],
    ['search --out = --index', ['search', '--index', 'i.csv', '--queries', 'x.fvecs', '--k', '2', '--out', 'i.csv']],
  ];
  for (const [name, args] of cases) {
    it(name, () => {
      writeFileSync(join(dir, 'q.npy'), 'not really');
      expectUserError(cli(...args, '--backend', 'cpu'), 2, /is the same file as --/);
      expect(readFileSync(join(dir, 'x.fvecs')).equals(xBytes)).toBe(true);
      expect(existsSync(join(dir, 'c-p.csv')) || existsSync(join(dir, 'c-g.csv'))).toBe(false);
    });
  }
});

describe('file problems are one clear line, exit 1', () => {
  mkdirSync(join(dir, 'folder.fvecs'));
  writeFileSync(join(dir, 'bad-idx3-ubyte.gz'), 'this is not gzip');
  const cases: [string, string[], RegExp][] = [
    ['a missing input', ['dedup', '--input', 'nope.fvecs', '--metric', 'l2', '--threshold', '1', '--out', 'p.csv'], /nope.fvecs: cannot read: no such file or directory \(ENOENT\)/],
    ['a directory as input', ['dedup', '--input', 'folder.fvecs', '--metric', 'l2', '--threshold', '1', '--out', 'p.csv'], /folder.fvecs: cannot read: is a directory/],
    ['a corrupt .gz', ['dedup', '--input', 'bad-idx3-ubyte.gz', '--metric', 'l2', '--threshold', '1', '--out', 'p.csv'], /bad-idx3-ubyte.gz: not a valid gzip file/],
    ['a missing index', ['search', '--index', 'nope.idx', '--queries', 'x.fvecs', '--k', '1', '--out', 's.csv'], /nope.idx: cannot read: no such file/],
    ['a directory as index', ['search', '--index', 'folder.fvecs', '--queries', 'x.fvecs', '--k', '1', '--out', 's.csv'], /folder.fvecs: cannot read: is a directory/],
    ['an index that is not one', ['search', '--index', 'x.fvecs', '--queries', 'x.fvecs', '--k', '1', '--out', 's.csv'], /x.fvecs: not a webgpu-knn index file/],
    ['an output in a missing directory', ['knn-graph', '--input', 'x.fvecs', '--k', '2', '--out', 'nodir/g.csv'], /nodir\/g.csv: cannot write in directory nodir: no such file or directory/],
    ['an output that is a directory', ['knn-graph', '--input', 'x.fvecs', '--k', '2', '--out', 'folder.csv'], /folder.csv: cannot write: is a directory/],
  ];
  mkdirSync(join(dir, 'folder.csv'));
  for (const [name, args, pattern] of cases) {
    it(name, () => {
      const r = cli(...args, '--backend', 'cpu');
      expectUserError(r, 1, pattern);
      expect(r.err).not.toMatch(/backend:/); // found before any heavy work
      expect(r.err.trim().split('\n')).toHaveLength(1);
    });
  }
});

/** Spawns the CLI, waits (polling tightly) until one of its temporary files exists, then sends `signal`. */
async function interrupt(args: string[], folder: string, signal: NodeJS.Signals): Promise<{ code: number | null; signal: string | null; sawTemp: boolean }> {
  const child: ChildProcess = spawn(process.execPath, [main, ...args], { cwd: folder, stdio: 'ignore' });
  const exited = new Promise<{ code: number | null; signal: string | null }>((res) => child.on('exit', (code, sig) => res({ code, signal: sig })));
  let done = false;
  void exited.then(() => (done = true));
  let sawTemp = false;
  const deadline = Date.now() + 60_000;
  while (!done && Date.now() < deadline) {
    if (tempsIn(folder).length > 0) {
      sawTemp = true;
      child.kill(signal);
      break;
    }
    await new Promise((r) => setImmediate(r));
  }
  return { ...(await exited), sawTemp };
}

describe('temporary files', () => {
  // One folder per test, so that each sees only its own temporary files.
  const graphDir = mkdtempSync(join(tmpdir(), 'webgpu-knn-sigint-'));
  const buildDir = mkdtempSync(join(tmpdir(), 'webgpu-knn-sigterm-'));
  // knn-graph: 3 blocks of 4096 queries, each a second or so on the CPU backend.
  writeVectors(join(graphDir, 'x.fvecs'), randomFloats(12_000 * 16, 3), 12_000, 16);
  // build: a 25 MB index, whose save takes long enough to be seen.
  writeVectors(join(buildDir, 'big.fvecs'), randomFloats(200_000 * 32, 4), 200_000, 32);

  it('SIGINT while knn-graph streams its outputs removes the temporary files and exits 130', async () => {
    const r = await interrupt(['knn-graph', '--input', 'x.fvecs', '--k', '10', '--out', 'g.ivecs', '--distances', 'g.fvecs', '--backend', 'cpu'], graphDir, 'SIGINT');
    expect(r.sawTemp).toBe(true);
    expect(r).toMatchObject({ code: 130 });
    expect(tempsIn(graphDir)).toEqual([]);
    expect(existsSync(join(graphDir, 'g.ivecs')) || existsSync(join(graphDir, 'g.fvecs'))).toBe(false);
  });

  it('SIGTERM during a build leaves no temporary file', async () => {
    const r = await interrupt(['build', '--input', 'big.fvecs', '--out', 'x.idx', '--backend', 'cpu'], buildDir, 'SIGTERM');
    expect(r.sawTemp).toBe(true);
    // The save is one synchronous step: the signal is handled either inside it or just after it.
    expect([0, 143]).toContain(r.code);
    expect(tempsIn(buildDir)).toEqual([]);
  });

  it('a run removes stale temporary files of its output left by dead processes of this host, and says so', () => {
    const dead = spawnSync(process.execPath, ['-e', '']).pid!; // exited: its pid is free
    const stale = `.s.csv.webgpu-knn-tmp-${hostname()}-${dead}-0badf00d`;
    const older = `.s.csv.webgpu-knn-tmp-${dead}-0badf00d`; // an earlier version's name, without the host
    const live = `.s.csv.webgpu-knn-tmp-${hostname()}-${process.pid}-00c0ffee`; // this test process is alive
    const elsewhere = `.s.csv.webgpu-knn-tmp-host-b.example-${dead}-0badf00d`; // another host's: not judged here
    const other = `.other.csv.webgpu-knn-tmp-${hostname()}-${dead}-0badf00d`; // not this output's
    for (const f of [stale, older, live, elsewhere, other]) writeFileSync(join(dir, f), 'partial');
    const r = cli('knn-graph', '--input', 'x.fvecs', '--k', '2', '--out', 's.csv', '--backend', 'cpu');
    expect(r.code, r.err).toBe(0);
    expect(r.err).toContain(`removed ${stale}, a temporary file left by an interrupted run`);
    expect(r.err).toContain(`removed ${older}, a temporary file left by an interrupted run`);
    expect(tempsIn(dir).sort()).toEqual([live, elsewhere, other].sort());
    for (const f of [live, elsewhere, other]) rmSync(join(dir, f));
  });

  // The hostile pass's case: a command on another host (a UTS namespace named host-b, and a PID
  // namespace where its pid is one that no process has on this host) writes nn.csv in a shared
  // folder; a command here writing the same output must leave its temporary file alone, so that
  // both finish. Needs unshare and the right to make namespaces (root).
  const canUnshare = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', '--uts', 'true']).status === 0;
  it.skipIf(!canUnshare)("a live command on another host keeps its temporary file while one here writes the same output", async () => {
    const folder = join(dir, 'shared');
    mkdirSync(folder);
    const dead = spawnSync(process.execPath, ['-e', '']).pid!; // free here: the other host's process gets it
    const writer = `import { AtomicFile, commitOutputs } from ${JSON.stringify(join(root, 'dist/io/stream-writer.js'))};
      import { liveTemps } from ${JSON.stringify(join(root, 'dist/io/temp-files.js'))};
      const f = new AtomicFile('nn.csv'); f.write('written on host-b\\n');
      console.log(liveTemps()[0]);
      process.stdin.once('data', () => { commitOutputs([f]); console.log('committed'); process.exit(0); });`;
    // ns_last_pid: the namespace's next pid is `dead` (sh forks node after the echo).
    const script = `hostname host-b && echo ${dead - 1} > /proc/sys/kernel/ns_last_pid && "$0" --input-type=module -e "$1"`;
    const other = spawn('unshare', ['--pid', '--fork', '--kill-child', '--mount-proc', '--uts', 'sh', '-c', script, process.execPath, writer], { cwd: folder, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    other.stderr!.on('data', (b) => (err += b));
    const exited = new Promise<number | null>((res) => other.on('exit', res));
    onTestFinished(() => void (other.exitCode === null && other.kill('SIGKILL'))); // --kill-child: its namespace goes with it
    await new Promise<void>((res, rej) => {
      other.stdout!.on('data', (b) => ((out += b), out.includes('\n') && res()));
      other.on('exit', (code) => rej(new Error(`the other host's writer exited ${code}: ${err}`)));
    });
    const here = spawnSync(process.execPath, [main, 'knn-graph', '--input', join(dir, 'x.fvecs'), '--k', '2', '--out', 'nn.csv', '--backend', 'cpu'], { cwd: folder, encoding: 'utf8' });
    expect(here.status, here.stderr).toBe(0);
    expect(here.stderr).not.toMatch(/removed/);
    other.stdin!.end('go\n');
    expect(await exited, `${out}${err}`).toBe(0);
    expect(out).toContain('committed');
    expect(readFileSync(join(folder, 'nn.csv'), 'utf8')).toBe('written on host-b\n'); // the later rename
    expect(tempsIn(folder)).toEqual([]);
    expect(out).toMatch(new RegExp(`^\\.nn\\.csv\\.webgpu-knn-tmp-host-b-${dead}-[0-9a-f]{8}\\n`));
  });
});

describe('dedup output', () => {
  it('writes every pair when there are more than one block of them', () => {
    const m = 400; // all identical: m (m - 1) / 2 = 79800 pairs, more than one write block
    writeVectors(join(dir, 'same.fvecs'), new Float32Array(m * d).fill(1), m, d);
    const r = cli('dedup', '--input', 'same.fvecs', '--metric', 'l2', '--threshold', '0', '--out', 'same.csv', '--backend', 'cpu');
    expect(r.code, r.err).toBe(0);
    const lines = readFileSync(join(dir, 'same.csv'), 'utf8').split('\n');
    expect(lines[0]).toBe('i,j,score');
    expect(lines.length).toBe(1 + (m * (m - 1)) / 2 + 1); // header, pairs, the final newline
    expect(lines[1]).toBe('0,1,0');
    expect(lines[lines.length - 2]).toBe(`${m - 2},${m - 1},0`);
  });
  it('a candidate explosion is a clear error, not a crash, and writes nothing', () => {
    writeVectors(join(dir, 'same.fvecs'), new Float32Array(400 * d).fill(1), 400, d); // 79,800 candidate pairs at 0
    const r = cli('dedup', '--input', 'same.fvecs', '--metric', 'l2', '--threshold', '0', '--out', 'boom.csv', '--max-candidates', '1000', '--backend', 'cpu');
    expectUserError(r, 1, /more than 1000 candidate pairs \(at row \d+ of 400\); use a stricter threshold or raise maxCandidates \(the CLI's --max-candidates\)/);
    expect(existsSync(join(dir, 'boom.csv'))).toBe(false);
    expect(tempsIn(dir).filter((f) => f.includes('boom.csv'))).toEqual([]);
    expectUserError(cli('dedup', '--input', 'same.fvecs', '--metric', 'l2', '--threshold', '0', '--out', 'boom.csv', '--max-candidates=-1'), 2, /--max-candidates must be an integer in \[0, \d+\]; got -1/);
  });
});

/**
 * The CLI under `ulimit -v` (about 2 GB of address space, where a build of 100,000 x 32 runs): a
 * run that allocated what a crafted header declares would fail there (or, without the bound, take
 * the machine's memory) instead of refusing at once.
 */
const bounded = (...args: string[]) => {
  const r = spawnSync('sh', ['-c', 'ulimit -v 2000000 && exec "$0" "$@"', process.execPath, main, ...args, '--backend', 'cpu'], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
};

describe('a declared size is never trusted for an allocation', () => {
  // 1 KB of gzip'd IDX whose header declares 2e9 images of 4 x 4 bytes (128 GB as float32).
  const header = new Uint8Array(16 + 1000);
  const view = new DataView(header.buffer);
  view.setUint32(0, 0x0803);
  view.setUint32(4, 2_000_000_000);
  view.setUint32(8, 4);
  view.setUint32(12, 4);
  for (let i = 16; i < header.length; i++) header[i] = (i * 2654435761) >>> 24;
  writeFileSync(join(dir, 'bomb-idx3-ubyte.gz'), gzipSync(header));
  // 200 KB of JSON Lines: a first row of 40,000 values, then 40,000 rows too short to hold them
  // (rows x dim as counted at open: 6.4 GB of float32).
  writeFileSync(join(dir, 'bomb.jsonl'), `${JSON.stringify({ vector: new Array(40_000).fill(0) })}\n${'{}\n'.repeat(40_000)}`);
  const commands: [string, string[]][] = [
    ['build', ['build', '--out', 'bomb.idx']],
    ['knn-graph', ['knn-graph', '--k', '2', '--out', 'bomb.csv']],
    ['dedup', ['dedup', '--metric', 'l2', '--threshold', '0', '--out', 'bomb.csv']],
  ];
  for (const [name, args] of commands) {
    it(`${name}: a 1 KB gzip IDX declaring 2e9 x 16 is refused before anything is allocated`, () => {
      expect(statSync(join(dir, 'bomb-idx3-ubyte.gz')).size).toBeLessThan(1100);
      const r = bounded(...args, '--input', 'bomb-idx3-ubyte.gz');
      expectUserError(r, 1, /bomb-idx3-ubyte\.gz: declares 2000000000 x 16 \(128 GB of float32\) but holds 1000 bytes of data once decompressed \(32000000000 needed\)/);
      expect(r.err.trim().split('\n')).toHaveLength(1); // refused before the backend was created
    });
    it(`${name}: a JSON Lines file whose rows cannot hold the first row's values is refused at open`, () => {
      const r = bounded(...args, '--input', 'bomb.jsonl');
      expectUserError(r, 1, /bomb\.jsonl: line 2 \(2 bytes\) is too short to hold 40000 values \(as on the first line\)/);
      expect(r.err.trim().split('\n')).toHaveLength(1);
    });
  }

  it('an allocation that fails anyway (a true size over the memory limit) is one line naming what and how much', () => {
    // A sparse .npy of 16,777,216 x 256 float32 (17.2 GB, nothing written but the header): its
    // size is true, so it is opened; the index it needs does not fit in the bounded process.
    const path = join(dir, 'huge.npy');
    const head = npyHeader('float', 16_777_216, 256);
    const fd = openSync(path, 'w');
    try {
      writeSync(fd, head, 0, head.length, 0);
      ftruncateSync(fd, head.length + 16_777_216 * 256 * 4);
    } finally {
      closeSync(fd);
    }
    try {
      for (const [name, args] of commands.slice(0, 2)) {
        const r = bounded(...args, '--input', 'huge.npy');
        expectUserError(r, 1, new RegExp(`webgpu-knn ${name}: out of memory allocating the index of huge\\.npy \\(16777216 x 256 float32, 17\\.2 GB\\)`));
        expect(r.err.trim().split('\n').at(-1)).toMatch(/^webgpu-knn \S+: out of memory/);
      }
    } finally {
      rmSync(path, { force: true });
    }
  });
});

describe('messages that name the file and what is expected', () => {
  it('a row whose squared norm overflows float32 is named by file and row', () => {
    const rows = randomFloats(20 * d, 8);
    rows[13 * d + 2] = 3e19; // squared norm 9e38: over a quarter of float32's range
    writeVectors(join(dir, 'norm.fvecs'), rows, 20, d);
    for (const args of [
      ['build', '--out', 'norm.idx'],
      ['knn-graph', '--k', '2', '--out', 'norm.csv'],
      ['dedup', '--metric', 'l2', '--threshold', '0', '--out', 'norm.csv'],
    ]) {
      expectUserError(cli(...args, '--input', 'norm.fvecs', '--backend', 'cpu'), 1, /norm\.fvecs: row 13 has a squared norm of 9\.000e\+38; at most 8\.507e\+37/);
    }
  });

  it('range-search, remove and dedup --against given a shard manifest say so, and which commands take one', () => {
    expect(cli('build', '--input', 'x.fvecs', '--shards', '2', '--out', 'm.json', '--backend', 'cpu').code).toBe(0);
    const manifestMessage = /--index m\.json is a shard manifest \(from 'build --shards'\); \S+ takes one index file \(search and knn-graph --index take a manifest\)/;
    expectUserError(cli('range-search', '--index', 'm.json', '--queries', 'x.fvecs', '--radius', '1', '--out', 'r.csv'), 2, manifestMessage);
    expectUserError(cli('remove', '--index', 'm.json', '--ids', 'x.fvecs'), 2, manifestMessage);
    expectUserError(cli('dedup', '--input', 'x.fvecs', '--against', 'm.json', '--metric', 'l2', '--threshold', '1', '--out', 'r.csv'), 2, /--against m\.json is a shard manifest \(from 'build --shards'\); dedup --against takes one index file \(search and knn-graph --index take a manifest\)/);
    // A manifest under another name is found by its contents.
    writeFileSync(join(dir, 'm-copy.idx'), readFileSync(join(dir, 'm.json')));
    expectUserError(cli('remove', '--index', 'm-copy.idx', '--ids', 'x.fvecs'), 2, /--index m-copy\.idx is a shard manifest/);
  });

  it('JSON Lines distances keep the sign of the padding: 1e999 / -1e999', () => {
    expect(cli('build', '--input', 'x.fvecs', '--metric', 'ip', '--out', 'ip.idx', '--backend', 'cpu').code).toBe(0);
    writeVectors(join(dir, 'q1.fvecs'), randomFloats(d, 9), 1, d);
    const r = cli('search', '--index', 'ip.idx', '--queries', 'q1.fvecs', '--k', String(n + 2), '--out', 'pad.jsonl', '--distances', 'padd.jsonl', '--backend', 'cpu');
    expect(r.code, r.err).toBe(0);
    const line = readFileSync(join(dir, 'padd.jsonl'), 'utf8');
    expect(line).toMatch(/,-1e999,-1e999\]\}\n$/);
    const distances = JSON.parse(line).neighbors as number[];
    expect(distances.slice(n)).toEqual([-Infinity, -Infinity]);
    expect(distances.slice(0, n).every(Number.isFinite)).toBe(true);
    expect(JSON.parse(readFileSync(join(dir, 'pad.jsonl'), 'utf8')).neighbors.slice(n)).toEqual([-1, -1]);
  });
});
