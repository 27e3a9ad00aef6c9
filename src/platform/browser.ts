/**
 * The browser platform (see types.ts), which scripts/build-browser.mjs puts in place of
 * platform.ts: WebGPU from `navigator.gpu`, kernel choices in localStorage (else in memory for the
 * page's life), diagnostics on the console, no files.
 */

import type { ChoiceStore, Platform } from './types.js';
import { InvalidArgumentError } from '../errors.js';

const CHOICE_KEY = 'webgpu-knn:gemm-variant';
let choiceMemory: string | null = null;

interface BrowserGlobals {
  navigator?: { gpu?: GPU };
  localStorage?: { getItem(key: string): string | null; setItem(key: string, value: string): void };
  isSecureContext?: boolean;
}
const g = globalThis as BrowserGlobals;

const choiceStore: ChoiceStore = {
  where: `localStorage ${CHOICE_KEY}`,
  async read() {
    try {
      return g.localStorage?.getItem(CHOICE_KEY) ?? choiceMemory;
    } catch {
      return choiceMemory; // storage disabled (an opaque origin, privacy settings)
    }
  },
  async write(text) {
    choiceMemory = text;
    try {
      g.localStorage?.setItem(CHOICE_KEY, text);
      return g.localStorage ? undefined : 'no localStorage here (kept for this page only)';
    } catch (err) {
      return `${(err as Error).message} (kept for this page only)`;
    }
  },
};

// A macrotask without setTimeout's 4 ms clamp: one message through a channel per yield.
const waiting: (() => void)[] = [];
let channel: InstanceType<typeof MessageChannel> | null = null;

export const platform: Platform = {
  name: 'browser',
  async requestGpu() {
    const gpu = g.navigator?.gpu;
    if (!gpu) {
      const why = g.isSecureContext === false ? 'this page is not a secure context (serve it over https or from localhost)' : 'this browser has WebGPU disabled or lacks it';
      throw new Error(`navigator.gpu is missing: ${why}`);
    }
    return { gpu, backend: 'navigator.gpu', polled: false };
  },
  choiceStore: () => choiceStore,
  warn: (line) => console.warn(line),
  yieldToEvents: () =>
    new Promise<void>((resolve) => {
      if (!channel) {
        channel = new MessageChannel();
        // Typed from Node's MessagePort; a browser's has onmessage (and so has Node's).
        (channel.port1 as unknown as { onmessage: () => void }).onmessage = () => waiting.shift()?.();
      }
      waiting.push(resolve);
      channel.port2.postMessage(null);
    }),
  setupHint: 'WebGPU needs a browser that has it enabled, on a secure context (https or localhost); or use backend: \'cpu\'',
  writeIndexFile: async (path) => {
    throw new InvalidArgumentError(`cannot write ${path}: the browser build has no files (save and load are Node-only)`);
  },
};
