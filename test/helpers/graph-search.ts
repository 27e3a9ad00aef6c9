/**
 * Graph-search cases (src/cpu/graph-search.ts, shaders/graph-search.wgsl): graphs built plainly,
 * arguments on host arrays, and a brute-force reference written without the twin's code.
 */
import type { KernelMetric } from '../../src/kernel-facts.js';
import { PAD_ID } from '../../src/kernel-facts.js';
import type { GraphSearchHost } from '../../src/cpu/graph-search.js';
import { norms } from '../../src/cpu/norms.js';
import { type Device, padRows, paddedDim } from '../../src/device.js';
import { halfRowsWithNorms } from '../../src/stores/half-rows.js';

/** Neighbour lists (any lengths) as rows of `degree` ids, padded with PAD_ID. */
export function graphRows(neighbours: number[][], degree: number): Uint32Array {
  const g = new Uint32Array(neighbours.length * degree).fill(PAD_ID);
  neighbours.forEach((list, v) => {
    if (list.length > degree) throw new Error(`node ${v} has ${list.length} neighbours, more than ${degree}`);
    list.forEach((u, t) => (g[v * degree + t] = u));
  });
  return g;
}

/** 0 - 1 - 2 - ... - (n - 1), from `first` (several paths side by side: disconnected components). */
export function pathNeighbours(n: number, first = 0): number[][] {
  return Array.from({ length: n }, (_, i) => [i - 1, i + 1].filter((u) => u >= 0 && u < n).map((u) => first + u));
}

/** A w x h grid, node x + w y linked to its four neighbours. */
export function gridNeighbours(w: number, h: number): number[][] {
  const out: number[][] = [];
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const list: number[] = [];
      if (x > 0) list.push(x - 1 + w * y);
      if (x < w - 1) list.push(x + 1 + w * y);
      if (y > 0) list.push(x + w * (y - 1));
      if (y < h - 1) list.push(x + w * (y + 1));
      out.push(list);
    }
  }
  return out;
}

/** Every node linked to every other. */
export function completeNeighbours(n: number): number[][] {
  return Array.from({ length: n }, (_, v) => Array.from({ length: n }, (_, u) => u).filter((u) => u !== v));
}

/**
 * `degree` random neighbours a node; some slots PAD_ID, some repeated or the node itself (the
 * search must skip them), the rest uniform.
 */
export function randomGraph(n: number, degree: number, r: () => number): Uint32Array {
  const g = new Uint32Array(n * degree);
  for (let v = 0; v < n; v++) {
    for (let t = 0; t < degree; t++) {
      const u = r();
      g[v * degree + t] = u < 0.05 ? PAD_ID : u < 0.08 ? v : u < 0.1 && t > 0 ? g[v * degree + t - 1] : Math.floor(r() * n);
    }
  }
  return g;
}

export interface GraphCaseInput {
  metric: KernelMetric;
  /** n rows of d floats. */
  x: Float32Array;
  /** nq rows of d floats. */
  xq: Float32Array;
  d: number;
  graph: Uint32Array;
  degree: number;
  /** Every query row's seeds, or (arrays, all one length) query row r's at [r]. */
  seeds: number[] | number[][];
  itopk: number;
  k: number;
  searchWidth?: number;
  maxIterations?: number;
  hashBits?: number;
  q0?: number;
  rows?: number;
  mask?: Uint32Array | null;
  maskBit0?: number;
  /** The rows as halves (halfRowsWithNorms: the words, and the norms of the decoded halves). */
  half?: boolean;
}

/**
 * A twin call: rows padded to dpad (with `half`, as half rows), norms computed, output arrays
 * poisoned (NaN, 0xdeadbeef).
 */
