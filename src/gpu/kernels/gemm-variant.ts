/**
 * The gemm-scores variants (src/gpu/kernels/gemm-scores.ts) and the `gemmVariant` option; on its
 * own so that the Kernels context (kernels.ts), which carries the device's choice, and the kernel
 * file, which takes that context, need not import each other, and so that createBackend checks the
 * option without loading any GPU code (in the browser build, the WebGPU chunk).
 */
import { InvalidArgumentError } from '../../errors.js';

export type GemmVariant = 'subgroup' | 'portable' | 'tiled';

/** `auto` measures (or reads the cache); a variant's name forces it. */
export type GemmVariantOption = 'auto' | GemmVariant;

export const GEMM_VARIANT_OPTIONS: readonly GemmVariantOption[] = ['auto', 'subgroup', 'portable', 'tiled'];

/** Throws unless `v` is undefined or one of GEMM_VARIANT_OPTIONS. */
export function checkGemmVariantOption(v: unknown): void {
  if (v !== undefined && !GEMM_VARIANT_OPTIONS.includes(v as GemmVariantOption)) {
    throw new InvalidArgumentError(`gemmVariant must be ${GEMM_VARIANT_OPTIONS.slice(0, -1).join(', ')} or ${GEMM_VARIANT_OPTIONS.at(-1)}; got ${String(v)}`);
  }
}
