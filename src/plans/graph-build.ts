/**
 * A CAGRA graph from an intermediate kNN graph (src/indexes/graph builds that by exact search),
 * written once for every device:
 *
 *   for each tile of nodes, for each chunk of kNN rows (each chunk one binding):
 *     cagra-prune   -> the tile's detour counts; after the last chunk, each node's `degree`
 *                      edges with the fewest detours (the pruned graph)
 *   cagra-reverse   -> in-degrees of the pruned graph (every tile), then
 *   cagra-offsets   -> their exclusive prefix sums, then
 *   cagra-reverse   -> every reverse edge scattered into its target's range (every tile)
 *   cagra-merge     -> each node's row: pruned edges merged with reverse ones (every tile)
 *   one readback of the final rows
 *
 * pruneRows runs the first step alone, for rows added to a built graph (GraphIndex's extend).
 * The rules are the kernels' (shaders/cagra-*.wgsl); the CPU runs their twins, so both devices
 * build the same graph. The pruned graph and the reverse edges are each one binding
 * (n * degree ids); the kNN graph may span several.
 */
import type { Device, DeviceBuffer } from '../device.js';
import { InvalidArgumentError } from '../errors.js';
import { rowsPerBinding } from '../stores/chunking.js';
import { Scratch } from './kit/scratch.js';

/** Refuses a graph of `n` rows of `degree` ids that one binding cannot hold (the walk binds it whole). */
export function checkGraphFits(device: Device, n: number, degree: number): void {
  const graphBytes = n * degree * 4;
  if (graphBytes > device.limits.maxBindingBytes) {
    throw new InvalidArgumentError(
      `a CAGRA graph of ${n} rows of degree ${degree} takes ${graphBytes} bytes; this device binds at most ${device.limits.maxBindingBytes} bytes at once (maxBindingBytes)`,
    );
  }
}

/** The final graph rows (`degree` ids a row, PAD_ID after a row's last edge) of `n` nodes from their kNN rows (`knn`: `kin` ids a row, best first, PAD_ID after the last). */
export async function buildGraphRows(device: Device, knn: Uint32Array, n: number, kin: number, degree: number): Promise<Uint32Array> {
  if (knn.length !== n * kin) throw new InvalidArgumentError(`buildGraphRows: ${knn.length} kNN entries for ${n} rows of ${kin}`);
  checkGraphFits(device, n, degree);
  const graphBytes = n * degree * 4;
  const scratch = new Scratch(device);
  const buffer = (label: string, bytes: number): DeviceBuffer => scratch.buffer(label, Math.max(4, bytes));
  try {
    const pruned = buffer('cagra_pruned', graphBytes);
    const tileRows = pruneInto(device, buffer, knn, n, kin, degree, 0, n, pruned);
    const counts = buffer('cagra_counts', n * 4);
    const offsets = buffer('cagra_offsets', (n + 1) * 4);
    const edges = buffer('cagra_edges', graphBytes);
    device.clear(counts);
    const reverse = (scatter: boolean): void => {
      for (let node0 = 0; node0 < n; node0 += tileRows) {
        device.dispatch({ kernel: 'cagra-reverse', graph: pruned, counts, offsets, edges, n, degree, node0, nodes: Math.min(tileRows, n - node0), scatter });
      }
    };
    reverse(false);
    device.dispatch({ kernel: 'cagra-offsets', counts, offsets, n });
    reverse(true);
    const out = buffer('cagra_graph', graphBytes);
    for (let node0 = 0; node0 < n; node0 += tileRows) {
      device.dispatch({ kernel: 'cagra-merge', graph: pruned, offsets, edges, out, out0: node0, n, degree, node0, nodes: Math.min(tileRows, n - node0) });
    }
    const [rows] = await device.read([{ buffer: out, offset: 0, bytes: graphBytes }]);
    return new Uint32Array(rows);
  } catch (err) {
    device.discard();
    throw err;
  } finally {
    scratch.release();
  }
}

