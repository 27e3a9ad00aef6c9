/**
 * The gemm-scores variants (src/gpu/kernels/gemm-scores.ts); on its own so that the Kernels context
 * (kernels.ts), which carries the device's choice, and the kernel file, which takes that context,
 * need not import each other.
 */
export type GemmVariant = 'subgroup' | 'portable' | 'tiled';
