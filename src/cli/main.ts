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
import { backendNoted, printError, printHelp, printJson, restoreStreams, setMode, stdoutWrite, takeModeFlags } from './report.js';
import { sendStdout, shownPaths } from './stdio.js';
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

Every command also takes:
  -q, --quiet       no progress or informational lines on stderr (errors still go there; the
                    exit codes are the same)
  --json            on success, one JSON object on stdout summarising what the command did
                    (its name, seconds, and its counts and files); on failure {"error": MESSAGE,
                    "exitCode": CODE} there, and the message on stderr as always; what would go
                    to stdout otherwise goes to stderr. Not for bench and worker, nor with an
                    output on stdout (-)
A vector input given as - is read from stdin (its format named by --stdin-format), a result
file given as - is written to stdout (--stdout-format), where the command's --help lists them.
${SETUP_HINT}
'worker' and --distributed runs need the optional packages bullmq and ioredis (npm install bullmq ioredis).`;

/** This package's version, from the package.json two folders above this file (dist/cli/ or src/cli/), wherever it is installed. */
function version(): string {
  const file = fileURLToPath(new URL('../../package.json', import.meta.url));
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

export async function main(argv: string[]): Promise<number> {
  const { argv: args, quiet, json } = takeModeFlags(argv);
  const [name = COMMANDS[0].name, ...rest] = args;
  try {
    if (name === '-h' || name === '--help' || name === 'help') {
      printHelp(USAGE);
      return 0;
    }
    if (name === '-V' || name === '--version') {
      if (json) printJson({ version: version() });
      else console.log(version());
      return 0;
    }
    const command = COMMANDS.find((c) => c.name === name);
    if (!command) {
      throw new UsageError(`unknown command '${name}'; expected ${NAMES.slice(0, -1).join(', ')} or ${NAMES.at(-1)} (see webgpu-knn --help)`);
    }
    if (json && command.json === false) throw new UsageError(`--json does not apply to ${name}, which ${name === 'bench' ? 'prints its own report' : 'runs until it is stopped'}`);
    setMode({ quiet, json });
    const t0 = performance.now();
    const summary = await command.run(rest);
    await sendStdout(stdoutWrite);
    restoreStreams();
    if (json && summary) printJson({ command: name, backend: backendNoted(), ...summary, seconds: Number(((performance.now() - t0) / 1000).toFixed(3)) });
    return 0;
  } catch (err) {
    restoreStreams();
    const e = err as Error;
    const message = shownPaths(e.message);
    const usage = e instanceof UsageError || e.name === 'UsageError' || (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    printError(`webgpu-knn ${name}: ${message}\n`);
    const code = usage ? 2 : 1;
    if (json) printJson({ error: message, exitCode: code });
    // Bad input (a missing or malformed file, a wrong dim, a full disk) is the user's to fix: no stack trace for it.
    if (!usage && !(e instanceof InvalidArgumentError || e instanceof FileError || e instanceof WebGpuUnavailableError)) printError(`${e.stack ?? ''}\n`);
    return code;
  }
}

removeTempsOnSignals();
main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