/**
 * Rank-based pruning alone (cagra-prune), for rows added to a built graph (GraphIndex's extend):
 * nodes node0 .. node0 + nodes - 1 keep their `degree` edges with the fewest detours, where `knn`
 * holds every node's row (`kin` ids, PAD_ID after the last): the added nodes' candidates, best
 * first, and the detour nodes' rows (a built graph's rows, widened to kin). Returns `nodes` rows
 * of `degree` ids, fewest detours first, PAD_ID after the last edge.
 */
export async function pruneRows(device: Device, knn: Uint32Array, n: number, kin: number, degree: number, node0: number, nodes: number): Promise<Uint32Array> {
  if (knn.length !== n * kin) throw new InvalidArgumentError(`pruneRows: ${knn.length} kNN entries for ${n} rows of ${kin}`);
  if (!(node0 >= 0 && nodes >= 0 && node0 + nodes <= n)) throw new InvalidArgumentError(`pruneRows: nodes ${node0} .. ${node0 + nodes - 1} are not among ${n}`);
  const bytes = Math.max(4, nodes * degree * 4);
  const scratch = new Scratch(device);
  const buffer = (label: string, b: number): DeviceBuffer => scratch.buffer(label, Math.max(4, b));
  try {
    const out = buffer('cagra_pruned', bytes);
    if (nodes > 0) pruneInto(device, buffer, knn, n, kin, degree, node0, nodes, out);
    const [rows] = await device.read([{ buffer: out, offset: 0, bytes }]);
    return new Uint32Array(rows, 0, nodes * degree);
  } catch (err) {
    device.discard();
    throw err;
  } finally {
    scratch.release();
  }
}

/**
 * Dispatches cagra-prune for nodes node0 .. node0 + nodes - 1 of `knn` (uploaded in chunks of
 * whole rows, each one binding): node node0 + r's kept edges to row r of `out`. Returns the rows
 * of a node tile (the largest), which the build's later steps tile by too.
 */
function pruneInto(
  device: Device,
  buffer: (label: string, bytes: number) => DeviceBuffer,
  knn: Uint32Array,
  n: number,
  kin: number,
  degree: number,
  node0: number,
  nodes: number,
  out: DeviceBuffer,
): number {
  // The kNN rows in chunks of whole rows, each one binding.
  const chunkRows = rowsPerBinding(device, kin * 4, `kNN row (${kin} ids)`);
  const chunks: { buf: DeviceBuffer; row0: number; rows: number }[] = [];
  for (let row0 = 0; row0 < n; row0 += chunkRows) {
    const rows = Math.min(chunkRows, n - row0);
    const buf = buffer('cagra_knn', rows * kin * 4);
    device.upload(buf, 0, knn.subarray(row0 * kin, (row0 + rows) * kin));
    chunks.push({ buf, row0, rows });
  }
  // Node tiles: within one kNN chunk, their detour counts one binding.
  const tileRows = Math.min(chunkRows, rowsPerBinding(device, kin * 4, `node's ${kin} detour counts`));
  const end = node0 + nodes;
  const tiles: { node0: number; nodes: number; chunk: (typeof chunks)[number] }[] = [];
  for (const c of chunks) {
    const from = Math.max(c.row0, node0);
    const to = Math.min(c.row0 + c.rows, end);
    for (let r = from; r < to; r += tileRows) tiles.push({ node0: r, nodes: Math.min(tileRows, to - r), chunk: c });
  }
  const detours = buffer('cagra_detours', Math.min(tileRows, nodes) * kin * 4);
  for (const t of tiles) {
    chunks.forEach((dc, i) => {
      device.dispatch({
        kernel: 'cagra-prune',
        a: t.chunk.buf,
        a0: t.node0 - t.chunk.row0,
        d: dc.buf,
        d0: dc.row0,
        drows: dc.rows,
        detours,
        out,
        out0: t.node0 - node0,
        n,
        kin,
        degree,
        node0: t.node0,
        nodes: t.nodes,
        first: i === 0,
        last: i === chunks.length - 1,
      });
    });
  }
  return tileRows;
}
