// The WGSL texts of the browser build, smaller (scripts/build-browser.mjs; test/browser/bundle.test.ts
// checks the build holds exactly these): comment lines and trailing comments dropped (the
// `//!include` directives kept: src/gpu/shaders.ts expands them), indentation and blank lines
// removed. WGSL has no string literals, so outside a block comment `//` always starts a comment;
// no shader has a block comment, and one is refused rather than cut wrongly. Halves the texts
// (about 108 KB to 51 KB); a compile error's line numbers then count the stripped text.
export function stripWgsl(text, name = 'a shader') {
  if (text.includes('/*')) throw new Error(`wgsl-strip: ${name} has a /* */ comment, which this stripping does not handle; use // comments`);
  return text
    .split(/\r?\n/)
    .map((line) => (line.trimStart().startsWith('//!include ') ? line.trim() : line.replace(/\/\/.*$/, '').trim()))
    .filter((line) => line !== '')
    .join('\n');
}
