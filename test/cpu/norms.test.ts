import { describe, expect, it } from 'vitest';
import { norms } from '../../src/cpu/norms.js';

describe('cpu norms', () => {
  it('computes squared row norms by hand', () => {
    const x = new Float32Array([3, 4, 0, 1, 2, 2, -1, 0, 0]);
    expect(Array.from(norms(x, 3, 3))).toEqual([25, 9, 1]);
  });
  it('handles d = 1 and an empty matrix', () => {
    expect(Array.from(norms(new Float32Array([-2, 0.5]), 2, 1))).toEqual([4, 0.25]);
    expect(norms(new Float32Array(0), 0, 4).length).toBe(0);
  });
});
