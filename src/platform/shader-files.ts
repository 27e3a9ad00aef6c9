/**
 * shaders/*.wgsl by name (without .wgsl), for GPU code (src/gpu/shaders.ts imports it; nothing else
 * may, so that the texts stay in the WebGPU device's chunk of the browser build). Run from src/
 * (tests, a checkout) it reads the files, so an edited shader is picked up; the build replaces
 * it (scripts/build-browser.mjs): in the Node build dist/platform/shader-files.js holds the texts
 * inlined, so an app bundled with esbuild or packed into a single-file executable keeps WebGPU
 * without shipping shaders/; in the browser build a generated module holds them with their
 * comments stripped (scripts/wgsl-strip.mjs).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// src/platform/ is two levels below the package root, beside shaders/.
const SHADER_DIR = fileURLToPath(new URL('../../shaders/', import.meta.url));

/** The text of shaders/NAME.wgsl, as in the file. */
export function shaderFile(name: string): string {
  return readFileSync(`${SHADER_DIR}${name}.wgsl`, 'utf8');
}
