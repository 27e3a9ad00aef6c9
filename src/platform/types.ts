/**
 * What the core needs from the place it runs in, and nothing else: Node (platform.ts: files, Dawn,
 * stderr) or a browser (browser.ts: navigator.gpu, localStorage). The core imports `./platform.js`;
 * the browser build (scripts/build-browser.mjs) resolves that one module to browser.ts instead, so
 * nothing Node-only reaches the browser files. The WGSL texts are not the platform's: GPU code
 * reads them from shader-files.ts, which both builds replace with the texts inlined.
 */
import type { writeIndexFile } from '../io/index-file.js';

/** Where measured kernel choices are kept between runs (src/gpu/kernel-choice.ts). */
export interface ChoiceStore {
  /** Where, for reports: a file's path, or a browser storage's name. */
  readonly where: string;
  /** The stored text; null when there is none or it cannot be read. */
  read(): Promise<string | null>;
  /** Stores `text` whole (a reader never sees half of it); the error's message when it could not. */
  write(text: string): Promise<string | undefined>;
}

export interface Platform {
  readonly name: 'node' | 'browser';
  /**
   * The WebGPU entry point: Dawn's `create(flags)` in Node, `navigator.gpu` in a browser; throws
   * when there is none. `backend` names the native API for reports; `polled` says that promises of
   * its devices settle only by polling on the event loop (Dawn in Node: see GpuContext.wait).
   */
  requestGpu(flags: string[]): Promise<{ gpu: GPU; backend: string; polled: boolean }>;
  /** The kernel-choice store: in Node a file in `dir` (default gemmCacheDir()), in a browser localStorage. */
  choiceStore(dir?: string): ChoiceStore;
  /** One line of diagnostics (stderr in Node, console.warn in a browser). */
  warn(line: string): void;
  /** Lets other work through between steps of a long synchronous computation. */
  yieldToEvents(): Promise<void>;
  /** What to do when WebGPU is missing, appended to the error. */
  readonly setupHint: string;
  /** Writes an index file (src/io/index-file.ts); a browser build has no files and throws. */
  writeIndexFile: typeof writeIndexFile;
}
