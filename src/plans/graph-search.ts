/**
 * Graph search (CAGRA, src/indexes/graph): for each batch of queries (each fits one binding), one
 * `graph-search` dispatch walks the graph from the seeds, a workgroup a query (shaders/graph-search.wgsl),
 * and leaves each query's k best (score, id) of its internal list; one readback a batch. The walk
 * reads the rows in one binding: the store's one chunk of float rows, or where the store needs more
 * chunks, a copy of the rows as halves (the walk only steers; the index re-scores its best exactly).
 * The CPU device runs the kernel's twin, step for step the same walk.
 */
import type { BaseStore } from '../contracts.js';
import type { Device, DeviceBuffer } from '../device.js';
import type { KernelMetric } from '../kernel-facts.js';
import type { SearchTimings, SlotResult } from '../types.js';
import { readLists, searchInBatches, withMasks } from './kit/batches.js';
import { queryBatch } from './kit/tiling.js';

/** A built graph on the device: `degree` neighbour ids a row of the store, and the walk's seeds. */
export interface DeviceGraph {
  graph: DeviceBuffer;
  degree: number;
  seeds: DeviceBuffer;
  nseeds: number;
  /**
   * The rows the walk reads where the store's are not one binding: the rows as halves
   * (src/stores/half-rows.ts) and the squared norms of the halves; null: the store's one chunk.
   */
  halfRows: { xb: DeviceBuffer; xnorm: DeviceBuffer } | null;
}

/** How the walk runs (see GraphSearchParams, src/indexes/graph/params.ts). */
export interface WalkOptions {
  itopk: number;
  searchWidth: number;
  maxIterations: number;
  /** Entry points: the first `seeds` of the graph's (all where it has fewer). */
  seeds: number;
  hashBits: number;
}

/**
 * The k best (by the walk) of `nq` queries (`xq`, `nq * d`) in `base`, walking `g`. `masks` (at
 * most one chunk: the store's) marks the rows that may be results; the walk passes through the
 * others. Results as searchFlat's: distances and labels (positions), best first, padded.
 */
export function searchGraph(
  device: Device,
  base: BaseStore,
  g: DeviceGraph,
  xq: Float32Array,
  nq: number,
  k: number,
  metric: KernelMetric,
  walk: WalkOptions,
  timings?: SearchTimings,
  masks: Uint32Array[] | null = null,
): Promise<SlotResult> {
  const walkRows = g.halfRows ?? base.chunks[0];
  const batch = base.ntotal > 0 ? queryBatch(device, nq, base.dpad, k) : 0;
  return withMasks(device, masks, (maskBufs) =>
    searchInBatches(device, xq, nq, base.d, base.dpad, k, batch, metric, timings, async (scratch, xqBuf, rows) => {
      const out = scratch.lists(rows * k);
      // With timings, the walk's work too: each query's iterations and ids scored.
      const work = timings ? scratch.buffer('graph-search work', 8 * rows) : null;
      device.dispatch({
        kernel: 'graph-search',
        metric,
        xq: xqBuf,
        q0: 0,
        rows,
        xb: walkRows.xb,
        xnorm: walkRows.xnorm,
        half: g.halfRows !== null,
        graph: g.graph,
        degree: g.degree,
        n: base.ntotal,
        seeds: g.seeds,
        nseeds: Math.min(g.nseeds, walk.seeds),
        mask: maskBufs?.[0] ?? null,
        maskBit0: 0,
        dpad: base.dpad,
        itopk: walk.itopk,
        searchWidth: walk.searchWidth,
        maxIterations: walk.maxIterations,
        hashBits: walk.hashBits,
        k,
        outS: out.s,
        outI: out.i,
        outWork: work,
      });
      if (!work) return readLists(device, out, rows, k);
      const bytes = 4 * rows * k;
      const [ls, li, w] = await device.read([{ buffer: out.s, offset: 0, bytes }, { buffer: out.i, offset: 0, bytes }, { buffer: work, offset: 0, bytes: 8 * rows }], timings);
      addWalkWork(timings!, new Uint32Array(w), rows);
      return { s: new Float32Array(ls), i: new Uint32Array(li) };
    }),
  );
}

/** Adds a batch's per-query (iterations, ids scored) to `timings.walk`. */
function addWalkWork(timings: SearchTimings, work: Uint32Array, rows: number): void {
  const walk = (timings.walk ??= { queries: 0, iterations: 0, distances: 0, maxIterations: 0 });
  walk.queries += rows;
  for (let r = 0; r < rows; r++) {
    walk.iterations += work[2 * r];
    walk.distances += work[2 * r + 1];
    walk.maxIterations = Math.max(walk.maxIterations, work[2 * r]);
  }
}
