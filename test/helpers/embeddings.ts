/** The 778 real 384-d text embeddings of npm @sap-ux/fiori-docs-embeddings (a devDependency). */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const DIR = fileURLToPath(new URL('../../node_modules/@sap-ux/fiori-docs-embeddings/data/embeddings/', import.meta.url));

export function fioriEmbeddings(): { x: Float32Array; n: number; d: number } {
  const buf = readFileSync(`${DIR}embeddings.bin`);
  const x = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
  return { x, n: x.length / 384, d: 384 };
}
