import { describe, expect, it } from 'vitest';
import { shaderText } from '../../src/gpu/shaders.js';
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

  it.each(['heap', 'topk-merge', 'topk', 'ivf-scan', 'select-radix'])('%s.wgsl pads with PAD_ID', (shader) => {
    expect(wgslConst(shader, 'PAD_ID')).toBe(PAD_ID);
  });
});
