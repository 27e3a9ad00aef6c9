/**
 * A growable host array of rows of `d` floats (capacity doubles), for a store's host copy.
 */
export class RowBuffer {
  private data = new Float32Array(0);
  /** Rows held. */
  n = 0;

  constructor(readonly d: number) {}

  /** Appends the first `n` rows of `x`. */
  append(x: Float32Array, n: number): void {
    const need = (this.n + n) * this.d;
    if (need > this.data.length) {
      const grown = new Float32Array(Math.max(need, 2 * this.data.length, 16 * this.d));
      grown.set(this.view());
      this.data = grown;
    }
    this.data.set(x.subarray(0, n * this.d), this.n * this.d);
    this.n += n;
  }

  /** The rows held, `n * d` floats: a view, valid until the next append or clear. */
  view(): Float32Array {
    return this.data.subarray(0, this.n * this.d);
  }

  /** Keeps the first `n` rows. */
  truncate(n: number): void {
    this.n = Math.min(this.n, n);
  }

  clear(): void {
    this.data = new Float32Array(0);
    this.n = 0;
  }
}
