/**
 * A command of the tool: one file each in src/cli/commands/, listed in src/cli/main.ts, which
 * dispatches by name and builds the top-level usage from the list. Each takes `--help`, and
 * `--backend auto|webgpu|cpu` where it computes; indexes are seen through VectorIndex only.
 * A command file imports no other command file: what several share is in src/cli/flags.ts,
 * help-text.ts, index-flags.ts, open.ts, outputs.ts, paths.ts, and src/cli/cluster/ (the
 * distributed runs and the sharded indexes' jobs).
 *
 * `run` throws to fail: main.ts prints the message; a UsageError (src/cli/flags.ts) exits 2, any
 * other error 1 (with a stack trace unless it is the user's to fix: an InvalidArgumentError, a
 * FileError, a WebGpuUnavailableError). It returns what it did, as --json prints it (undefined
 * after --help, which prints the help and does nothing else); main.ts adds the command's name and
 * the seconds it took (src/cli/report.ts).
 */
import type { Summary } from './report.js';

export interface Command {
  /** `webgpu-knn NAME ...`. */
  name: string;
  /** Its entry in `webgpu-knn --help`, lines without their indentation. */
  summary: string;
  /** Its --help text (absent for bench, whose cases print their own). */
  usage?: string;
  /** False for a command that prints its own report or never finishes (bench, worker): --json is refused. */
  json?: boolean;
  run(argv: string[]): Promise<Summary | undefined>;
}
