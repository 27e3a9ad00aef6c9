/** See wgsl-strip.mjs. */
export function stripWgsl(text: string, name?: string): string;
