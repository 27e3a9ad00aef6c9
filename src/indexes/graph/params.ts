/** The CAGRA kind's own search parameters (cuVS's cagra::search_params), beside the common ones (src/indexes/vector-index.ts). */
export interface GraphSearchParams {
  /** CAGRA: the walk's internal list length (default the index's itopk, 64); at least the search's candidates (k and the re-score's margin). Ignored by other kinds. */
  itopk?: number;
  /** CAGRA: parents expanded per iteration (default 1). */
  searchWidth?: number;
  /** CAGRA: most iterations of the walk (default 0: as many as itopk / searchWidth + 32). */
  maxIterations?: number;
}
