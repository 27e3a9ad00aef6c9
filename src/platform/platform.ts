/**
 * The Node platform (see types.ts): shaders from shader-files.ts (inlined in the build), WebGPU from Dawn (npm
 * `webgpu`), kernel choices in a cache file, diagnostics on stderr. The browser build replaces this
 * module with browser.ts.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { shaderFile } from './shader-files.js';
import type { ChoiceStore, Platform } from './types.js';

const DAWN_BACKEND: Record<string, string> = { linux: 'vulkan', darwin: 'metal', win32: 'd3d12' };

/** The kernel-choice cache file's name in its directory. */
export const CHOICE_FILE = 'gemm-variant.json';

/**
 * The directory of the kernel-choice cache file: `$WEBGPU_KNN_CACHE_DIR`, else
 * `$XDG_CACHE_HOME/webgpu-knn`, else `~/.cache/webgpu-knn`.
 */
export function gemmCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.WEBGPU_KNN_CACHE_DIR) return env.WEBGPU_KNN_CACHE_DIR;
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'webgpu-knn');
}

/**
 * The cache file in `dir`, written to a temporary name and renamed, so a reader never sees half of
 * it; a directory that cannot be written is not an error (write returns why).
 */
function fileStore(dir: string): ChoiceStore {
  const file = join(dir, CHOICE_FILE);
  return {
    where: file,
    read: () => readFile(file, 'utf8').catch(() => null),
    async write(text) {
      const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
      try {
        await mkdir(dir, { recursive: true });
        await writeFile(tmp, text);
        await rename(tmp, file);
        return undefined;
      } catch (err) {
        await rm(tmp, { force: true }).catch(() => {});
        return (err as Error).message;
      }
    },
  };
}

export const platform: Platform = {
  name: 'node',
  shaderSource: shaderFile,
  async requestGpu(flags) {
    // Dawn's Vulkan loader wants a runtime directory; without one it prints warnings.
    if (!process.env.XDG_RUNTIME_DIR) process.env.XDG_RUNTIME_DIR = '/tmp';
    const webgpu = await import('webgpu');
    // The GPUBufferUsage / GPUMapMode / GPUShaderStage enums live on globalThis in browsers.
    if (typeof (globalThis as { GPUBufferUsage?: unknown }).GPUBufferUsage === 'undefined') {
      Object.assign(globalThis, webgpu.globals);
    }
    return { gpu: webgpu.create(flags), backend: DAWN_BACKEND[process.platform] ?? 'unknown', polled: true };
  },
  choiceStore: (dir = gemmCacheDir()) => fileStore(dir),
  warn: (line) => void process.stderr.write(`${line}\n`),
  yieldToEvents: () => new Promise((r) => setImmediate(r)),
  setupHint:
    'run scripts/setup-webgpu.sh (on Debian/Ubuntu as root it installs the Vulkan loader and Mesa\'s ' +
    'lavapipe driver, so WebGPU runs even without a GPU)',
  // Imported when first used: the file writer is the CLI's and save()'s, not every search's.
  writeIndexFile: async (...args) => (await import('../io/index-file.js')).writeIndexFile(...args),
};
