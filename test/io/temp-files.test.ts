/**
 * Temporary and backup files beside an output carry the host and pid of the process that made them
 * (`.NAME.webgpu-knn-tmp-HOST-PID-RAND`), so that on a folder shared between machines a run judges
 * only its own host's files: one whose pid is gone from this host is left by an interrupted run and
 * removed, another host's is left alone (its pid means nothing here), and the names of earlier
 * versions (`-tmp-PID-RAND`, no host) are judged by pid as they always were.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { claimTemp, hostInName, parseSideFile, releaseTemp, removeStaleTemps, sideFile } from '../../src/io/temp-files.js';

const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-temps-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A pid that existed and has exited (so that nothing runs under it now). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

/** This host as a file name holds it (hostname() is letters, digits, dots and dashes here). */
const host = hostname();

describe('temporary file names', () => {
  it('name the host and the pid, for the temporary file and the backup alike', () => {
    const out = join(dir, 'named.csv');
    const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const tmp = claimTemp(out);
    releaseTemp(tmp);
    expect(tmp).toMatch(new RegExp(`^${esc(dir)}/\\.named\\.csv\\.webgpu-knn-tmp-${esc(host)}-${process.pid}-[0-9a-f]{8}$`));
    expect(sideFile(out, 'old')).toMatch(new RegExp(`^${esc(dir)}/\\.named\\.csv\\.webgpu-knn-old-${esc(host)}-${process.pid}-[0-9a-f]{8}$`));
  });
});

describe('parseSideFile', () => {
  it('reads the file, kind, host and pid from a name, a host with dashes and dots included; an old name is this host\'s', () => {
    expect(parseSideFile('.p.x.shard-1.idx.webgpu-knn-tmp-node-7.rack-2-123-0badf00d')).toEqual({ of: 'p.x.shard-1.idx', kind: 'tmp', host: 'node-7.rack-2', pid: 123 });
    expect(parseSideFile('.a.csv.webgpu-knn-old-h%2Fb-9-00c0ffee')).toEqual({ of: 'a.csv', kind: 'old', host: 'h%2Fb', pid: 9 });
    expect(parseSideFile('.a.csv.webgpu-knn-tmp-77-0badf00d')).toEqual({ of: 'a.csv', kind: 'tmp', host: hostInName(), pid: 77 });
    for (const name of ['a.csv.webgpu-knn-tmp-h-1-0badf00d', '.a.csv.webgpu-knn-tmp-h-1-0badf0', '.a.csv.webgpu-knn-lock', '.a.csv.webgpu-knn-tiles-h-1-0badf00d', '.a.csv.webgpu-knn-tmp-h-x-0badf00d']) {
      expect(parseSideFile(name), name).toBeNull();
    }
  });
});

describe('removeStaleTemps', () => {
  it("removes this host's files whose pid is gone and old-format names; leaves live ones, other hosts' and other outputs'", () => {
    const dead = deadPid();
    const tmp = (tail: string, name = 's.csv'): string => `.${name}.webgpu-knn-tmp-${tail}`;
    const stale = [
      tmp(`${host}-${dead}-0badf00d`), // this host, its process gone
      tmp(`${dead}-0badf00d`), // an earlier version's name: no host, judged by pid as before
    ];
    const kept = [
      tmp(`${host}-${process.pid}-00c0ffee`), // this test process: alive
      tmp(`other-host.example.org-${dead}-0badf00d`), // another host: its pid cannot be judged here
      tmp(`node-7.rack-2-${dead}-0badf00d`), // a host with dashes and digits in its name
      tmp(`12-${dead}-0badf00d`), // a host named by digits alone
      tmp(`${host}x-${dead}-0badf00d`), // a host whose name begins with this one's
      tmp(`${host}-${dead}-0badf00d`, 'other.csv'), // another output's
      tmp(`${host}-${dead}-0badf00d-x`), // not a temporary name of ours
      `.s.csv.webgpu-knn-old-${host}-${dead}-0badf00d`, // a backup: the old contents, never removed by a run
    ];
    for (const f of [...stale, ...kept]) writeFileSync(join(dir, f), 'partial');
    expect(removeStaleTemps(join(dir, 's.csv')).sort()).toEqual(stale.map((f) => join(dir, f)).sort());
    expect(readdirSync(dir).sort()).toEqual(kept.sort());
  });
});
