/** Hand-made file bytes for the file-format tests. */

/** A .npy file (format 1.0) of the given dtype, shape text and raw little-endian bytes. */
export function npyBytes(descr: string, shape: string, body: Uint8Array, fortran = 'False'): Uint8Array {
  let header = `{'descr': '${descr}', 'fortran_order': ${fortran}, 'shape': ${shape}, }`;
  header = header.padEnd(Math.ceil((11 + header.length) / 64) * 64 - 11, ' ') + '\n';
  const out = new Uint8Array(10 + header.length + body.length);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0], 0);
  new DataView(out.buffer).setUint16(8, header.length, true);
  out.set(new TextEncoder().encode(header), 10);
  out.set(body, 10 + header.length);
  return out;
}
