/**
 * The top-level --help (src/cli/main.ts) against what it summarises: its bench entry lists exactly
 * the cases `webgpu-knn bench --help` runs (bench/main.ts's USAGES), and its no-adapter advice, like
 * the library's (src/platform/platform.ts), holds wherever the package is installed: the packages to
 * install, and the setup script by its absolute path.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { platform, setupScript } from '../../src/platform/platform.js';
import { CLI_MAIN } from '../helpers/cli.js';

function run(...args: string[]): { code: number | null; stdout: string } {
  const r = spawnSync(process.execPath, [CLI_MAIN, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout };
}

describe('webgpu-knn --help', () => {
  it("lists every bench case, and only those, in the bench command's entry", () => {
    const help = run('--help');
    expect(help.code).toBe(0);
    const entry = /^ {2}bench +benchmarks: ([^(]*)\(/m.exec(help.stdout);
    expect(entry, help.stdout).not.toBeNull();
    const listed = entry![1].split(/[\s,]+/).filter(Boolean);
    const bench = run('bench', '--help');
    expect(bench.code).toBe(0);
    const cases = /^usage: webgpu-knn bench <([^>]*)>/m.exec(bench.stdout);
    expect(cases, bench.stdout).not.toBeNull();
    expect([...listed].sort()).toEqual(cases![1].split(' | ').sort());
    expect(listed).toContain('filters');
    expect(listed).toContain('remove');
  });
});

describe('the no-adapter hint', () => {
  it('names the setup script by its absolute path, which exists, and the packages to install', () => {
    const script = setupScript();
    expect(script).not.toBeNull();
    expect(isAbsolute(script!)).toBe(true);
    expect(existsSync(script!)).toBe(true);
    expect(platform.setupHint).toContain(`bash ${script}`);
    expect(platform.setupHint).toContain('apt-get install libvulkan1 mesa-vulkan-drivers');
    expect(platform.setupHint).not.toMatch(/\n/);
  });

  it('finds the script from the CommonJS bundle (dist/index.cjs) too, and none outside the package', () => {
    const root = setupScript()!.slice(0, -'scripts/setup-webgpu.sh'.length);
    expect(setupScript(pathToFileURL(`${root}dist/index.cjs`).href)).toBe(setupScript());
    expect(setupScript(pathToFileURL(`${root}dist/platform/platform.js`).href)).toBe(setupScript());
    expect(setupScript(pathToFileURL('/tmp/some-app/bundle.js').href)).toBeNull();
  });
});
