/**
 * `webgpu-knn demo` (the default command): its flags; the demo itself is src/cli/demo.ts.
 */
import { parseArgs } from 'node:util';
import type { Command } from '../command.js';
import { runDemo } from '../demo.js';
import { intFlag, numberFlag } from '../flags.js';
import { type Summary, printHelp } from '../report.js';

const USAGE = `usage: webgpu-knn demo [--threshold T] [--k K]

The 778 real text embeddings (384-d) of npm @sap-ux/fiori-docs-embeddings: the near-duplicate
documents at cosine >= T (default 0.95) with their titles, the k (default 4) nearest documents to a
few of them, and the WebGPU and CPU timings side by side. Under a minute on 2 CPU cores. Without that
package (a devDependency: an installed webgpu-knn lacks it) the demo says so and runs on 778
generated 384-d vectors with planted near-duplicates instead.

options:
  --threshold T   cosine threshold (default 0.95)
  --k K           neighbours shown (default 4)
  -h, --help      this text`;

async function run(argv: string[]): Promise<Summary | undefined> {
  const { values } = parseArgs({
    args: argv,
    options: { threshold: { type: 'string' }, k: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) return void printHelp(USAGE);
  const threshold = numberFlag('threshold', values.threshold, -1, 1, 'a cosine', 0.95);
  const k = intFlag('k', values.k, 1, 100, 4);
  return runDemo(threshold, 3, k);
}

export const demoCommand: Command = {
  name: 'demo',
  summary: `(default) near-duplicates and nearest neighbours among 778 real text embeddings,
WebGPU and CPU timings side by side`,
  usage: USAGE,
  run,
};
