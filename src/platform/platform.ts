/**
 * The Node platform (see types.ts): WebGPU from Dawn (npm `webgpu`), kernel choices in a cache
 * file, diagnostics on stderr. The browser build replaces this module with browser.ts.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
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

/** The packages that give WebGPU a software adapter (a Vulkan loader and Mesa's lavapipe), one line a system. */
export const VULKAN_INSTALL: readonly string[] = [
  'Debian/Ubuntu: apt-get install libvulkan1 mesa-vulkan-drivers (Debian 12: -t bookworm-backports);',
  'Fedora: dnf install vulkan-loader mesa-vulkan-drivers',
];

/**
 * The absolute path of the package's scripts/setup-webgpu.sh, as installed (in node_modules) or in
 * a checkout, or null where this module is not in the package (an app's own bundle): the package's
 * root is two folders above dist/platform/ and src/platform/, one above dist/index.cjs (whose
 * import.meta.url is that file); a root counts only where its package.json names webgpu-knn.
 */
export function setupScript(from: string = import.meta.url): string | null {
  for (const up of ['../../', '../']) {
    const root = fileURLToPath(new URL(up, from));
    const script = join(root, 'scripts', 'setup-webgpu.sh');
    try {
      const name = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name?: unknown }).name;
      if (name === 'webgpu-knn' && existsSync(script)) return script;
    } catch {
      // No package.json there, or not JSON: not the package's root.
    }
  }
  return null;
}

/** What to do without an adapter, true wherever the package is: its setup script by its path where it has one, and the packages. */
function setupHint(script = setupScript()): string {
  const what = "a Vulkan loader and Mesa's lavapipe driver, a software adapter, so WebGPU runs even without a GPU";
  const install = VULKAN_INSTALL.join(' ');
  return script ? `run bash ${script} (as root on Debian/Ubuntu it installs ${what}), or install them yourself: ${install}` : `install ${what}: ${install}`;
}

export const platform: Platform = {
  name: 'node',
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
  setupHint: setupHint(),
  // Imported when first used: the file writer is the CLI's and save()'s, not every search's.
  writeIndexFile: async (...args) => (await import('../io/index-file.js')).writeIndexFile(...args),
};
