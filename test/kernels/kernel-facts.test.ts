import { describe, expect, it } from 'vitest';
import { readdirSync } from 'node:fs';
import { bindingsOf } from '../../src/gpu/pipelines.js';
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

  it('a pipeline layout is read from the WGSL: binding 0 the uniform parameters, storage read-only or read_write', () => {
    const code = [
      '@group(0) @binding(0) var<uniform> p: Params;',
      '@group(0) @binding(2) var<storage, read_write> out: array<u32>;',
      '  @group(0) @binding(1) var<storage> x: array<f32>;',
      '// @group(0) @binding(3) var<storage, read> commented: array<f32>; (not at a line start: ignored)',
    ].join('\n');
    expect(bindingsOf(code, 't')).toEqual([
      { binding: 0, type: 'uniform' },
      { binding: 1, type: 'read-only-storage' },
      { binding: 2, type: 'storage' },
    ]);
    expect(() => bindingsOf('@group(1) @binding(0) var<uniform> p: P;', 't')).toThrow(/t: a kernel binds uniform or storage buffers of group 0 only; got @group\(1\)/);
    expect(() => bindingsOf('@group(0) @binding(0) var tex: texture_2d<f32>;', 't')).toThrow(/group 0 only; got @group\(0\) @binding\(0\) var/);
    expect(() => bindingsOf('@group(0) @binding(1) var<storage> a: A;\n@group(0) @binding(1) var<storage> b: B;', 't')).toThrow(/binding 1 is declared twice/);
    expect(() => bindingsOf('@binding(0) @group(0) var<uniform> p: P;', 't')).toThrow(/t: 1 binding declarations, 0 of them as @group\(0\) @binding\(N\)/);
    expect(() => bindingsOf('@group(0) @binding(0) var<storage> a: A;', 't')).toThrow(/t: binding 0 must be the uniform parameters/);
  });

  const kernels = readdirSync(new URL('../../shaders', import.meta.url)).filter((f) => f.endsWith('.wgsl')).map((f) => f.slice(0, -5))
    .filter((name) => /^@group/m.test(shaderText(name)) && /^fn main\b|@compute/m.test(shaderText(name)));
  it.each(kernels)('%s.wgsl: binding 0 is its uniform parameters, then storage bindings 1.. with no gap', (name) => {
    const b = bindingsOf(shaderText(name), name);
    expect(b[0]).toEqual({ binding: 0, type: 'uniform' });
    expect(b.map((x) => x.binding)).toEqual(b.map((_, i) => i));
    expect(b.slice(1).every((x) => x.type !== 'uniform')).toBe(true);
  });
});
