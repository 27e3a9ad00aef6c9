/** Summary statistics for repeated timings, and text tables. (Recall: exact.ts.) */
export interface Summary {
  median: number;
  min: number;
  max: number;
  /** (max - min) / median: the run-to-run spread. */
  spread: number;
}

export function summarize(values: number[]): Summary {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  const median = s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
  return { median, min: s[0], max: s[s.length - 1], spread: median > 0 ? (s[s.length - 1] - s[0]) / median : 0 };
}

/** Left-aligned text table. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/**
 * Pareto-optimal items where both measures are better higher (negate one to minimise it): an item
 * is on the front when no other has both at least as high and one strictly higher. Equal items
 * are on it together (neither beats the other).
 */
export function paretoMask<T>(items: T[], a: (t: T) => number, b: (t: T) => number): boolean[] {
  return items.map((x) => !items.some((y) => a(y) >= a(x) && b(y) >= b(x) && (a(y) > a(x) || b(y) > b(x))));
}
