/** The CAGRA kind's own search parameters (cuVS's cagra::search_params), beside the common ones (src/indexes/vector-index.ts). */
export interface GraphSearchParams {
  /** CAGRA: the walk's internal list length (default the index's itopk, 64); at least k (with a filter or removals, the search's candidates: k and the re-score's margin). Ignored by other kinds. */
  itopk?: number;
  /** CAGRA: parents expanded per iteration (default 1). */
  searchWidth?: number;
  /** CAGRA: most iterations of the walk (default 0: as many as itopk / searchWidth + 32). */
  maxIterations?: number;
  /**
   * CAGRA: entry points the walk starts from (default GRAPH_DEFAULT_SEEDS, 16; at most
   * GRAPH_MAX_SEEDS, 256): the query's `seeds` nearest entry rows, found by scoring it against
   * `entryRows` of them (one GEMM a batch).
   */
  seeds?: number;
  /**
   * CAGRA: how many of the graph's entry rows (a seeded sample of its rows) a query is scored
   * against to pick its seeds (default entryRowsFor(n): 4 sqrt(n), at least 256, at most
   * GRAPH_MAX_ENTRY_ROWS, 4096, which the graph keeps). Raise it for rows in many tight clusters,
   * which a walk reaches best from a seed in the query's own (docs/graph-index.md).
   */
  entryRows?: number;
  /**
   * CAGRA: how to find the candidates (`timings.strategy` says which ran): `auto` (default) walks
   * the graph where a filter and the removals allow at least GRAPH_FILTER_MIN_SELECTIVITY of the
   * rows, else scans them exactly; `walk` walks wherever it can (itopk widened by the allowed
   * share, at most GRAPH_MAX_ITOPK); `scan` always runs the exact pre-filtered scan.
   */
  strategy?: 'auto' | 'walk' | 'scan';
}
