/**
 * The one writer of every output: checked writes (short writes continued, ENOSPC reported against
 * the user's path), temporary files that never outlive a failure, and several outputs that appear
 * together or not at all. The low-level write is stubbed to simulate a full disk.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { runDedup as dedupCommand } from '../../src/cli/commands/dedup.js';
import { runSearch as search } from '../../src/cli/commands/search.js';
import { fileError } from '../../src/io/file-error.js';
import { AtomicFile, type Output, VectorStreamWriter, commitOutputs, setWriteFunction, writeAtomically } from '../../src/io/stream-writer.js';
import { liveTemps } from '../../src/io/temp-files.js';
import { readVectors, writeVectors } from '../../src/io/vectors.js';
import { randomFloats } from '../../src/common/random.js';
import { cpuBackend } from '../helpers/cpu.js';
import { FlatIndex } from '../../src/indexes/flat/flat-index.js';

const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-writer-'));
const files = (): string[] => readdirSync(dir).sort();
const enospc = (): never => {
  throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
};

/** A write function that fails with ENOSPC once `budget` bytes have been written (a nearly full disk). */
/** An AtomicFile for `name` in the test folder with `text` written, not yet committed. */
function written(name: string, text: string): AtomicFile {
  const f = new AtomicFile(join(dir, name));
  f.write(text);
  return f;
}

/** An Output that does nothing at every step but those given. */
function stubOutput(path: string, steps: Partial<Output>): Output {
  const none = (): void => undefined;
  return { path, finish: none, backUp: none, publish: none, undo: none, keep: none, abort: none, ...steps };
}

function diskWithRoom(budget: number): (fd: number, b: Uint8Array, o: number, l: number) => number {
  let left = budget;
  return (fd, b, o, l) => {
    if (left <= 0) enospc();
    const wrote = writeSync(fd, b, o, Math.min(l, left));
    left -= wrote;
    return wrote;
  };
}

afterEach(() => setWriteFunction());

