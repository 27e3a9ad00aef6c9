/**
 * Facts the kernels and their CPU twins share, in one neutral module that imports nothing, so
 * that the CPU side, the GPU side and the contract (backend.ts) all depend on it and not on each
 * other. A constant that a WGSL file also declares must agree with it: test/kernels/kernel-facts.test.ts
 * reads the shaders and checks.
 */

/** What the kernels compute: `ip` minimises `-q.x`; cosine is `ip` on normalised vectors. */
export type KernelMetric = 'l2' | 'ip';

/** The id of an empty slot in a (score, id) list; reads as -1 through an Int32Array. WGSL: `PAD_ID`. */
export const PAD_ID = 0xffffffff;

/** Most partial lists one topk-merge dispatch merges per row. WGSL: `MAX_SEG` in topk-merge.wgsl. */
export const MERGE_ROUND = 32;
