/** The IVF kind's own search parameters (Faiss's SearchParametersIVF), beside the common ones (src/indexes/vector-index.ts). */
export interface IvfSearchParams {
  /** IVF: lists scanned per query (default: the index's nprobe), in [1, nlist]. Ignored by Flat. */
  nprobe?: number;
}
