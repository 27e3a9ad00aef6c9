/**
 * Loads WGSL kernels from `shaders/` (real .wgsl files, read once and cached; inlined in the browser
 * build: src/platform/) and specialises them.
 *
 * Constants declared with `override` are passed as pipeline constants. A constant that sizes a
 * private array (such as topk's K_CAP) must be a WGSL `const`, so its declaration line
 * `const NAME: u32 = ...;` is rewritten in the text instead. Either way the file stays valid WGSL.
 */
import { platform } from '../platform/platform.js';

const textCache = new Map<string, string>();

/**
 * The text of shaders/NAME.wgsl, with each `//!include FILE.wgsl` line replaced by that file (WGSL
 * has no includes; this is how kernels share code such as heap.wgsl, kept in one place).
 */
export function shaderText(name: string): string {
  let text = textCache.get(name);
  if (text === undefined) {
    text = platform.shaderSource(name).replace(/^\/\/!include (\S+)\.wgsl$/gm, (_, inc: string) =>
      shaderText(inc),
    );
    textCache.set(name, text);
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
  let code = shaderText(name);
  const overrides: Record<string, number> = {};
  for (const [key, value] of Object.entries(constants)) {
    const decl = new RegExp(`^const ${key}: u32 = [^;]+;`, 'm');
    if (decl.test(code)) code = code.replace(decl, `const ${key}: u32 = ${value}u;`);
    else overrides[key] = value;
  }
  return { code, overrides };
}
