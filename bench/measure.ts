/**
 * The one timing procedure of `bench compare`, for every engine (scripts/faiss-peer.py follows the
 * same steps in Python): `warmup` untimed passes, then `repeats` timed passes over the query set in
 * batches of `batch` queries (the last batch of a pass may be smaller), each batch timed on its own
 * from the call to the returned result. queries/s = queries searched in timed passes / the sum of
 * their batch times; latency percentiles are over the timed batches. Index size is measured the
 * same way for every engine too: the bytes of its own serialised index (`serializedBytes`).
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface MeasureOptions {
  batch: number;
  warmup: number;
  repeats: number;
}

/**
 * Searches `nb` queries (`xq` holds `nb * d` floats) and returns `nb * k` labels, -1 padded (ids:
 * webgpu-knn's are float64, the peers' int32; the benchmarks' ids all fit int32).
 */
export type BatchSearch = (xq: Float32Array, nb: number) => Int32Array | Float64Array | Promise<Int32Array | Float64Array>;

export interface Measured {
  /** Labels of the last timed pass, `nq * k`. */
  labels: Int32Array;
  /** Every timed batch, in milliseconds. */
  batchMs: number[];
  /** Seconds of each timed pass (the sum of its batches). */
  passSeconds: number[];
}

export async function measure(search: BatchSearch, xq: Float32Array, nq: number, d: number, k: number, o: MeasureOptions): Promise<Measured> {
  const labels = new Int32Array(nq * k);
  const batchMs: number[] = [];
  const passSeconds: number[] = [];
  for (let pass = 0; pass < o.warmup + o.repeats; pass++) {
    let passMs = 0;
    for (let q0 = 0; q0 < nq; q0 += o.batch) {
      const nb = Math.min(o.batch, nq - q0);
      const t = performance.now();
      const got = await search(xq.subarray(q0 * d, (q0 + nb) * d), nb);
      const ms = performance.now() - t;
      if (got.length !== nb * k) throw new Error(`a search of ${nb} queries returned ${got.length} labels; expected ${nb * k}`);
      if (pass >= o.warmup) {
        batchMs.push(ms);
        passMs += ms;
        labels.set(got, q0 * k);
      }
    }
    if (pass >= o.warmup) passSeconds.push(passMs / 1000);
  }
  return { labels, batchMs, passSeconds };
}

/** Nearest-rank percentile: the smallest value with at least p% of the values at or below it. */
export function percentile(values: number[], p: number): number {
  if (!values.length) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length, Math.max(1, Math.ceil((p / 100) * s.length))) - 1];
}

/** Runs `fn` in a fresh temporary folder, which is removed afterwards whatever happens. */
export async function inScratchDir<T>(fn: (dir: string) => T | Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'webgpu-knn-bench-'));
  try {
    return await fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Bytes of the file that `write(path)` writes: an index as its engine serialises it. */
export function serializedBytes(write: (path: string) => unknown): Promise<number> {
  return inScratchDir(async (dir) => {
    const path = join(dir, 'index');
    await write(path);
    return statSync(path).size;
  });
}
