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

/**
 * Largest k the private-heap kernels hold (topk.wgsl, ivf-scan.wgsl: a heap of K_CAP, the next
 * power of two >= k, per invocation; up to K_CAP 16 a sorted list in registers instead).
 */
export const TOPK_MAX_K = 1024;

/**
 * Largest k a scan selects with the private heaps (topk, then topk-merge); above it, select-radix
 * selects each row of a score tile in one workgroup. The same on every device, so the CPU runs the
 * plan the GPU runs. Measured on lavapipe (scratch script: 1000 x 16384 L2 score tiles of clustered
 * data, the first tile and then 3 to 5 with running lists, min of 3): the heaps were faster at every
 * k from 64 to 1024 (all tiles: select-radix 2.6x slower at k = 64, 1.6x at 256, 1.3x at 512,
 * 1.1-1.9x at 1024), so they serve as far as they go (TOPK_MAX_K). A real GPU, where a heap of
 * hundreds of entries spills out of registers, may want less: measure there.
 */
export const HEAP_MAX_K = TOPK_MAX_K;

/**
 * Longest kNN row cagra-prune takes (its workgroup holds the row, a hash of it and its detour
 * counts: KIN_CAP, the next power of two >= kin, at most this), and the largest degree cagra-merge
 * takes (DEG_CAP). A plan checks them on every device, so the CPU refuses what the GPU would.
 */
export const CAGRA_MAX_KIN = 256;
export const CAGRA_MAX_DEGREE = 256;
