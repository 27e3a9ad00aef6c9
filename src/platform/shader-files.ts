/**
 * shaders/*.wgsl by name (without .wgsl), for the Node platform. Run from src/ (tests, a checkout)
 * it reads the files, so an edited shader is picked up; the build replaces its output,
 * dist/platform/shader-files.js, with a module that holds the texts inlined (scripts/build-browser.mjs),
 * so an app bundled with esbuild or packed into a single-file executable keeps WebGPU without
 * shipping shaders/.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// src/platform/ is two levels below the package root, beside shaders/.
const SHADER_DIR = fileURLToPath(new URL('../../shaders/', import.meta.url));

/** The text of shaders/NAME.wgsl, as in the file. */
export function shaderFile(name: string): string {
  return readFileSync(`${SHADER_DIR}${name}.wgsl`, 'utf8');
}
