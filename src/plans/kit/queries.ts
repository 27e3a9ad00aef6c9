/**
 * Queries as a row format scores them (float rows, codes with their biases, product-code tables),
 * uploaded into a plan's scratch memory.
 */
import type { Device, DeviceBuffer } from '../../device.js';
import { padRows } from '../../device.js';
import { type KernelMetric } from '../../kernel-facts.js';
import type { RowFormat } from '../../contracts.js';
import { Scratch } from './scratch.js';

/**
 * Queries on the device as a store's scoring reads them: rows of `dpad` floats (for codes,
 * transformed by the format), for sq-scores and pq-scores one bias per row, and for pq-scores the
 * codebook the tables are made from.
 */
export interface QueryRows {
  xq: DeviceBuffer;
  qbias: DeviceBuffer | null;
  codebook: DeviceBuffer | null;
}

/** Queries already on the device as float rows (for stores of float rows). */
export function floatQueries(xq: DeviceBuffer): QueryRows {
  return { xq, qbias: null, codebook: null };
}

/** Bytes of one query row's product-quantiser tables (0 for other formats). */
export function tableBytes(format: RowFormat): number {
  const s = format.scoring;
  return s.kernel === 'pq-scores' ? s.M * s.ksub * 4 : 0;
}

/**
 * Records what a tile of `rows` queries (rows q0 .. of `q`) needs before its rows are scored: for
 * product codes, their tables into `luts` (row r of the tile at row r); nothing for other formats.
 */
export function tileTables(device: Device, format: RowFormat, q: QueryRows, metric: KernelMetric, q0: number, rows: number, luts: DeviceBuffer | null): void {
  const s = format.scoring;
  if (s.kernel !== 'pq-scores') return;
  if (!q.codebook || !luts) throw new Error('pq-scores needs the codebook (queryRows) and a table buffer');
  device.dispatch({ kernel: 'pq-tables', metric, xq: q.xq, codebook: q.codebook, luts, q0, rows, M: s.M, ksub: s.ksub, dsub: s.dsub, dpad: format.dpad });
}

/**
 * The queries as `format` scores them: for float rows `xqBuf`, the `nq` queries already uploaded
 * padded to `dpad`; for codes, `xq` (`nq * d`, as the index holds them) transformed (for residual
 * codes against `lists[i]`, row i's list) and uploaded with their biases, and for product codes
 * the codebook.
 */
export function queryRows(scratch: Scratch, format: RowFormat, xqBuf: DeviceBuffer, xq: Float32Array, nq: number, metric: KernelMetric, lists?: Uint32Array): QueryRows {
  const s = format.scoring;
  if (s.kernel === 'gemm-scores') return floatQueries(xqBuf);
  if (s.kernel === 'hamming-scores') {
    const codes = s.encode(xq, nq);
    const buf = scratch.buffer('xq_codes', codes.byteLength);
    scratch.device.upload(buf, 0, codes);
    return { xq: buf, qbias: null, codebook: null };
  }
  const t = s.transform(xq, nq, metric, lists);
  const qbias = scratch.buffer('qbias', nq * 4);
  scratch.device.upload(qbias, 0, t.qbias);
  let codebook: DeviceBuffer | null = null;
  if (s.kernel === 'pq-scores') {
    codebook = scratch.buffer('pq_codebook', s.codebook.byteLength);
    scratch.device.upload(codebook, 0, s.codebook);
  }
  return { xq: uploadQueries(scratch, t.xq, nq, format.d, format.dpad), qbias, codebook };
}

/** Uploads `nq` queries (`nq * d`) padded to `dpad` into a scratch buffer. */
export function uploadQueries(scratch: Scratch, xq: Float32Array, nq: number, d: number, dpad: number): DeviceBuffer {
  const buf = scratch.buffer('xq', nq * dpad * 4);
  scratch.device.upload(buf, 0, padRows(xq, nq, d, dpad));
  return buf;
}
