/**
 * The one timing procedure of `bench compare`, for every engine (scripts/faiss-peer.py runs its
 * passes the same way in Python): a pass searches the query set in batches of `batch` queries (the
 * last batch of a pass may be smaller), each batch timed on its own from the call to the returned
 * result; each configuration runs `warmup` untimed passes, then `repeats` timed ones.
 * queries/s = queries searched in timed passes / the sum of their batch times; latency percentiles
 * are over the timed batches.
 *
 * Several configurations are timed interleaved (`measureInterleaved`): round r runs pass r of every
 * configuration, each round starting one configuration later. This machine's speed drifts by a
 * quarter over minutes (a process's Flat search ran at 365 - 400 queries/s, then at 300 - 340, with
 * nothing changed): timed one after another, two configurations minutes apart differ by that much
 * for no reason of their own, while interleaved, a drift slows them alike. Each pass starts
 * SETTLE_MS after the one before, so that what a pass leaves running (V8's background compiles and
 * the like: 8 - 15 ms of CPU in the 50 ms after a WebGPU search) does not slow the next. On this
 * 2-core machine Faiss's 2-thread Flat batches of 5 ms (20,000 x 32, 100 queries), each pass right
 * after two WebGPU searches, took over 20 ms in 9 - 11 of 32 batches; with 100 ms between, in 2
 * (three runs each, after four rounds of warm-up). And each pass first searches one batch (its
 * last, so that no timed batch repeats it) untimed, so that an engine is timed warm again after the
 * others' passes: our WebGPU IVF's first batch of a pass, after streaming through 100 MB, had a
 * median of 25.9 - 27.2 ms without it and 20.1 - 23.9 with it, the other batches 16 - 20.
 *
 * Index size is measured the same way for every engine too: the bytes of its own serialised index
 * (`serializedBytes`).
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

/** One pass over the queries: each batch's milliseconds, and the labels (`nq * k`). */
export interface Pass {
  batchMs: number[];
  labels: Int32Array;
}

/** Runs one pass of a configuration; `warm`: first one untimed batch (see timePass). */
export type PassRunner = (warm: boolean) => Promise<Pass>;

/** The pause before each pass of measureInterleaved (see the file comment). */
export const SETTLE_MS = 100;

export interface Measured {
  /** Labels of the last timed pass, `nq * k`. */
  labels: Int32Array;
  /** Every timed batch, in milliseconds. */
  batchMs: number[];
  /** Seconds of each timed pass (the sum of its batches). */
  passSeconds: number[];
}

/**
 * One pass of `search` over the `nq` queries of `xq` in batches of `batch`; with `warm`, after one
 * untimed search of the last full batch (see the file comment; the last, so that the first timed
 * batch is not a repeat of it, unless there is one batch).
 */
export async function timePass(search: BatchSearch, xq: Float32Array, nq: number, d: number, k: number, batch: number, warm: boolean): Promise<Pass> {
  const labels = new Int32Array(nq * k);
  const batchMs: number[] = [];
  if (warm) {
    const nb = Math.min(batch, nq);
    await search(xq.subarray((nq - nb) * d, nq * d), nb);
  }
  for (let q0 = 0; q0 < nq; q0 += batch) {
    const nb = Math.min(batch, nq - q0);
    const t = performance.now();
    const got = await search(xq.subarray(q0 * d, (q0 + nb) * d), nb);
    batchMs.push(performance.now() - t);
    if (got.length !== nb * k) throw new Error(`a search of ${nb} queries returned ${got.length} labels; expected ${nb * k}`);
    labels.set(got, q0 * k);
  }
  return { batchMs, labels };
}

export interface InterleaveOptions extends Omit<MeasureOptions, 'batch'> {
  /** Pause before each pass (default SETTLE_MS). */
  settleMs?: number;
  /** Whether each pass begins with an untimed batch (default true; see timePass). */
  warmBatch?: boolean;
  /** Hears at once of a configuration whose pass threw (it is timed no further). */
  onError?: (i: number, err: Error) => void;
  /** Hears of each round as it ends. */
  onRound?: (round: number, rounds: number) => void;
}

/**
 * Times `runners` interleaved (see the file comment). A configuration whose pass throws is timed no
 * further: its entry is the error, and the others go on.
 */
export async function measureInterleaved(runners: PassRunner[], o: InterleaveOptions): Promise<(Measured | Error)[]> {
  const out: (Measured | Error)[] = runners.map(() => ({ labels: new Int32Array(0), batchMs: [], passSeconds: [] }));
  const rounds = o.warmup + o.repeats;
  for (let round = 0; round < rounds; round++) {
    for (let j = 0; j < runners.length; j++) {
      const i = (round + j) % runners.length;
      const m = out[i];
      if (m instanceof Error) continue;
      const settle = o.settleMs ?? SETTLE_MS;
      if (settle > 0) await new Promise((resolve) => setTimeout(resolve, settle));
      let pass: Pass;
      try {
        pass = await runners[i](o.warmBatch ?? true);
      } catch (err) {
        out[i] = err instanceof Error ? err : new Error(String(err));
        o.onError?.(i, out[i] as Error);
        continue;
      }
      if (round < o.warmup) continue;
      m.batchMs.push(...pass.batchMs);
      m.passSeconds.push(pass.batchMs.reduce((a, b) => a + b, 0) / 1000);
      m.labels = pass.labels;
    }
    o.onRound?.(round + 1, rounds);
  }
  return out;
}

/**
 * Times one configuration (`measureInterleaved` of one): passes back to back, no untimed batches
 * (nothing runs between its passes); throws what its pass throws.
 */
export async function measure(search: BatchSearch, xq: Float32Array, nq: number, d: number, k: number, o: MeasureOptions): Promise<Measured> {
  const [m] = await measureInterleaved([(warm) => timePass(search, xq, nq, d, k, o.batch, warm)], { ...o, settleMs: 0, warmBatch: false });
  if (m instanceof Error) throw m;
  return m;
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
