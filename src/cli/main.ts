#!/usr/bin/env node
/**
 * The command-line tool. Exit codes: 0 ok, 1 runtime failure, 2 usage error.
 */
import { parseArgs } from 'node:util';
import { createBackend } from '../backend.js';
import type { GpuBackend } from '../gpu/gpu-backend.js';
import { InvalidArgumentError, WebGpuUnavailableError } from '../types.js';

const USAGE = `usage: webgpu-knn <command> [options]

Exact (Flat) and IVF k-nearest-neighbour search and k-means with WebGPU compute shaders, and a CPU
twin of every kernel.

commands:
  demo     (default) build a flat index on generated data, search it on the WebGPU and the CPU
           backend, print recall and speed side by side
  info     the WebGPU adapter, its limits, and the backend 'auto' picks
  bench    benchmarks: flat, kmeans, ivf, scheduler ('webgpu-knn bench <case> --help')

'webgpu-knn <command> --help' describes each command.
No WebGPU adapter? scripts/setup-webgpu.sh installs a software one (Mesa lavapipe) on Debian/Ubuntu.`;

const DEMO_USAGE = `usage: webgpu-knn demo [options]

Builds a flat index on generated data (seeded), searches it on the WebGPU and the CPU backend and
prints recall against exact search and speed side by side. Takes about a minute on 2 CPU cores.

options:
  --n N        base vectors (default 50000)
  --d D        dimension (default 128)
  --nq NQ      queries (default 500)
  --k K        neighbours (default 10)
  --metric M   l2 | ip | cosine (default l2)
  -h, --help   this text`;

const INFO_USAGE = `usage: webgpu-knn info [--backend auto|webgpu|cpu]

Prints the backend in use and, for WebGPU, the adapter and the limits that matter here.`;

class UsageError extends Error {
  override name = 'UsageError';
}

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
    if (backend.kind === 'webgpu') {
      const ctx = (backend as unknown as GpuBackend).ctx;
      const l = ctx.limits;
      console.log(`software (CPU-emulated) adapter: ${ctx.adapterInfo.isFallbackAdapter}`);
      console.log(`maxStorageBufferBindingSize: ${l.maxStorageBufferBindingSize}`);
      console.log(`maxBufferSize: ${l.maxBufferSize}`);
      console.log(`maxComputeWorkgroupsPerDimension: ${l.maxComputeWorkgroupsPerDimension}`);
      console.log(`timestamp queries: ${ctx.hasTimestamps}; subgroups (>= 8 lanes): ${ctx.hasSubgroups8}`);
    }
  } finally {
    backend.dispose();
  }
}

async function demo(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      n: { type: 'string' },
      d: { type: 'string' },
      nq: { type: 'string' },
      k: { type: 'string' },
      metric: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return void console.log(DEMO_USAGE);
  const { benchMain } = await loadBench();
  const args = ['flat', '--n', values.n ?? '50000', '--d', values.d ?? '128', '--nq', values.nq ?? '500', '--k', values.k ?? '10'];
  if (values.metric) args.push('--metric', values.metric);
  args.push('--warmup', '1', '--repeats', '3');
  await benchMain(args);
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
      default:
        throw new UsageError(`unknown command '${command}'; expected demo, info or bench (see webgpu-knn --help)`);
    }
  } catch (err) {
    const e = err as Error;
    const usage = e instanceof UsageError || e.name === 'UsageError' || (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    process.stderr.write(`webgpu-knn ${command}: ${e.message}\n`);
    if (usage) return 2;
    if (!(e instanceof InvalidArgumentError || e instanceof WebGpuUnavailableError)) process.stderr.write(`${e.stack ?? ''}\n`);
    return 1;
  }
}

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
