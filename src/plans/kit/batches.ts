/**
 * Searches in batches of queries that fit one binding: per-chunk masks on the device, the batch
 * loop with its scratch memory, the one readback of each batch's lists, and the final results.
 */
import type { Device, DeviceBuffer } from '../../device.js';
import { HEAP_MAX_K, type KernelMetric, PAD_ID } from '../../kernel-facts.js';
import { finalizeResults, sortLists } from '../../common/results.js';
import type { SlotResult, SearchTimings } from '../../types.js';
import { norms as hostNorms } from '../../cpu/norms.js';
import { type RunLists, Scratch } from './scratch.js';
import { uploadQueries } from './queries.js';

/**
 * Uploads per-chunk row masks (bit r of word r >> 5: whether the chunk's row r may be a result;
 * see src/indexes/ids.ts allowedRows) and runs `fn` with them (null without masks), then frees them.
 */
export async function withMasks<T>(device: Device, masks: Uint32Array[] | null, fn: (buffers: DeviceBuffer[] | null) => Promise<T>): Promise<T> {
  if (!masks) return fn(null);
  const buffers: DeviceBuffer[] = [];
  try {
    for (const m of masks) {
      const b = device.buffer('mask', m.byteLength);
      buffers.push(b);
      device.upload(b, 0, m);
    }
    return await fn(buffers);
  } finally {
    for (const b of buffers) device.release(b);
  }
}

/**
 * Reads the first `rows` lists of k entries back (one submit, one readback), best first: above
 * HEAP_MAX_K select-radix leaves them unsorted, and they are sorted here.
 */
export async function readLists(device: Device, lists: RunLists, rows: number, k: number, timings?: SearchTimings): Promise<HostLists> {
  const bytes = rows * k * 4;
  const [s, i] = await device.read([{ buffer: lists.s, offset: 0, bytes }, { buffer: lists.i, offset: 0, bytes }], timings);
  const out = { s: new Float32Array(s), i: new Uint32Array(i) };
  if (k > HEAP_MAX_K) sortLists(out.s, out.i, rows, k);
  return out;
}

/** Each query's k best (score, id), best first, on the host: row r at `r * k`. */
export interface HostLists {
  s: Float32Array;
  i: Uint32Array;
}

/**
 * Runs a search in batches of at most `batch` queries: for each, uploads its queries (padded to
 * `dpad`) into scratch memory and lets `run` produce the batch's lists (`rows * k`; it also gets the
 * batch's queries on the host); finally turns
 * the (score, id) lists into distances and labels. `batch` 0 means there is nothing to search (an
 * empty index): every row is padding.
 */
export async function searchInBatches(
  device: Device,
  xq: Float32Array,
  nq: number,
  d: number,
  dpad: number,
  k: number,
  batch: number,
  metric: KernelMetric,
  timings: SearchTimings | undefined,
  run: (scratch: Scratch, xq: DeviceBuffer, rows: number, hostQueries: Float32Array) => Promise<HostLists>,
): Promise<SlotResult> {
  const runS = new Float32Array(nq * k).fill(Infinity);
  const runI = new Uint32Array(nq * k).fill(PAD_ID);
  for (let b0 = 0; batch > 0 && b0 < nq; b0 += batch) {
    const rows = Math.min(batch, nq - b0);
    const scratch = new Scratch(device);
    try {
      const queries = xq.subarray(b0 * d, (b0 + rows) * d);
      const t0 = performance.now();
      const xqBuf = uploadQueries(scratch, queries, rows, d, dpad);
      if (timings) {
        // Timed on its own only when asked: waiting for the upload costs a round trip.
        await device.flush();
        timings.uploadMs += performance.now() - t0;
      }
      const out = await run(scratch, xqBuf, rows, queries);
      runS.set(out.s.subarray(0, rows * k), b0 * k);
      runI.set(out.i.subarray(0, rows * k), b0 * k);
    } catch (err) {
      device.discard();
      throw err;
    } finally {
      scratch.release();
    }
  }
  return finalizeResults(metric, runS, runI, nq, k, metric === 'l2' ? hostNorms(xq, nq, d) : null);
}
