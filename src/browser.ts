/// <reference types="@webgpu/types" preserve="true" />
/**
 * The browser entry (`webgpu-knn/browser`, bundled into dist/browser/webgpu-knn.js by
 * scripts/build-browser.mjs): the core (backends, kernels, plans, indexes, the scheduler, jobs on
 * arrays), without files, the CLI or Dawn. src/index.ts, the Node entry, exports all of this and
 * the file I/O.
 */
export { Backend } from './backend/backend.js';
export type { BackendKind } from './backend/backend.js';
export type { Device, DeviceLimits, DeviceOptions, DeviceTuning } from './device.js';
export { checkTuning } from './device.js';
export type { KernelMetric } from './kernel-facts.js';
export type { BackendOptions } from './backend/create-backend.js';
export { createBackend, SETUP_HINT } from './backend/create-backend.js';
export { FlatIndex } from './indexes/flat/flat-index.js';
export type { FlatIndexOptions } from './indexes/flat/flat-index.js';
export type { Metric, SearchResult, SearchTimings } from './types.js';
export { METRICS, emptyTimings, normalizeRows } from './types.js';
export { clusteredFloats, randomFloats, randomSmallInts, rng } from './common/random.js';
export { KMeans } from './codecs/kmeans.js';
export type { KMeansInit, KMeansProgress, KMeansResult, KMeansTrainOptions } from './codecs/kmeans.js';
export { IvfFlatIndex } from './indexes/ivf/ivf-flat-index.js';
export type { IvfFlatIndexOptions } from './indexes/ivf/ivf-flat-index.js';
export { FACTORY_FORMS, describeIndexType, indexFactory, parseIndexType } from './indexes/factory.js';

export { BatchScheduler } from './jobs/scheduler.js';
export type { BatchSchedulerOptions, LatencySummary, SchedulerSearchOptions, SchedulerStats, SearchableIndex } from './jobs/scheduler.js';
export { arraySource } from './common/vector-source.js';
export type { RowProgress, VectorSource } from './common/vector-source.js';
export { dedup, groupPairs } from './jobs/dedup.js';
export type { DedupMetric, DedupOptions, DedupProgress, DedupResult } from './jobs/dedup.js';
export { clusteredDedup } from './jobs/clustered-dedup.js';
export type { ClusteredDedupOptions, ClusteredDedupResult } from './jobs/clustered-dedup.js';
export { knnGraph } from './jobs/knn-graph.js';
export type { KnnGraphOptions } from './jobs/knn-graph.js';
export type { CommonSearchParams, SearchParams, TrainOptions, VectorIndex } from './indexes/vector-index.js';
export type { IvfSearchParams } from './indexes/ivf/params.js';
export type { GraphSearchParams } from './indexes/graph/params.js';
export { GRAPH_DEFAULT_SEEDS, GRAPH_MAX_ENTRY_ROWS, GRAPH_MAX_ITOPK, GRAPH_MAX_SEEDS, GraphIndex, entryRowsFor } from './indexes/graph/graph-index.js';
export type { GraphBuildOptions, GraphIndexOptions } from './indexes/graph/graph-index.js';
export { GRAPH_EXACT_KNN_MAX_WORK, GRAPH_IVF_NPROBE, GRAPH_IVF_TARGET_RECALL } from './indexes/graph/intermediate.js';
export type { GraphBuildPhase, GraphBuildProgress, IntermediateGraph, IntermediateGraphInfo } from './indexes/graph/intermediate.js';
export { COMPACT_DEAD_FRACTION } from './indexes/ids.js';
export type { IdFilter, IdList } from './indexes/ids.js';
export type { RangeSearchResult } from './types.js';
export { POST_FILTER_MIN_SELECTIVITY } from './indexes/vector-index.js';
export { HEAP_MAX_K } from './kernel-facts.js';
export { SQ_KINDS, ScalarQuantizer } from './codecs/scalar-quantizer.js';
export { ProductQuantizer } from './codecs/product-quantizer.js';
export { CODEC_FORMS, Codec, codecName, parseCodec } from './codecs/codec.js';
export type { CodecSpec } from './codecs/codec.js';
export type { RefineKind } from './codecs/refine.js';
export type { SqKind } from './codecs/scalar-quantizer.js';
export { PCA_MAX_TRAIN_ROWS, TRANSFORM_FORMS, Transform, parseTransform, transformName } from './codecs/transforms.js';
export type { TransformKind, TransformSpec } from './codecs/transforms.js';
// .npy headers (Node-free): the demo page (demo/web) reads dropped files with it, as the CLI does.
export { readNpyHeader } from './io/npy.js';
export type { NpyDtype, NpyLayout } from './io/npy.js';
export type { BaseStore, BaseStoreOptions } from './contracts.js';
export { dedupMargin } from './common/threshold.js';
export { MAX_ID } from './types.js';
export type { CreateIndexOptions, IndexKindName, IndexType, LoadOptions } from './indexes/kind.js';
export { deserializeIndex } from './indexes/read-index.js';
export type { LoadedIndex } from './indexes/registry.js';
export type { MemoryBytes } from './indexes/memory.js';
export { postFilterK } from './indexes/index-core.js';
export { InvalidArgumentError, QueueFullError, SchedulerClosedError, TooManyCandidatesError, WebGpuUnavailableError } from './errors.js';
