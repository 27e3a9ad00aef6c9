/**
 * Queries grouped by the lists they probe (the IVF GEMM strategy and IVF range search score each
 * list once against all the queries that probe it).
 */
import { PAD_ID } from '../../kernel-facts.js';

/**
 * A batch's (query, probe) pairs grouped by list, one row per pair: list after list, ascending, and
 * within a list the queries ascending (see groupProbes).
 */
export interface ProbeGroups {
  /** The lists probed, ascending. */
  order: number[];
  /** List l's pairs are rows first(l) .. first(l) + count(l) - 1. */
  first: Map<number, number>;
  count: Map<number, number>;
  npairs: number;
  /** The most pairs of one list (at least 1). */
  widest: number;
  /** `pairOf[q * nprobe + p]`: the row of query q's probe p, or -1 (a padding probe). */
  pairOf: Int32Array;
  /** `queryOf[t]`: the query of row t. */
  queryOf: Uint32Array;
  /** Row t's query (`npairs * d`). */
  grouped: Float32Array;
  /** `listOf[t]`: the list of row t. */
  listOf: Uint32Array;
}

/**
 * Groups the (query, probe) pairs of `rows` queries (`queries`, `rows * d`) whose probes are
 * `probes` (`rows * nprobe`, PAD_ID: none) by list, with a counting sort.
 */
export function groupProbes(probes: Uint32Array, rows: number, nprobe: number, queries: Float32Array, d: number): ProbeGroups {
  const count = new Map<number, number>();
  for (const l of probes) if (l !== PAD_ID) count.set(l, (count.get(l) ?? 0) + 1);
  const order = [...count.keys()].sort((a, b) => a - b);
  const first = new Map<number, number>();
  let npairs = 0;
  let widest = 1;
  for (const l of order) {
    first.set(l, npairs);
    npairs += count.get(l)!;
    widest = Math.max(widest, count.get(l)!);
  }
  const next = new Map(first);
  const pairOf = new Int32Array(rows * nprobe).fill(-1);
  const queryOf = new Uint32Array(npairs);
  const listOf = new Uint32Array(npairs);
  const grouped = new Float32Array(npairs * d);
  for (let q = 0; q < rows; q++) {
    for (let p = 0; p < nprobe; p++) {
      const l = probes[q * nprobe + p];
      if (l === PAD_ID) continue;
      const t = next.get(l)!;
      next.set(l, t + 1);
      pairOf[q * nprobe + p] = t;
      queryOf[t] = q;
      listOf[t] = l;
      grouped.set(queries.subarray(q * d, (q + 1) * d), t * d);
    }
  }
  return { order, first, count, npairs, widest, pairOf, queryOf, grouped, listOf };
}
