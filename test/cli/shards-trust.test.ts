/**
 * Shard manifests are not trusted (issue 33, item 4): a manifest edited by hand or crafted is
 * refused before any result is written when a shard is listed twice (by name or by content), when
 * a shard's header or count disagrees with the manifest, when its ids are not the ones the
 * manifest gives it (row numbers: exactly [firstRow, firstRow + rows); caller ids: disjoint
 * across shards), and when a shard path leaves the manifest's folder (absolute, `..`, a
 * subfolder, a symbolic link out), with errors that say nothing about the file outside. Through
 * the CLI on the CPU backend, and the worker's own search-shard job given a crafted plan.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { inputFile } from '../../src/cli/cluster/job-files.js';
import { checkManifest, readManifest } from '../../src/cli/cluster/shard-files.js';
import { runSearchShard } from '../../src/cli/cluster/shard-search.js';
import { writeVectors } from '../../src/io/vectors.js';
import { randomSmallInts } from '../../src/common/random.js';
import { cliIn } from '../helpers/cli.js';
import { cpuBackend } from '../helpers/cpu.js';

const top = mkdtempSync(join(tmpdir(), 'webgpu-knn-shard-trust-'));
// The index lives in its own folder; `top` holds what is outside it.
const dir = join(top, 'index');
mkdirSync(dir);
const { cli, ok } = cliIn(dir, '--backend', 'cpu');
const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

afterAll(() => rmSync(top, { recursive: true, force: true }));

const n = 120;
const d = 4;
writeVectors(join(dir, 'x.fvecs'), randomSmallInts(n * d, 11, 7), n, d);
writeVectors(join(dir, 'q.fvecs'), randomSmallInts(10 * d, 12, 7), 10, d);
// 60 other rows: an unrelated index of the same dim, metric and type.
writeVectors(join(dir, 'other.fvecs'), randomSmallInts(60 * d, 13, 7), 60, d);
writeFileSync(join(dir, 'ids.txt'), Array.from({ length: n }, (_, r) => 5000 + r).join('\n'));
// Caller ids 5000..5059 again: the ids of shard 0 of c.json.
writeFileSync(join(dir, 'ids-overlap.txt'), Array.from({ length: 60 }, (_, r) => 5000 + r).join('\n'));
writeFileSync(join(dir, 'ids-apart.txt'), Array.from({ length: 60 }, (_, r) => 9000 + r).join('\n'));
ok('build', '--input', 'x.fvecs', '--out', 't.json', '--shards', '2');
ok('build', '--input', 'x.fvecs', '--out', 'c.json', '--shards', '2', '--ids', 'ids.txt');
ok('build', '--input', 'other.fvecs', '--out', 'other.idx');
ok('build', '--input', 'other.fvecs', '--out', 'other-ip.idx', '--metric', 'ip');
ok('build', '--input', 'other.fvecs', '--out', 'other-ivf.idx', '--type', 'IVF2,Flat');
ok('build', '--input', 'other.fvecs', '--out', 'other-overlap.idx', '--ids', 'ids-overlap.txt');
ok('build', '--input', 'other.fvecs', '--out', 'other-apart.idx', '--ids', 'ids-apart.txt');
ok('search', '--index', 't.json', '--queries', 'q.fvecs', '--k', '5', '--out', 'good.csv');

interface Entry {
  file: string;
  firstRow: number;
  rows: number;
  bytes: number;
  sha256: string;
}
type Manifest = { ntotal: number; rowIds: boolean; shards: Entry[] };
const manifestOf = (name: string): Manifest => JSON.parse(readFileSync(join(dir, name), 'utf8')) as Manifest;
/** The entry a manifest would give file `name` (in `folder`) with its real size and SHA-256. */
const entryFor = (path: string, file: string, firstRow: number, rows: number): Entry => {
  const b = readFileSync(path);
  return { file, firstRow, rows, bytes: b.length, sha256: sha256(b) };
};
let crafted = 0;
/** Writes `m` as a new manifest in the index folder and returns its name. */
const craft = (m: Manifest): string => {
  const name = `crafted-${crafted++}.json`;
  writeFileSync(join(dir, name), JSON.stringify(m));
  return name;
};
/** A search of a crafted manifest: refused (exit 1, one line, no output); the message. */
const refused = (manifest: string, pattern: RegExp): string => {
  const out = `${manifest}.csv`;
  const r = cli('search', '--index', manifest, '--queries', 'q.fvecs', '--k', '5', '--out', out);
  expect(r.code, r.err).toBe(1);
  expect(r.err).toMatch(pattern);
  expect(r.err).not.toMatch(/^\s+at /m);
  expect(existsSync(join(dir, out)), 'nothing written').toBe(false);
  return r.err;
};

