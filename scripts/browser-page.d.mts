// Types of scripts/browser-page.mjs, for the browser suite (TypeScript).
import type { Server } from 'node:http';
import type { Browser, Page } from 'playwright-core';

export const ROOT: string;
export const CHROMIUM: string;
export const BROWSER_BUNDLE: string;
export function browserUnavailable(): string | null;
export function servedFile(urlPath: string, served?: string[]): string | null;
export interface ServeOptions {
  served?: string[];
  routes?: Record<string, { type: string; body: string | Uint8Array }>;
  home?: string | null;
  port?: number;
}
export function serve(options?: ServeOptions): Promise<{ server: Server; origin: string }>;
export function openPage(origin: string, log?: (line: string) => void, path?: string): Promise<{ browser: Browser; page: Page }>;
