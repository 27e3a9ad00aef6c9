/**
 * The CLI as a package user has it (issue 36): dist/, shaders/ and package.json copied into a
 * folder outside the repository whose node_modules holds only what an install brings (the lock's
 * packages that are neither dev nor peer: webgpu, ml-matrix and its helpers), so bullmq and ioredis
 * (optional: the worker's and --distributed's) cannot be resolved. Every other command, --help
 * and --version included, works; the worker and a --distributed run say what to install. The
 * demo's data (the devDependency @sap-ux/fiori-docs-embeddings) is missing there too.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { writeVectors } from '../../src/io/vectors.js';
import { randomSmallInts } from '../../src/common/random.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const app = mkdtempSync(join(tmpdir(), 'webgpu-knn-installed-'));
const pkg = join(app, 'node_modules', 'webgpu-knn');
for (const part of ['dist', 'shaders', 'package.json']) cpSync(join(root, part), join(pkg, part), { recursive: true });
mkdirSync(join(app, 'node_modules'), { recursive: true });
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean; peer?: boolean }> };
for (const [path, entry] of Object.entries(lock.packages)) {
  // Nested copies come with the folder of the package above them.
  if (!path.startsWith('node_modules/') || path.includes('/node_modules/', 1) || entry.dev || entry.peer) continue;
  mkdirSync(dirname(join(app, path)), { recursive: true });
  symlinkSync(join(root, path), join(app, path), 'dir');
}

const MISSING = 'need the packages bullmq and ioredis, which are not installed: npm install bullmq ioredis';

function cli(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const env = { ...process.env };
  delete env.NODE_PATH;
  const r = spawnSync(process.execPath, [join(pkg, 'dist/cli/main.js'), ...args], { cwd: app, env, encoding: 'utf8', timeout: 200_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('the installed CLI without bullmq and ioredis', () => {
  it('cannot resolve them from its folder (else this test proves nothing)', () => {
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', "await import('bullmq')"], { cwd: pkg, encoding: 'utf8' });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('ERR_MODULE_NOT_FOUND');
  });

  it('--help and --version work; --version is the package.json version', () => {
    const help = cli('--help');
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toContain('CAGRA');
    expect(help.stdout).toContain('npm install bullmq ioredis');
    expect(help.stdout).not.toContain('scripts/setup-webgpu.sh');
    const v = cli('--version');
    expect(v.code, v.stderr).toBe(0);
    expect(v.stdout.trim()).toBe((JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version);
    expect(cli('worker', '--help').code).toBe(0);
  });

  it('build and search run', () => {
    writeVectors(join(app, 'x.fvecs'), randomSmallInts(40 * 8, 7), 40, 8);
    const b = cli('build', '--input', 'x.fvecs', '--out', 'x.index', '--backend', 'cpu');
    expect(b.code, b.stderr).toBe(0);
    const s = cli('search', '--index', 'x.index', '--queries', 'x.fvecs', '--k', '1', '--out', 'n.csv', '--backend', 'cpu');
    expect(s.code, s.stderr).toBe(0);
    const rows = readFileSync(join(app, 'n.csv'), 'utf8').trim().split('\n');
    expect(rows.length).toBe(40);
  });

  it('the worker and a --distributed run say what to install (exit 2), naming the command', () => {
    const w = cli('worker', '--redis', 'redis://127.0.0.1:6379', '--root', app);
    expect(w.code).toBe(2);
    expect(w.stderr).toBe(`webgpu-knn worker: distributed runs and the worker ${MISSING}\n`);
    const d = cli('dedup', '--input', 'x.fvecs', '--metric', 'l2', '--threshold', '1', '--out', 'd.jsonl', '--distributed', 'redis://127.0.0.1:6379');
    expect(d.code).toBe(2);
    expect(d.stderr).toContain(`webgpu-knn dedup: distributed runs and the worker ${MISSING}`);
  });

  it('the default command (the demo) runs without its devDependency, on generated data it says it uses', () => {
    const r = cli();
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('npm @sap-ux/fiori-docs-embeddings (the demo\'s real text embeddings) is not installed, so this runs on 778 generated 384-d vectors');
    // Rows 1, 21, ..., 761 are noisy copies of the rows before them: 39 pairs, nothing else near.
    expect(r.stdout).toContain('Near-duplicate pairs at cosine >= 0.95: 39, in 39 groups');
    expect(r.stdout).toContain('Timings');
  }, 240_000);

  it('the unknown-command message lists every command, worker and export included', () => {
    const r = cli('nope');
    expect(r.code).toBe(2);
    for (const name of ['demo', 'build', 'search', 'worker', 'export', 'knn-graph', 'info', 'bench']) expect(r.stderr).toContain(name);
  });
});