describe('a manifest lists each shard once', () => {
  it('the same shard listed twice (its checksum copied): refused, where every id came back twice', () => {
    const t = manifestOf('t.json');
    const name = craft({ ...t, shards: [t.shards[0], { ...t.shards[0], firstRow: 60 }] });
    refused(name, /shards\[1\]\.file is "t\.[0-9a-f]{8}\.shard-0\.idx", which shards\[0\] lists already/);
    const g = cli('knn-graph', '--index', name, '--k', '3', '--out', 'g.csv');
    expect(g.code, g.err).toBe(1);
    expect(g.err).toMatch(/which shards\[0\] lists already/);
  });

  it('a copy of a shard under another name: refused by its SHA-256', () => {
    const t = manifestOf('t.json');
    writeFileSync(join(dir, 'copy.idx'), readFileSync(join(dir, t.shards[0].file)));
    refused(craft({ ...t, shards: [t.shards[0], { ...t.shards[0], file: 'copy.idx', firstRow: 60 }] }), /shards\[1\]\.sha256 is "[0-9a-f]{64}", the SHA-256 of shards\[0\]: the same file listed twice/);
  });
});

describe("each shard's header, count and ids are checked against the manifest", () => {
  it('an unrelated valid index with its real SHA-256, ids 0..59 where the manifest says [60, 120): refused', () => {
    const t = manifestOf('t.json');
    refused(craft({ ...t, shards: [t.shards[0], entryFor(join(dir, 'other.idx'), 'other.idx', 60, 60)] }), /shard file \S*other\.idx holds id 0; the manifest gives it the row numbers \[60, 120\)/);
  });

  it('an unrelated index of another metric, another type: refused naming the field', () => {
    const t = manifestOf('t.json');
    refused(craft({ ...t, shards: [t.shards[0], entryFor(join(dir, 'other-ip.idx'), 'other-ip.idx', 60, 60)] }), /shard file \S*other-ip\.idx: its header says metric ip; the manifest says l2/);
    refused(craft({ ...t, shards: [t.shards[0], entryFor(join(dir, 'other-ivf.idx'), 'other-ivf.idx', 60, 60)] }), /shard file \S*other-ivf\.idx: its header says type IVF2,Flat; the manifest says Flat/);
  });

  it("rows that disagree with the files (summing to ntotal): refused naming the shard's count", () => {
    const t = manifestOf('t.json');
    const name = craft({ ...t, shards: [{ ...t.shards[0], rows: 59 }, { ...t.shards[1], firstRow: 59, rows: 61 }] });
    refused(name, /shard file \S*t\.[0-9a-f]{8}\.shard-0\.idx holds 60 vectors; the manifest says 59 \(shards\[0\]\.rows\)/);
    refused(craft({ ...t, ntotal: 121 }), /ntotal is 121; expected 120 \(the shards' rows together\)/);
  });

  it('caller ids shared by two shards: refused; disjoint caller ids of an unrelated index are indistinguishable from a shard', () => {
    const c = manifestOf('c.json');
    refused(craft({ ...c, shards: [c.shards[0], entryFor(join(dir, 'other-overlap.idx'), 'other-overlap.idx', 60, 60)] }), /id 5000 is in shards\[0\] \(\S*c\.[0-9a-f]{8}\.shard-0\.idx\) and in shards\[1\] \(\S*other-overlap\.idx\): the ids of a sharded index are disjoint/);
    const apart = craft({ ...c, shards: [c.shards[0], entryFor(join(dir, 'other-apart.idx'), 'other-apart.idx', 60, 60)] });
    ok('search', '--index', apart, '--queries', 'q.fvecs', '--k', '5', '--out', 'apart.csv');
  });

  it('a manifest of row-number ids whose shard holds caller ids: refused', () => {
    const t = manifestOf('t.json');
    const c = manifestOf('c.json');
    refused(craft({ ...t, shards: [t.shards[0], c.shards[1]] }), /shard file \S*c\.[0-9a-f]{8}\.shard-1\.idx holds id 5060; the manifest gives it the row numbers \[60, 120\)/);
  });

  it("the worker's search-shard job checks the file itself (a crafted plan, the producer's checks skipped)", async () => {
    const { shards } = readManifest(join(dir, 't.json'));
    // Shard 1's place in the plan, shard 0's file and checksum: the ids are wrong for that place.
    const fake = { ...shards[1], path: shards[0].path, bytes: shards[0].bytes, sha256: shards[0].sha256 };
    const tiles = join(top, 'tiles');
    mkdirSync(tiles);
    const job = { shards: [shards[0], fake], metric: 'l2' as const, queries: inputFile(join(dir, 'q.fvecs')), starts: [0, 10], kk: 5, tiles, block: 0, shard: 1 };
    await expect(runSearchShard(cpuBackend(), job)).rejects.toThrow(/t\.[0-9a-f]{8}\.shard-0\.idx holds id 0; the manifest gives it the row numbers \[60, 120\)/);
    expect(existsSync(join(tiles, '0-1.knn')), 'no result written').toBe(false);
  });
});

describe("shard paths stay in the manifest's folder, and errors say nothing of files outside", () => {
  // A file outside the folder, such as /etc/shadow: its size and SHA-256 must never be printed.
  const secret = join(top, 'secret.bin');
  writeFileSync(secret, Buffer.alloc(12345, 7));
  const secretSha = sha256(readFileSync(secret));
  const t = manifestOf('t.json');
  /** The error of a manifest whose shard 1 is `file` (the manifest's size and checksum `bytes`, `sha`), through the CLI. */
  const errorFor = (file: string, bytes: number, sha: string): string => {
    const err = refused(craft({ ...t, shards: [t.shards[0], { ...t.shards[1], file, bytes, sha256: sha }] }), /./);
    expect(err).not.toContain('12345');
    expect(err).not.toContain(secretSha);
    return err;
  };

  it('an absolute path, `..`, a subfolder: refused as names, whatever the manifest says of the file', async () => {
    expect(errorFor(secret, 12345, secretSha)).toContain(`shards[1].file is ${JSON.stringify(secret)}; expected the name of a file in the manifest's folder`);
    for (const file of [secret, '../secret.bin', 'sub/x.idx', '..', '.', 'a\\b.idx', 'x\0.idx']) {
      for (const [bytes, sha] of [
        [1, '0'.repeat(64)],
        [12345, secretSha],
      ] as const) {
        const name = craft({ ...t, shards: [t.shards[0], { ...t.shards[1], file, bytes, sha256: sha }] });
        const err = await checkManifest(join(dir, name)).then(
          () => '',
          (e: Error) => e.message,
        );
        expect(err).toBe(`${join(dir, name)}: bad shard manifest: shards[1].file is ${JSON.stringify(file)}; expected the name of a file in the manifest's folder (no folder, no "..", not absolute)`);
      }
    }
  });

  it('a symbolic link out of the folder: refused, with the same words whether its target exists or not', () => {
    symlinkSync(secret, join(dir, 'out.idx'));
    symlinkSync(join(top, 'no-such-file'), join(dir, 'dangling.idx'));
    symlinkSync('../secret.bin', join(dir, 'out-relative.idx'));
    // Through a link to a folder outside: judged by the link's text, never by where it resolves.
    symlinkSync(top, join(dir, 'up'));
    symlinkSync('up/secret.bin', join(dir, 'out-through.idx'));
    const there = errorFor('out.idx', 12345, secretSha);
    expect(there).toMatch(/shard file \S*out\.idx is a symbolic link out of the manifest's folder; a shard is a file in the folder/);
    expect(errorFor('dangling.idx', 12345, secretSha).replaceAll('dangling.idx', 'out.idx').replace(/crafted-\d+/g, '')).toBe(there.replace(/crafted-\d+/g, ''));
    expect(errorFor('out-relative.idx', 1, '0'.repeat(64))).toMatch(/out-relative\.idx is a symbolic link out of the manifest's folder/);
    expect(errorFor('out-through.idx', 12345, secretSha)).toMatch(/out-through\.idx is a symbolic link out of the manifest's folder/);
  });

  it('a symbolic link to a shard in the folder is followed, and a folder is not a shard', () => {
    symlinkSync(t.shards[1].file, join(dir, 'in.idx'));
    const name = craft({ ...t, shards: [t.shards[0], { ...t.shards[1], file: 'in.idx' }] });
    ok('search', '--index', name, '--queries', 'q.fvecs', '--k', '5', '--out', 'in.csv');
    expect(readFileSync(join(dir, 'in.csv'), 'utf8')).toBe(readFileSync(join(dir, 'good.csv'), 'utf8'));
    mkdirSync(join(dir, 'folder.idx'));
    refused(craft({ ...t, shards: [t.shards[0], { ...t.shards[1], file: 'folder.idx' }] }), /shard file \S*folder\.idx is not a regular file/);
  });
});
