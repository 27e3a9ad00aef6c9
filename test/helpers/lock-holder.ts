/** A child process that holds a file's advisory lock (src/io/file-lock.ts), as a running writer would. */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './redis.js';

const children: ChildProcess[] = [];

/**
 * Takes the lock of `path` for `purpose` in a child process that holds it until killed; resolves
 * once it holds it. Uses the built module (lock suites run after the build, as the CLI suites do).
 */
export function lockHolder(path: string, purpose: string): Promise<ChildProcess> {
  const src = join(ROOT, 'dist/io/file-lock.js');
  const code = `import { lockFile } from ${JSON.stringify(src)}; lockFile(${JSON.stringify(path)}, ${JSON.stringify(purpose)}); console.log('locked'); setInterval(() => {}, 1000);`;
  const c = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(c);
  return new Promise((res, rej) => {
    let err = '';
    c.stderr!.on('data', (b) => (err += b));
    c.stdout!.on('data', (b) => String(b).includes('locked') && res(c));
    c.on('exit', (code) => rej(new Error(`holder exited ${code}: ${err}`)));
  });
}

/** Kills every holder still running (for afterAll). */
export function killLockHolders(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}
