#!/usr/bin/env node
/**
 * The command-line tool: the list of commands (one file each in src/cli/commands/: see
 * src/cli/command.ts), dispatched by name, and the top-level usage built from the list.
 * Exit codes: 0 ok, 1 runtime failure, 2 usage error.
 */

import type { Command } from './command.js';
import { benchCommand } from './commands/bench.js';
import { buildCommand } from './commands/build.js';
import { dedupCommand } from './commands/dedup.js';
import { demoCommand } from './commands/demo.js';
import { exportCommand } from './commands/export.js';
import { infoCommand } from './commands/info.js';
import { knnGraphCommand } from './commands/knn-graph.js';
import { rangeSearchCommand } from './commands/range-search.js';
import { removeCommand } from './commands/remove.js';
import { searchCommand } from './commands/search.js';
import { workerCommand } from './commands/worker.js';

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SETUP_HINT } from './help-text.js';
import { removeTempsOnSignals } from '../io/temp-files.js';
import { FileError, InvalidArgumentError, WebGpuUnavailableError, UsageError } from '../errors.js';

/** The commands, in the order the usage lists them; the first is the default. */
const COMMANDS: Command[] = [
  demoCommand,
  buildCommand,
  searchCommand,
  removeCommand,
  rangeSearchCommand,
  dedupCommand,
  workerCommand,
  knnGraphCommand,
  exportCommand,
  infoCommand,
  benchCommand,
];

const NAMES = COMMANDS.map((c) => c.name);

/** A command's entry in the usage: its name in a column of 13, its summary's lines beside it. */
const entry = (c: Command): string => `  ${c.name.padEnd(12)} ${c.summary.split('\n').join(`\n${' '.repeat(15)}`)}`;

const USAGE = `usage: webgpu-knn <command> [options]
       webgpu-knn --version

k-nearest-neighbour search (exact Flat, IVF, SQ / PQ / LSH codes, PCA transforms and CAGRA
graphs), near-duplicate detection and kNN graphs with WebGPU compute shaders, and a CPU twin of
every kernel.

commands:
${COMMANDS.map(entry).join('\n')}

'webgpu-knn <command> --help' describes each command. Exit codes: 0 ok, 1 failure (a missing,
unreadable or malformed file, a full disk), 2 usage error (a bad flag, an output that is an input),
130 / 143 interrupted (SIGINT / SIGTERM; temporary files are removed).
${SETUP_HINT}
'worker' and --distributed runs need the optional packages bullmq and ioredis (npm install bullmq ioredis).`;

/** This package's version, from the package.json two folders above this file (dist/cli/ or src/cli/), wherever it is installed. */
function version(): string {
  const file = fileURLToPath(new URL('../../package.json', import.meta.url));
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

export async function main(argv: string[]): Promise<number> {
  const [name = COMMANDS[0].name, ...rest] = argv;
  try {
    if (name === '-h' || name === '--help' || name === 'help') {
      console.log(USAGE);
      return 0;
    }
    if (name === '-V' || name === '--version') {
      console.log(version());
      return 0;
    }
    const command = COMMANDS.find((c) => c.name === name);
    if (!command) {
      throw new UsageError(`unknown command '${name}'; expected ${NAMES.slice(0, -1).join(', ')} or ${NAMES.at(-1)} (see webgpu-knn --help)`);
    }
    await command.run(rest);
    return 0;
  } catch (err) {
    const e = err as Error;
    const usage = e instanceof UsageError || e.name === 'UsageError' || (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    process.stderr.write(`webgpu-knn ${name}: ${e.message}\n`);
    if (usage) return 2;
    // Bad input (a missing or malformed file, a wrong dim, a full disk) is the user's to fix: no stack trace for it.
    if (!(e instanceof InvalidArgumentError || e instanceof FileError || e instanceof WebGpuUnavailableError)) process.stderr.write(`${e.stack ?? ''}\n`);
    return 1;
  }
}

removeTempsOnSignals();
main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
