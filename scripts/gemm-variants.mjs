// Times each gemm-scores variant on one score tile and prints GFLOP/s (2 nq n d flops per tile):
//   npm run -s build && node scripts/gemm-variants.mjs [NQ N D]   (default 1000 16384 128)
// A warm-up, then the median of three submits, each waited for. A quick look for choosing or
// tuning a variant; the device's own choice (src/gpu/kernel-choice.ts) measures a smaller tile.
import { GpuDevice } from '../dist/gpu/gpu-device.js';
import { encodeGemmScores, gemmVariants } from '../dist/gpu/kernels/gemm-scores.js';

const [nq, n, d] = process.argv.length > 2 ? process.argv.slice(2, 5).map(Number) : [1000, 16384, 128];
if (![nq, n, d].every((v) => Number.isInteger(v) && v >= 1)) {
  console.error(`usage: node scripts/gemm-variants.mjs [NQ N D] (positive integers); got ${process.argv.slice(2).join(' ')}`);
  process.exit(2);
}
// Forced, so that creating the device measures nothing.
const device = await GpuDevice.create({ gemmVariant: 'portable' });
if (!device) {
  console.error('no WebGPU adapter; run scripts/setup-webgpu.sh');
  process.exit(1);
}
try {
  console.log(device.description);
  const dpad = Math.ceil(d / 4) * 4;
  const buffer = (label, floats) => device.buffer(label, 4 * floats);
  const [xq, xb, xnorm, scores] = [buffer('xq', nq * dpad), buffer('xb', n * dpad), buffer('xnorm', n), buffer('scores', nq * n)].map((b) => b.gpu);
  const args = { metric: 'l2', xq, xb, xnorm, scores, q0: 0, rows: nq, col0: 0, cols: n, dpad, ldc: n };
  const { kernels } = device;
  for (const variant of gemmVariants(device.ctx)) {
    const run = async () => {
      const t0 = performance.now();
      encodeGemmScores(kernels, args, variant);
      await kernels.recorder.submit();
      return performance.now() - t0;
    };
    await run();
    const ms = [await run(), await run(), await run()].sort((a, b) => a - b)[1];
    console.log(`${variant.padEnd(9)} ${nq} x ${n} x ${d}: ${ms.toFixed(1)} ms, ${((2 * nq * n * d) / ms / 1e6).toFixed(2)} GFLOP/s`);
  }
} finally {
  device.dispose();
}
