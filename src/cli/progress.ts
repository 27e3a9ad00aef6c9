/**
 * Progress on stderr: a bar redrawn in place on a terminal, plain lines (at most one a second)
 * otherwise, so that logs stay readable.
 */
export class Progress {
  private readonly tty = Boolean(process.stderr.isTTY);
  private last = 0;
  private readonly start = performance.now();

  constructor(private readonly label: string) {}

  /** `done` of `total` units; `extra` is appended (for example "123 pairs so far"). */
  update(done: number, total: number, extra = ''): void {
    const now = performance.now();
    const finished = done >= total;
    if (!finished && now - this.last < (this.tty ? 100 : 1000)) return;
    this.last = now;
    const pct = total > 0 ? (100 * done) / total : 100;
    const secs = ((now - this.start) / 1000).toFixed(1);
    if (this.tty) {
      const width = 30;
      const fill = Math.round((width * pct) / 100);
      process.stderr.write(`\r${this.label} [${'#'.repeat(fill)}${'.'.repeat(width - fill)}] ${pct.toFixed(0)}% ${secs}s ${extra}\u001b[K`);
      if (finished) process.stderr.write('\n');
    } else {
      process.stderr.write(`${this.label}: ${done}/${total} (${pct.toFixed(0)}%) ${secs}s ${extra}\n`);
    }
  }
}
