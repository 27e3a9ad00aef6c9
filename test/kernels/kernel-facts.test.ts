import { describe, expect, it } from 'vitest';
import { LIST_MAX_CAP, shaderText, specialize } from '../../src/gpu/shaders.js';
import { MERGE_ROUND, PAD_ID } from '../../src/kernel-facts.js';

/** The value of `const NAME: u32 = VALUEu;` in a shader (after its includes), or null. */
function wgslConst(shader: string, name: string): number | null {
  const m = new RegExp(`^const ${name}: u32 = (0x[0-9a-f]+|\\d+)u;`, 'm').exec(shaderText(shader));
  return m ? Number(m[1]) : null;
}

describe('kernel facts shared by the WGSL and the TypeScript', () => {
  it('topk-merge.wgsl merges MERGE_ROUND lists per dispatch', () => {
    expect(wgslConst('topk-merge', 'MAX_SEG')).toBe(MERGE_ROUND);
  });

  it.each(['heap', 'sorted-list', 'topk-merge', 'topk', 'ivf-scan', 'select-radix'])('%s.wgsl pads with PAD_ID', (shader) => {
    expect(wgslConst(shader, 'PAD_ID')).toBe(PAD_ID);
  });

  it('sorted-list.wgsl writes out a step for every position below LIST_MAX_CAP', () => {
    const text = shaderText('sorted-list');
    const literals = (fn: string) => [...text.matchAll(new RegExp(`^  ${fn}\\((\\d+)u, `, 'gm'))].map((m) => Number(m[1])).sort((a, b) => a - b);
    expect(literals('list_step')).toEqual(Array.from({ length: LIST_MAX_CAP - 1 }, (_, j) => j + 1));
    expect(literals('list_store_entry')).toEqual(Array.from({ length: LIST_MAX_CAP }, (_, j) => j));
  });

  it('k best: a sorted list up to K_CAP = LIST_MAX_CAP, a heap above', () => {
    for (const kernel of ['topk', 'ivf-scan']) {
      for (const cap of [2, 4, 8, LIST_MAX_CAP, 2 * LIST_MAX_CAP]) {
        const { code } = specialize(kernel, { K_CAP: cap });
        expect(code.includes('fn list_step('), `${kernel} K_CAP ${cap}`).toBe(cap <= LIST_MAX_CAP);
        expect(code.includes('fn sift_down('), `${kernel} K_CAP ${cap}`).toBe(cap > LIST_MAX_CAP);
        expect(code, `${kernel} K_CAP ${cap}`).toMatch(new RegExp(`^const K_CAP: u32 = ${cap}u;`, 'm'));
      }
    }
  });
});
