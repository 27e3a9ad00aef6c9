/**
 * Benchmark entry: `npm run bench -- <case> [options]` or `webgpu-knn bench <case> [options]`.
 * Cases: flat. Never run by the test runner.
 */
import { parseArgs } from 'node:util';
import type { Metric } from 'webgpu-knn';
import { runFlatBench } from './flat.js';

export const BENCH_USAGE = `usage: webgpu-knn bench flat [options]

Flat (exact) search on generated data, WebGPU and CPU backends in one run.

options:
  --n N            base vectors (default 100000)
  --d D            dimension (default 128)
  --nq NQ          queries (default 1000)
  --k K[,K...]     neighbours; a list runs one configuration each (default 10)
  --metric M       l2 | ip | cosine (default l2)
  --backend B      both | webgpu | cpu (default both)
  --warmup W       untimed runs first (default 1)
  --repeats R      timed runs (default 3)
  --seed S         data seed (default 1)
  --recall-queries Q  queries scored against exact search (default 100)
  -h, --help       this text

Prints one JSON line per configuration, then a table. Progress goes to stderr.`;

function positiveInt(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const v = Number(value);
  if (!Number.isInteger(v) || v < 1) throw new UsageError(`--${name} must be a positive integer; got ${value}`);
  return v;
}

export class UsageError extends Error {
  override name = 'UsageError';
}

export async function benchMain(argv: string[]): Promise<void> {
  const [kase, ...rest] = argv;
  if (kase === undefined || kase === '-h' || kase === '--help') {
    console.log(BENCH_USAGE);
    if (kase === undefined) throw new UsageError('missing bench case (flat)');
    return;
  }
  if (kase !== 'flat') throw new UsageError(`unknown bench case ${kase}; expected: flat`);
  const { values } = parseArgs({
    args: rest,
    options: {
      n: { type: 'string' },
      d: { type: 'string' },
      nq: { type: 'string' },
      k: { type: 'string' },
      metric: { type: 'string' },
      backend: { type: 'string' },
      warmup: { type: 'string' },
      repeats: { type: 'string' },
      seed: { type: 'string' },
      'recall-queries': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(BENCH_USAGE);
    return;
  }
  const metric = (values.metric ?? 'l2') as Metric;
  if (!['l2', 'ip', 'cosine'].includes(metric)) throw new UsageError(`--metric must be l2, ip or cosine; got ${metric}`);
  const backend = values.backend ?? 'both';
  if (!['both', 'webgpu', 'cpu'].includes(backend)) throw new UsageError(`--backend must be both, webgpu or cpu; got ${backend}`);
  const ks = (values.k ?? '10').split(',').map((k) => positiveInt('k', k.trim(), 10));
  await runFlatBench({
    n: positiveInt('n', values.n, 100_000),
    d: positiveInt('d', values.d, 128),
    nq: positiveInt('nq', values.nq, 1000),
    ks,
    metric,
    backends: backend === 'both' ? ['webgpu', 'cpu'] : [backend as 'webgpu' | 'cpu'],
    warmup: values.warmup === '0' ? 0 : positiveInt('warmup', values.warmup, 1),
    repeats: positiveInt('repeats', values.repeats, 3),
    seed: positiveInt('seed', values.seed, 1),
    recallQueries: positiveInt('recall-queries', values['recall-queries'], 100),
    log: (line) => process.stderr.write(`[bench] ${line}\n`),
  });
}

// Run directly (npm run bench): the CLI imports benchMain instead.
if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  benchMain(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`webgpu-knn bench: ${(err as Error).message}\n`);
    process.exitCode = err instanceof UsageError ? 2 : 1;
  });
}
