/**
 * Loads WGSL kernels from `shaders/` (real .wgsl files, read once and cached; inlined in the builds:
 * src/platform/shader-files.ts) and specialises them. Only GPU code imports this module, so in the
 * browser build the shader texts sit in the WebGPU device's chunk, which a page on the CPU or gpu.js
 * backend never loads.
 *
 * Constants declared with `override` are passed as pipeline constants. A constant that sizes a
 * private array (such as topk's K_CAP) must be a WGSL `const`, so its declaration line
 * `const NAME: u32 = ...;` is rewritten in the text instead. Either way the file stays valid WGSL.
 */
import { shaderFile } from '../platform/shader-files.js';

const textCache = new Map<string, string>();

/**
 * Largest K_CAP whose k best are kept in a sorted list in registers (shaders/sorted-list.wgsl, which
 * writes out one step per position up to it) rather than a heap (shaders/heap.wgsl): see
 * sorted-list.wgsl for why and what it measured.
 */
export const LIST_MAX_CAP = 16;

/**
 * The text of shaders/NAME.wgsl, with each `//!include FILE.wgsl` line replaced by that file (WGSL
 * has no includes; this is how kernels share code such as heap.wgsl, kept in one place), or by
 * `swap[FILE]` where `swap` names another.
 */
export function shaderText(name: string, swap: Record<string, string> = {}): string {
  const key = [name, ...Object.entries(swap).map(([from, to]) => `${from}>${to}`)].join('|');
  let text = textCache.get(key);
  if (text === undefined) {
    text = shaderFile(name).replace(/^\/\/!include (\S+)\.wgsl$/gm, (_, inc: string) =>
      shaderText(swap[inc] ?? inc, swap),
    );
    textCache.set(key, text);
  }
  return text;
}

/**
 * Splits `constants` into those substituted into `const` declarations (returned in the text) and
 * those left as pipeline-overridable constants.
 */
export function specialize(
  name: string,
  constants: Record<string, number>,
): { code: string; overrides: Record<string, number> } {
  // A small K_CAP keeps the k best in a sorted list, a larger one in a heap (the same functions).
  const small = constants.K_CAP !== undefined && constants.K_CAP <= LIST_MAX_CAP;
  let code = shaderText(name, small ? { heap: 'sorted-list' } : {});
  const overrides: Record<string, number> = {};
  for (const [key, value] of Object.entries(constants)) {
    const decl = new RegExp(`^const ${key}: u32 = [^;]+;`, 'm');
    if (decl.test(code)) code = code.replace(decl, `const ${key}: u32 = ${value}u;`);
    else overrides[key] = value;
  }
  return { code, overrides };
}
