export type { Backend, BackendKind, BackendOptions, BaseStore, KernelMetric } from './backend.js';
export { createBackend, SETUP_HINT } from './backend.js';
export { FlatIndex } from './flat-index.js';
export type { FlatIndexOptions, SearchOptions } from './flat-index.js';
export type { GpuBackendOptions } from './gpu/gpu-backend.js';
export type { Metric, SearchResult, SearchTimings } from './types.js';
export { InvalidArgumentError, METRICS, WebGpuUnavailableError, emptyTimings, normalizeRows } from './types.js';
