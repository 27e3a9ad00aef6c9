/**
 * The browser suite's harness (scripts/browser-page.mjs, shared with scripts/browser-bench.mjs).
 * Without chromium the suite skips with the reason, unless WEBGPU_REQUIRED=1 (CI): then it fails.
 */
import { browserUnavailable } from '../../scripts/browser-page.mjs';
import { WEBGPU_REQUIRED } from './gpu.js';

export { BROWSER_BUNDLE, CHROMIUM, ROOT, openPage, serve } from '../../scripts/browser-page.mjs';

/** Why the suite cannot run here (no chromium, no build), or null. Throws instead under WEBGPU_REQUIRED=1. */
export function browserMissing(): string | null {
  const reason = browserUnavailable();
  if (reason && WEBGPU_REQUIRED) throw new Error(`WEBGPU_REQUIRED=1 but ${reason}`);
  if (reason) console.warn(`[browser] skipping browser suite: ${reason}`);
  return reason;
}
