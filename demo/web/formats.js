// The vector files the demo page reads, parsed in the browser: every value becomes a float32.
//   .npy    2-D, C order; float32/64/16, uint8, int8, int32, int64 (the library's readNpyHeader,
//           the header check the CLI uses)
//   .fvecs  TEXMEX: per row an int32 dim, then dim float32 values
//   .jsonl  one row per non-blank line: a JSON array of numbers, or an object with an `embedding`
//           (or `vector`) array and an optional `title` (else `id`) shown beside the row
// A bad file is an Error whose message starts with the file's name and says what is wrong where.
import { readNpyHeader } from '/dist/browser/webgpu-knn.js';

export const ACCEPTED = ['.npy', '.fvecs', '.jsonl'];

/** { x: Float32Array (n * d), n, d, titles: string[] | null } from a file's bytes. */
export async function parseVectorFile(name, buffer) {
  const ext = name.slice(name.lastIndexOf('.')).toLowerCase();
  let data;
  if (ext === '.npy') data = await parseNpy(name, buffer);
  else if (ext === '.fvecs') data = parseFvecs(name, buffer);
  else if (ext === '.jsonl') data = parseJsonl(name, buffer);
  else throw new Error(`${name}: unknown file type '${ext}'; the demo reads ${ACCEPTED.join(', ')}`);
  if (data.n === 0) throw new Error(`${name}: holds no rows`);
  if (data.d === 0) throw new Error(`${name}: its rows have no values (dim 0)`);
  const bad = data.x.findIndex((v) => !Number.isFinite(v));
  if (bad >= 0) throw new Error(`${name}: row ${Math.floor(bad / data.d)} holds ${data.x[bad]} (value ${bad % data.d}); every value must be finite`);
  return data;
}

async function parseNpy(name, buffer) {
  const bytes = new Uint8Array(buffer);
  let at = 0;
  const take = async (length) => {
    const part = bytes.subarray(at, at + length);
    at += part.length;
    return part;
  };
  const { dtype, n, d, dataStart } = await readNpyHeader(name, bytes.length, take);
  // A copy, so that the typed view of each dtype is aligned whatever dataStart is.
  const raw = bytes.slice(dataStart, dataStart + n * d * dtype.bytes);
  return { x: Float32Array.from(dtype.values(raw)), n, d, titles: null };
}

function parseFvecs(name, buffer) {
  if (buffer.byteLength < 4) throw new Error(`${name}: ${buffer.byteLength} bytes, too short for an .fvecs row (an int32 dim, then the floats)`);
  const view = new DataView(buffer);
  const d = view.getInt32(0, true);
  if (d <= 0 || d > 1 << 20) throw new Error(`${name}: the first row's dim (int32 at byte 0) is ${d}; not an .fvecs file?`);
  const rowBytes = 4 + 4 * d;
  if (buffer.byteLength % rowBytes !== 0) {
    throw new Error(`${name}: ${buffer.byteLength} bytes is not a whole number of rows of ${rowBytes} bytes (dim ${d}); truncated, or rows of different dims?`);
  }
  const n = buffer.byteLength / rowBytes;
  const x = new Float32Array(n * d);
  for (let i = 0; i < n; i++) {
    const dim = view.getInt32(i * rowBytes, true);
    if (dim !== d) throw new Error(`${name}: row ${i} (byte ${i * rowBytes}) has dim ${dim}; expected ${d} (as row 0)`);
    x.set(new Float32Array(buffer, i * rowBytes + 4, d), i * d);
  }
  return { x, n, d, titles: null };
}

function parseJsonl(name, buffer) {
  const lines = new TextDecoder().decode(buffer).split('\n');
  const rows = [];
  const titles = [];
  let withTitles = 0;
  let d = null;
  for (let l = 0; l < lines.length; l++) {
    if (!lines[l].trim()) continue;
    const lineNo = l + 1;
    let row;
    try {
      row = JSON.parse(lines[l]);
    } catch (err) {
      throw new Error(`${name}: line ${lineNo} is not valid JSON (${err.message})`);
    }
    const values = Array.isArray(row) ? row : (row?.embedding ?? row?.vector);
    if (!Array.isArray(values) || values.some((v) => typeof v !== 'number')) {
      throw new Error(`${name}: line ${lineNo} is neither an array of numbers nor an object with a numeric 'embedding' (or 'vector') array`);
    }
    d ??= values.length;
    if (values.length !== d) throw new Error(`${name}: line ${lineNo} has ${values.length} values; expected ${d} (as on the first row)`);
    rows.push(values);
    const title = Array.isArray(row) ? undefined : (row.title ?? row.id);
    if (title !== undefined && title !== null) withTitles++;
    titles.push(title === undefined || title === null ? '' : String(title));
  }
  const x = new Float32Array(rows.length * (d ?? 0));
  rows.forEach((values, i) => x.set(values, i * d));
  return { x, n: rows.length, d: d ?? 0, titles: withTitles > 0 ? titles : null };
}
