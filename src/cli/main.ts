#!/usr/bin/env node
/**
 * The command-line tool. Exit codes: 0 ok, 1 runtime failure, 2 usage error.
 */
import { parseArgs } from 'node:util';
import { createBackend } from '../backend/create-backend.js';
import type { GpuDevice } from '../gpu/gpu-device.js';
import { describeGemmChoice } from '../gpu/kernel-choice.js';
import { FileError } from '../io/file-error.js';
import { InvalidArgumentError, WebGpuUnavailableError } from '../types.js';
import { build, dedupCommand, knnGraphCommand, rangeSearchCommand, remove, search, workerCommand } from './commands.js';
import { UsageError, intFlag, numberFlag } from './flags.js';
import { runDemo } from './demo.js';
import { removeTempsOnSignals } from '../io/temp-files.js';

const USAGE = `usage: webgpu-knn <command> [options]

Exact (Flat) and IVF k-nearest-neighbour search, near-duplicate detection and kNN graphs with
WebGPU compute shaders, and a CPU twin of every kernel.

commands:
  demo         (default) near-duplicates and nearest neighbours among 778 real text embeddings,
               WebGPU and CPU timings side by side
  build        vectors (and optionally their ids) -> index file (Flat or IVF<nlist>,Flat)
  search       index file + queries -> neighbours file (optionally only among allowed ids)
  remove       deletes vectors by id from an index file
  range-search index file + queries + radius -> every neighbour within the radius
  dedup        every near-duplicate pair in a vector file (cosine or squared L2 threshold)
  worker       takes 'dedup --distributed' and sharded search / knn-graph jobs from Redis (BullMQ)
               until SIGTERM
  knn-graph    every vector's k nearest others (or every query's), streamed to a file
  info         the WebGPU adapter, its limits, and the backend 'auto' picks
  bench        benchmarks: compare, quantize, flat, kmeans, ivf, scheduler, dedup,
               clustered-dedup
               ('webgpu-knn bench <case> --help')

'webgpu-knn <command> --help' describes each command. Exit codes: 0 ok, 1 failure (a missing,
unreadable or malformed file, a full disk), 2 usage error (a bad flag, an output that is an input),
130 / 143 interrupted (SIGINT / SIGTERM; temporary files are removed).
No WebGPU adapter? scripts/setup-webgpu.sh installs a software one (Mesa lavapipe) on Debian/Ubuntu.`;

const DEMO_USAGE = `usage: webgpu-knn demo [--threshold T] [--k K]

The 778 real text embeddings (384-d) of npm @sap-ux/fiori-docs-embeddings: the near-duplicate
documents at cosine >= T (default 0.95) with their titles, the k (default 4) nearest documents to a
few of them, and the WebGPU and CPU timings side by side. Under a minute on 2 CPU cores.

options:
  --threshold T   cosine threshold (default 0.95)
  --k K           neighbours shown (default 4)
  -h, --help      this text`;

const INFO_USAGE = `usage: webgpu-knn info [--backend auto|webgpu|cpu]

Prints the backend in use and, for WebGPU, the adapter, the limits that matter here, and the
gemm-scores variant measured for the adapter (cached; see README, "Scoring kernels").`;

interface BenchModule {
  benchMain(argv: string[]): Promise<void>;
  UsageError: new (message: string) => Error;
}

/** The bench cases are compiled beside the library (dist/bench); loaded only when asked for. */
async function loadBench(): Promise<BenchModule> {
  return (await import(new URL('../bench/main.js', import.meta.url).href)) as BenchModule;
}

async function info(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { backend: { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
  if (values.help) return void console.log(INFO_USAGE);
  const choice = values.backend ?? 'auto';
  if (!['auto', 'webgpu', 'cpu'].includes(choice)) throw new UsageError(`--backend must be auto, webgpu or cpu; got ${choice}`);
  const backend = await createBackend({ backend: choice as 'auto' | 'webgpu' | 'cpu' });
  try {
    console.log(`backend: ${backend.description}`);
    console.log(`max k: ${backend.maxK}`);
    console.log(`max binding bytes: ${backend.maxBindingBytes}`);
    if (backend.kind === 'webgpu') {
      const { ctx, gemm } = backend.device as GpuDevice;
      const l = ctx.limits;
      console.log(`software (CPU-emulated) adapter: ${ctx.adapterInfo.isFallbackAdapter}`);
      console.log(`maxStorageBufferBindingSize: ${l.maxStorageBufferBindingSize}`);
      console.log(`maxBufferSize: ${l.maxBufferSize}`);
      console.log(`maxComputeWorkgroupsPerDimension: ${l.maxComputeWorkgroupsPerDimension}`);
      console.log(`timestamp queries: ${ctx.hasTimestamps}; subgroups (>= 8 lanes): ${ctx.hasSubgroups8}`);
      console.log(`gemm-scores variant: ${describeGemmChoice(gemm)}`);
    }
  } finally {
    backend.dispose();
  }
}

async function demo(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { threshold: { type: 'string' }, k: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) return void console.log(DEMO_USAGE);
  const threshold = numberFlag('threshold', values.threshold, -1, 1, 'a cosine', 0.95);
  const k = intFlag('k', values.k, 1, 100, 4);
  await runDemo(threshold, 3, k);
}

export async function main(argv: string[]): Promise<number> {
  const [command = 'demo', ...rest] = argv;
  try {
    switch (command) {
      case '-h':
      case '--help':
      case 'help':
        console.log(USAGE);
        return 0;
      case 'demo':
        await demo(rest);
        return 0;
      case 'info':
        await info(rest);
        return 0;
      case 'bench':
        await (await loadBench()).benchMain(rest);
        return 0;
      case 'build':
        await build(rest);
        return 0;
      case 'search':
        await search(rest);
        return 0;
      case 'remove':
        await remove(rest);
        return 0;
      case 'range-search':
        await rangeSearchCommand(rest);
        return 0;
      case 'worker':
        await workerCommand(rest);
        return 0;
      case 'dedup':
        await dedupCommand(rest);
        return 0;
      case 'knn-graph':
        await knnGraphCommand(rest);
        return 0;
      default:
        throw new UsageError(`unknown command '${command}'; expected demo, build, search, remove, range-search, dedup, knn-graph, info or bench (see webgpu-knn --help)`);
    }
  } catch (err) {
    const e = err as Error;
    const usage = e instanceof UsageError || e.name === 'UsageError' || (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    process.stderr.write(`webgpu-knn ${command}: ${e.message}\n`);
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
