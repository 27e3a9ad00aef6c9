import { afterAll, describe, expect, it } from 'vitest';
import type { KernelMetric } from '../../src/kernel-facts.js';
import { ivfScan } from '../../src/cpu/ivf-scan.js';
import { PAD_ID } from '../../src/kernel-facts.js';
import { paddedDim } from '../../src/gpu/gpu-backend.js';
import { encodeIvfScan } from '../../src/gpu/kernels/ivf-scan.js';
import { IvfLists } from '../../src/ivf-lists.js';
import { randomFloats, randomSmallInts, rng } from '../../src/random.js';
import { disposeGpuBackends, gpuBackend } from '../helpers/gpu.js';
import { KernelHarness, POISON } from './harness.js';

const gpu = await gpuBackend();
afterAll(disposeGpuBackends);

// [n, d, nlist, nq, nprobe, nseg, k]: k larger than lists (padding), empty lists, odd d, segments.
const shapes: number[][] = [
  [1, 1, 1, 1, 1, 1, 1],
  [200, 5, 7, 4, 3, 2, 10],
  [1000, 16, 40, 9, 40, 1, 5],
  [600, 9, 100, 3, 7, 3, 64],
];

describe.skipIf(!gpu)('gpu ivf-scan vs cpu twin', () => {
  for (const [n, d, nlist, nq, nprobe, nseg, k] of shapes) {
    for (const metric of ['l2', 'ip'] as KernelMetric[]) {
      for (const kind of ['int', 'float'] as const) {
        it(`n=${n} d=${d} nlist=${nlist} nprobe=${nprobe} nseg=${nseg} k=${k} ${metric} ${kind}`, async () => {
          const h = new KernelHarness(gpu!);
          const gen = kind === 'int' ? randomSmallInts : randomFloats;
          const x = gen(n * d, n);
          const xq = gen(nq * d, nq);
          const r = rng(nlist);
          // Lists skewed towards low numbers, so that some lists are empty.
          const listOf = Uint32Array.from({ length: n }, () => Math.floor(r() ** 2 * nlist));
          const lists = new IvfLists(d, nlist);
          lists.add(x, n, listOf, 100);
          const dpad = paddedDim(d);
          const dev = lists.csr(dpad);
          const host = lists.csr(d);
          const probes = Uint32Array.from({ length: nq * nprobe }, (_, i) => (i % 5 === 4 && nprobe > 1 ? PAD_ID : Math.floor(r() * nlist)));
          const qpad = new Float32Array(nq * dpad);
          for (let i = 0; i < nq; i++) qpad.set(xq.subarray(i * d, (i + 1) * d), i * dpad);
          const len = nq * nprobe * nseg * k;
          const outS = h.output(len, POISON);
          const outI = h.output(len, POISON);
          // Rows 1.. of the queries and probes, to exercise q0 and row0.
          const rows = Math.max(1, nq - 1);
          const q0 = nq - rows;
          encodeIvfScan(h.kernels, {
            metric, xq: h.upload(qpad), probes: h.upload(probes), offsets: h.upload(dev.offsets), xb: h.upload(dev.xb),
            xnorm: h.upload(dev.xnorm), ids: h.upload(dev.ids), outS, outI, rows, k, nprobe, nseg, dpad, q0, row0: q0,
          });
          await h.run();
          const wS = new Float32Array(rows * nprobe * nseg * k);
          const wI = new Uint32Array(rows * nprobe * nseg * k);
          ivfScan(metric, xq, q0, rows, probes, q0, nprobe, nseg, host.offsets, host.xb, host.xnorm, host.ids, d, k, wS, wI);
          const gS = await h.readF32(outS, wS.length);
          const gI = await h.readU32(outI, wI.length);
          if (kind === 'int') {
            expect(Array.from(gI)).toEqual(Array.from(wI));
            expect(Array.from(gS)).toEqual(Array.from(wS));
          } else {
            for (let i = 0; i < wS.length; i++) {
              if (wI[i] === PAD_ID) expect(gI[i]).toBe(PAD_ID);
              else expect(Math.abs(gS[i] - wS[i]), `entry ${i}`).toBeLessThanOrEqual(1e-5 * (2 + d));
            }
          }
          h.dispose();
        });
      }
    }
  }
});
