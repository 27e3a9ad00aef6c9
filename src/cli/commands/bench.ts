/**
 * `webgpu-knn bench <case>`: the benchmarks of bench/, which parse their own flags and print their
 * own --help.
 */
import type { Command } from '../command.js';

interface BenchModule {
  benchMain(argv: string[]): Promise<void>;
  UsageError: new (message: string) => Error;
}

/** The bench cases are compiled beside the library (dist/bench); loaded only when asked for. */
async function loadBench(): Promise<BenchModule> {
  return (await import(new URL('../../bench/main.js', import.meta.url).href)) as BenchModule;
}

export const benchCommand: Command = {
  name: 'bench',
  summary: `benchmarks: compare, quantize, flat, kmeans, ivf, scheduler, dedup,
clustered-dedup, filters, remove
('webgpu-knn bench <case> --help')`,
  json: false,
  run: async (argv) => {
    await (await loadBench()).benchMain(argv);
    return undefined;
  },
};
