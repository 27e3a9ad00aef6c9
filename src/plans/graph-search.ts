/**
 * Graph search (CAGRA, src/indexes/graph): for each batch of queries (each fits one binding),
 *   entry points: gemm-scores and topk against the first `entryRows` of the graph's entry rows
 *                 (a sample of its rows), k = seeds -> each query's nearest, positions in the sample;
 *   gather-rows   -> their row ids, the query's seeds;
 *   graph-search  -> a walk of the graph from each query's seeds, a workgroup a query
 *                    (shaders/graph-search.wgsl): the k best (score, id) of its internal list;
 * one readback a batch. Seeds near the query are what lets a walk reach rows in many tight
 * clusters, which a graph of nearest neighbours links poorly to each other (docs/graph-index.md):
 * one GEMM over a few thousand rows, the work an HNSW's upper layers do. The walk
 * reads the store's one chunk of float rows, or where the store needs more chunks, a copy of the
 * rows as halves in one binding or two (the walk only steers; the index re-scores its best exactly).
 * The CPU device runs the kernel's twin, step for step the same walk.
 */
import type { BaseStore } from '../contracts.js';
import { type Device, type DeviceBuffer, graphSearchTeam } from '../device.js';
import type { KernelMetric } from '../kernel-facts.js';
import type { SearchTimings, SlotResult } from '../types.js';
import { readLists, searchInBatches, withMasks } from './kit/batches.js';
import { queryBatch } from './kit/tiling.js';
import { floatQueries } from './kit/queries.js';
import { flatLists } from './kit/score.js';
import type { Scratch } from './kit/scratch.js';

/** A built graph on the device: `degree` neighbour ids a row of the store, and its entry rows. */
export interface DeviceGraph {
  graph: DeviceBuffer;
  degree: number;
  /**
   * The entry rows, where walks start: a sample of the graph's rows as a store of their own (what
   * the queries are scored against), and the row id of each (u32, by position in the store).
   */
  entries: { rows: BaseStore; ids: DeviceBuffer };
  /**
   * The rows the walk reads where the store's are not one binding: the rows as halves
   * (src/stores/half-rows.ts) in one binding or, past what one holds, two (xbHi: the rows from
   * rowSplit on), and the squared norms of the halves; null: the store's one chunk.
   */
  halfRows: HalfRows | null;
}

/** A graph's rows as halves on the device (DeviceGraph.halfRows). */
export interface HalfRows {
  xb: DeviceBuffer;
  xbHi: DeviceBuffer | null;
  rowSplit: number;
  xnorm: DeviceBuffer;
}

/** How the walk runs (see GraphSearchParams, src/indexes/graph/params.ts). */
export interface WalkOptions {
  itopk: number;
  searchWidth: number;
  maxIterations: number;
  /** The entry rows a query is scored against: the first `entryRows` of the graph's (all where it has fewer). */
  entryRows: number;
  /** Entry points a walk starts from: the query's `seeds` nearest of those entry rows (all where there are fewer). */
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
  const entryRows = Math.min(walk.entryRows, g.entries.rows.ntotal);
  const nseeds = Math.min(walk.seeds, entryRows);
  // A query's words in the walk's one read_write binding: its seeds, its k scores and ids, its work.
  const batch = base.ntotal > 0 ? queryBatch(device, nq, base.dpad, nseeds + 2 * k + 2) : 0;
  return withMasks(device, masks, (maskBufs) =>
    searchInBatches(device, xq, nq, base.d, base.dpad, k, batch, metric, timings, async (scratch, xqBuf, rows) => {
      const near = nearestEntries(scratch, g.entries.rows, xqBuf, rows, entryRows, nseeds, metric);
      const seeds = scratch.buffer('graph-search seeds', 4 * rows * nseeds);
      device.dispatch({ kernel: 'gather-rows', x: g.entries.ids, rows: near, out: seeds, n: rows * nseeds, words: 1, rows0: 0, out0: 0 });
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
        xbHi: g.halfRows?.xbHi ?? null,
        rowSplit: g.halfRows?.rowSplit ?? 0,
        graph: g.graph,
        degree: g.degree,
        n: base.ntotal,
        seeds,
        nseeds,
        mask: maskBufs?.[0] ?? null,
        maskBit0: 0,
        dpad: base.dpad,
        itopk: walk.itopk,
        searchWidth: walk.searchWidth,
        team: graphSearchTeam(device.tuning.graphTeam, base.dpad, g.halfRows !== null),
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

/**
 * Records, for `rows` queries on the device (rows of `xq` from 0), the positions of each one's
 * `nseeds` nearest among the first `m` rows of `entries` (row r at r * nseeds; unsorted for
 * nseeds > HEAP_MAX_K: the walk reads them as a set): a flat search of the entry rows (which may
 * span chunks).
 */
function nearestEntries(scratch: Scratch, entries: BaseStore, xq: DeviceBuffer, rows: number, m: number, nseeds: number, metric: KernelMetric): DeviceBuffer {
  return flatLists(scratch, entries, floatQueries(xq), 0, rows, nseeds, metric, null, m).i;
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