describe('AtomicFile', () => {
  it('continues short writes until every byte is written', () => {
    setWriteFunction((fd, b, o, l) => writeSync(fd, b, o, Math.min(l, 7)));
    const text = 'x'.repeat(1000) + '\n';
    writeAtomically(join(dir, 'short.txt'), text);
    expect(readFileSync(join(dir, 'short.txt'), 'utf8')).toBe(text);
  });

  it('a full disk is an error naming the output, and leaves neither a temporary file nor an output', () => {
    writeFileSync(join(dir, 'full.txt'), 'the old contents');
    setWriteFunction(diskWithRoom(100));
    const before = files();
    expect(() => writeAtomically(join(dir, 'full.txt'), 'y'.repeat(1000))).toThrow(
      new RegExp(`^${join(dir, 'full.txt')}: cannot write: no space left on device \\(ENOSPC\\)$`),
    );
    expect(files()).toEqual(before);
    expect(readFileSync(join(dir, 'full.txt'), 'utf8')).toBe('the old contents');
    expect(liveTemps()).toEqual([]);
  });

  it('a write that accepts no bytes is an error, not an endless loop', () => {
    setWriteFunction(() => 0);
    expect(() => writeAtomically(join(dir, 'zero.txt'), 'abc')).toThrow(/zero.txt: cannot write: the file system accepted no bytes/);
    expect(existsSync(join(dir, 'zero.txt'))).toBe(false);
  });

  it('several outputs appear together or not at all', () => {
    writeFileSync(join(dir, 'a.txt'), 'old a');
    const a = written('a.txt', 'new a');
    const b = written('b.txt', 'new b');
    expect(() => commitOutputs([a, b, stubOutput('failing', { finish: enospc })])).toThrow(/ENOSPC/);
    expect(readFileSync(join(dir, 'a.txt'), 'utf8')).toBe('old a');
    expect(existsSync(join(dir, 'b.txt'))).toBe(false);
    expect(files().filter((f) => f.includes('webgpu-knn-tmp'))).toEqual([]);
  });

  it('a rename that fails puts back the outputs already renamed, old contents included', () => {
    // The reviewer's case: --out replaced, then --distances cannot be; before, a.txt kept "new a".
    writeFileSync(join(dir, 'r-a.txt'), 'old a');
    const a = written('r-a.txt', 'new a');
    const n = written('r-new.txt', 'new file');
    expect(() => commitOutputs([a, n, stubOutput('stuck', { publish: enospc })])).toThrow(/ENOSPC/);
    expect(readFileSync(join(dir, 'r-a.txt'), 'utf8')).toBe('old a');
    expect(existsSync(join(dir, 'r-new.txt'))).toBe(false);
    expect(files().filter((f) => f.includes('webgpu-knn-'))).toEqual([]);
    expect(liveTemps()).toEqual([]);
  });

  it('a replaced path that cannot be kept aside (a directory) fails before anything is replaced', () => {
    writeFileSync(join(dir, 'd-a.txt'), 'old a');
    mkdirSync(join(dir, 'd-b.txt'));
    expect(() => commitOutputs([written('d-a.txt', 'new a'), written('d-b.txt', 'new b')])).toThrow(/d-b.txt: cannot keep a copy of the file it replaces/);
    expect(readFileSync(join(dir, 'd-a.txt'), 'utf8')).toBe('old a');
    expect(files().filter((f) => f.includes('webgpu-knn-'))).toEqual([]);
  });

  it('a success leaves no backup behind', () => {
    writeFileSync(join(dir, 's-a.txt'), 'old a');
    commitOutputs([written('s-a.txt', 'new a'), written('s-b.txt', 'new b')]);
    expect([readFileSync(join(dir, 's-a.txt'), 'utf8'), readFileSync(join(dir, 's-b.txt'), 'utf8')]).toEqual(['new a', 'new b']);
    expect(files().filter((f) => f.includes('webgpu-knn-'))).toEqual([]);
  });

  it('names its temporary file after the output, with this host and pid, in the same directory', () => {
    const f = new AtomicFile(join(dir, 'named.csv'));
    expect(liveTemps()).toHaveLength(1);
    expect(liveTemps()[0]).toMatch(new RegExp(`^${dir}/\\.named\\.csv\\.webgpu-knn-tmp-${hostname()}-${process.pid}-[0-9a-f]{8}$`));
    f.abort();
    expect(liveTemps()).toEqual([]);
  });
});

describe('VectorStreamWriter on a full disk', () => {
  it('fails with ENOSPC naming the user path; nothing is left', () => {
    setWriteFunction(diskWithRoom(500));
    const w = new VectorStreamWriter(join(dir, 'ids.ivecs'), 100, 4, 'int');
    expect(() => {
      for (let i = 0; i < 10; i++) w.write(new Int32Array(40), 10);
    }).toThrow(/ids.ivecs: cannot write: no space left on device/);
    w.abort();
    expect(files().filter((f) => f.startsWith('ids') || f.includes('ids.ivecs'))).toEqual([]);
  });
});

