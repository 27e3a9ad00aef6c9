// Types of scripts/demo-web.mjs, for the browser suite (TypeScript).
import type { Server } from 'node:http';

export const DEMO_PAGE: string;
export const DEMO_SERVED: string[];
export function serveDemo(options?: { port?: number }): Promise<{ server: Server; origin: string }>;
