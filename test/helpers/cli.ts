/** The built CLI (dist/cli/main.js, which the test script builds first), run in a folder as the CLI suites run it. */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { expect } from 'vitest';

export const CLI_MAIN = join(import.meta.dirname, '../../dist/cli/main.js');

/**
 * Commands run in `dir` with `extra` after their own arguments (`--backend cpu`, say): `cli` gives
 * the exit code and stderr; `ok` expects exit 0 (naming the command and its stderr otherwise) and
 * gives stderr.
 */
export function cliIn(dir: string, ...extra: string[]) {
  const cli = (...args: string[]): { code: number | null; err: string } => {
    const r = spawnSync(process.execPath, [CLI_MAIN, ...args, ...extra], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    return { code: r.status, err: r.stderr };
  };
  const ok = (...args: string[]): string => {
    const r = cli(...args);
    expect(r.code, `${args.join(' ')}: ${r.err}`).toBe(0);
    return r.err;
  };
  return { cli, ok };
}