describe('the CLI commands on a full disk', () => {
  const n = 500;
  const d = 4;
  writeVectors(join(dir, 'x.fvecs'), randomFloats(n * d, 5), n, d);

  it('search --out --distances: an error naming an output; neither appears, old files stay', async () => {
    const cpu = cpuBackend();
    const index = new FlatIndex(cpu, { dim: d });
    await index.add(randomFloats(n * d, 5));
    await index.save(join(dir, 'x.idx'));
    writeFileSync(join(dir, 'ids.csv'), 'old ids');
    setWriteFunction(diskWithRoom(20_000)); // room for the ids (~9 kB), not for the distances too
    const args = ['--index', 'x.idx', '--queries', 'x.fvecs', '--k', '5', '--out', 'ids.csv', '--distances', 'd.csv', '--backend', 'cpu'].map((a) =>
      a.endsWith('.idx') || a.endsWith('.fvecs') || a.endsWith('.csv') ? join(dir, a) : a,
    );
    await expect(search(args)).rejects.toThrow(/(ids|d)\.csv: cannot write: no space left on device \(ENOSPC\)/);
    expect(readFileSync(join(dir, 'ids.csv'), 'utf8')).toBe('old ids');
    expect(existsSync(join(dir, 'd.csv'))).toBe(false);
    expect(files().filter((f) => f.includes('webgpu-knn-tmp'))).toEqual([]);
  });

  it('dedup writes its pairs in bounded blocks through the checked writer, and --clusters only with them', async () => {
    const m = 400; // identical rows: 79800 pairs
    writeVectors(join(dir, 'same.fvecs'), new Float32Array(m * d).fill(1), m, d);
    const sizes: number[] = [];
    setWriteFunction((fd, b, o, l) => {
      sizes.push(l);
      return writeSync(fd, b, o, l);
    });
    const args = (out: string) => ['--input', join(dir, 'same.fvecs'), '--metric', 'l2', '--threshold', '0', '--out', join(dir, out), '--clusters', join(dir, 'c.json'), '--backend', 'cpu'];
    await dedupCommand(args('pairs.csv'));
    const lines = readFileSync(join(dir, 'pairs.csv'), 'utf8').trimEnd().split('\n');
    expect(lines).toHaveLength(1 + (m * (m - 1)) / 2);
    expect(sizes.length).toBeGreaterThanOrEqual(4); // the header, two blocks of pairs (79800 > 65536), the clusters
    expect(Math.max(...sizes)).toBeLessThan(4 << 20);

    setWriteFunction(diskWithRoom(100_000));
    await expect(dedupCommand(args('pairs2.csv'))).rejects.toThrow(/pairs2.csv: cannot write: no space left on device/);
    expect(existsSync(join(dir, 'pairs2.csv'))).toBe(false);
    expect(files().filter((f) => f.includes('webgpu-knn-tmp'))).toEqual([]);
  });
});

describe('fileError', () => {
  it('says what was wrong, with the path and the code', () => {
    const err = Object.assign(new Error('EACCES: permission denied, open'), { code: 'EACCES' });
    expect(fileError('data/x.fvecs', 'cannot read', err).message).toBe('data/x.fvecs: cannot read: permission denied (EACCES)');
    expect(fileError('x', 'cannot read', Object.assign(new Error('odd'), { code: 'EWEIRD' })).message).toBe('x: cannot read: EWEIRD');
  });
});

describe('signals belong to the application', () => {
  it('saving an index installs no SIGINT / SIGTERM handler (only the CLI does)', async () => {
    const before = [process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')];
    const index = new FlatIndex(cpuBackend(), { dim: 2 });
    await index.add(new Float32Array([1, 2, 3, 4]));
    await index.save(join(mkdtempSync(join(tmpdir(), 'webgpu-knn-sig-')), 'i.idx'));
    expect([process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')]).toEqual(before);
  });
});

describe('non-finite values in JSON Lines', () => {
  it('+/-Infinity (the padding distance) is written 1e999 / -1e999: valid JSON that reads back with its sign', async () => {
    const path = join(dir, 'pad.jsonl');
    const w = new VectorStreamWriter(path, 2, 3, 'float');
    w.write(Float32Array.from([0.5, Infinity, Infinity, -2, -Infinity, -Infinity]), 2);
    w.close();
    const text = readFileSync(path, 'utf8');
    expect(text).toBe('{"id":0,"neighbors":[0.5,1e999,1e999]}\n{"id":1,"neighbors":[-2,-1e999,-1e999]}\n');
    expect(text.trimEnd().split('\n').map((l) => JSON.parse(l).neighbors)).toEqual([
      [0.5, Infinity, Infinity],
      [-2, -Infinity, -Infinity],
    ]);
    // The vector reader takes the literals back too (as embeddings: the same number grammar).
    writeVectors(join(dir, 'inf.jsonl'), Float32Array.from([1, Infinity, -Infinity, 2]), 2, 2);
    expect(readFileSync(join(dir, 'inf.jsonl'), 'utf8')).toBe('{"id":0,"embedding":[1,1e999]}\n{"id":1,"embedding":[-1e999,2]}\n');
    expect(Array.from((await readVectors(join(dir, 'inf.jsonl'))).data)).toEqual([1, Infinity, -Infinity, 2]);
  });
});
