/**
 * `webgpu-knn info`: the backend in use and, for WebGPU, the adapter and its limits.
 */
import { parseArgs } from 'node:util';
import { createBackend } from '../../backend/create-backend.js';
import type { GpuDevice } from '../../gpu/gpu-device.js';
import { describeGemmChoice } from '../../gpu/kernel-choice.js';
import type { Command } from '../command.js';
import { UsageError } from '../../errors.js';
import { type Summary, printHelp } from '../report.js';

const USAGE = `usage: webgpu-knn info [--backend auto|webgpu|cpu]

Prints the backend in use and, for WebGPU, the adapter, the limits that matter here, and the
gemm-scores variant measured for the adapter (cached; see README, "Scoring kernels"). With --json
(see 'webgpu-knn --help') the same facts are one JSON object on stdout.`;

async function run(argv: string[]): Promise<Summary | undefined> {
  const { values } = parseArgs({ args: argv, options: { backend: { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
  if (values.help) return void printHelp(USAGE);
  const choice = values.backend ?? 'auto';
  if (!['auto', 'webgpu', 'cpu'].includes(choice)) throw new UsageError(`--backend must be auto, webgpu or cpu; got ${choice}`);
  const backend = await createBackend({ backend: choice as 'auto' | 'webgpu' | 'cpu' });
  try {
    const facts: Summary = { backend: backend.description, kind: backend.kind, maxK: backend.maxK, maxBindingBytes: backend.maxBindingBytes };
    console.log(`backend: ${backend.description}`);
    console.log(`max k: ${backend.maxK}`);
    console.log(`max binding bytes: ${backend.maxBindingBytes}`);
    if (backend.kind === 'webgpu') {
      const { ctx, gemm } = backend.device as GpuDevice;
      const l = ctx.limits;
      Object.assign(facts, {
        softwareAdapter: ctx.adapterInfo.isFallbackAdapter,
        maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
        maxBufferSize: l.maxBufferSize,
        maxComputeWorkgroupsPerDimension: l.maxComputeWorkgroupsPerDimension,
        timestampQueries: ctx.hasTimestamps,
        subgroups8: ctx.hasSubgroups8,
        gemmScores: describeGemmChoice(gemm),
      });
      console.log(`software (CPU-emulated) adapter: ${ctx.adapterInfo.isFallbackAdapter}`);
      console.log(`maxStorageBufferBindingSize: ${l.maxStorageBufferBindingSize}`);
      console.log(`maxBufferSize: ${l.maxBufferSize}`);
      console.log(`maxComputeWorkgroupsPerDimension: ${l.maxComputeWorkgroupsPerDimension}`);
      console.log(`timestamp queries: ${ctx.hasTimestamps}; subgroups (>= 8 lanes): ${ctx.hasSubgroups8}`);
      console.log(`gemm-scores variant: ${describeGemmChoice(gemm)}`);
    }
    return facts;
  } finally {
    backend.dispose();
  }
}

export const infoCommand: Command = {
  name: 'info',
  summary: "the WebGPU adapter, its limits, and the backend 'auto' picks",
  usage: USAGE,
  run,
};