export function graphCase(c: GraphCaseInput): GraphSearchHost {
  const n = c.x.length / c.d;
  const nq = c.xq.length / c.d;
  const dpad = paddedDim(c.d);
  const q0 = c.q0 ?? 0;
  const rows = c.rows ?? nq - q0;
  const xb = padRows(c.x, n, c.d, dpad).slice();
  const halves = c.half ? halfRowsWithNorms(xb, n, dpad) : null;
  const perRow = (c.seeds as unknown[]).every((e) => Array.isArray(e));
  const rowSeeds = perRow ? (c.seeds as number[][]) : Array.from({ length: rows }, () => c.seeds as number[]);
  if (rowSeeds.length !== rows || rowSeeds.some((l) => l.length !== rowSeeds[0].length)) throw new Error('graphCase: one list of seeds, or one of equal length a row');
  return {
    metric: c.metric,
    xq: padRows(c.xq, nq, c.d, dpad).slice(),
    q0,
    rows,
    xb: halves ? halves.words : xb,
    xnorm: halves ? halves.norms : norms(c.x, n, c.d),
    half: !!halves,
    graph: c.graph,
    degree: c.degree,
    n,
    seeds: Uint32Array.from(rowSeeds.flat()),
    nseeds: rowSeeds[0]?.length ?? 0,
    mask: c.mask ?? null,
    maskBit0: c.maskBit0 ?? 0,
    dpad,
    itopk: c.itopk,
    searchWidth: c.searchWidth ?? 1,
    maxIterations: c.maxIterations ?? 1000,
    hashBits: c.hashBits ?? 10,
    k: c.k,
    outS: new Float32Array(rows * c.k).fill(NaN),
    outI: new Uint32Array(rows * c.k).fill(0xdeadbeef),
    outWork: new Uint32Array(2 * rows).fill(0xdeadbeef),
  };
}

/**
 * The k best (score, id) of the rows `candidate(v)` accepts, for each query row of a case, by
 * scoring them all and sorting: what a search that reaches every such row must return.
 */
export function bruteForce(a: GraphSearchHost, candidate: (v: number) => boolean = () => true): { s: number[]; i: number[] } {
  if (a.half) throw new Error('bruteForce reads float rows');
  const s: number[] = [];
  const i: number[] = [];
  for (let r = 0; r < a.rows; r++) {
    const found: [number, number][] = [];
    for (let v = 0; v < a.n; v++) {
      if (!candidate(v)) continue;
      let dot = 0;
      for (let j = 0; j < a.dpad; j++) dot += a.xq[(a.q0 + r) * a.dpad + j] * a.xb[v * a.dpad + j];
      found.push([Math.fround(a.metric === 'l2' ? a.xnorm[v] - 2 * dot : -dot), v]);
    }
    found.sort((p, q) => p[0] - q[0] || p[1] - q[1]);
    for (let j = 0; j < a.k; j++) {
      s.push(j < found.length ? found[j][0] : Infinity);
      i.push(j < found.length ? found[j][1] : PAD_ID);
    }
  }
  return { s, i };
}

/**
 * Runs a case through a device's dispatch (the registries' 'graph-search' entries: TWINS, ENCODERS)
 * and reads back (scores, ids, iterations).
 */
export async function searchOnDevice(device: Device, a: GraphSearchHost): Promise<{ s: Float32Array; i: Uint32Array; work: Uint32Array }> {
  const up = (label: string, data: Float32Array | Uint32Array) => {
    const b = device.buffer(label, Math.max(4, data.byteLength));
    device.upload(b, 0, data);
    return b;
  };
  const out = (label: string, words: number) => device.buffer(label, 4 * words);
  const call = {
    ...a, xq: up('xq', a.xq), xb: up('xb', a.xb), xbHi: a.xbHi ? up('xbHi', a.xbHi) : null, xnorm: up('xnorm', a.xnorm), graph: up('graph', a.graph), seeds: up('seeds', a.seeds),
    mask: a.mask && up('mask', a.mask), outS: out('outS', a.rows * a.k), outI: out('outI', a.rows * a.k), outWork: out('work', 2 * a.rows),
  };
  device.dispatch({ kernel: 'graph-search', ...call });
  const [s, i, work] = await device.read([
    { buffer: call.outS, offset: 0, bytes: 4 * a.rows * a.k },
    { buffer: call.outI, offset: 0, bytes: 4 * a.rows * a.k },
    { buffer: call.outWork, offset: 0, bytes: 8 * a.rows },
  ]);
  for (const b of [call.xq, call.xb, call.xbHi, call.xnorm, call.graph, call.seeds, call.mask, call.outS, call.outI, call.outWork]) if (b) device.release(b);
  return { s: new Float32Array(s), i: new Uint32Array(i), work: new Uint32Array(work) };
}
