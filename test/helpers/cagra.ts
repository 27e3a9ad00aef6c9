/**
 * Graphs for the CAGRA build kernels' tests (cagra-prune, cagra-reverse, cagra-offsets,
 * cagra-merge), and plain references of what cuVS computes, written independently of the twins.
 */
import { rng } from '../../src/common/random.js';
import { PAD_ID } from '../../src/kernel-facts.js';

/**
 * A kNN graph of n points in the plane at small integer coordinates (many equal distances): row A
 * = the other points by (squared distance, id), its first min(kin, n - 1), PAD_ID after them.
 */
export function geometricKnn(n: number, kin: number, seed: number, side = 12): Uint32Array {
  const r = rng(seed);
  const xy = Array.from({ length: n }, () => [Math.floor(r() * side), Math.floor(r() * side)]);
  const knn = new Uint32Array(n * kin).fill(PAD_ID);
  for (let a = 0; a < n; a++) {
    const dist = (b: number) => (xy[a][0] - xy[b][0]) ** 2 + (xy[a][1] - xy[b][1]) ** 2;
    const others = Array.from({ length: n }, (_, b) => b).filter((b) => b !== a);
    others.sort((x, y) => dist(x) - dist(y) || x - y);
    others.slice(0, kin).forEach((b, j) => (knn[a * kin + j] = b));
  }
  return knn;
}

/**
 * Rows of distinct random ids other than the row's node, some rows cut short (PAD_ID after
 * them): lists with no geometry behind them, so detours fall anywhere.
 */
export function randomKnn(n: number, kin: number, seed: number, shortRows = 0.2): Uint32Array {
  const r = rng(seed);
  const knn = new Uint32Array(n * kin).fill(PAD_ID);
  for (let a = 0; a < n; a++) {
    const others = Array.from({ length: n }, (_, b) => b).filter((b) => b !== a);
    for (let i = others.length - 1; i > 0; i--) {
      const j = Math.floor(r() * (i + 1));
      [others[i], others[j]] = [others[j], others[i]];
    }
    let len = Math.min(kin, others.length);
    if (r() < shortRows) len = Math.floor(r() * (len + 1));
    for (let j = 0; j < len; j++) knn[a * kin + j] = others[j];
  }
  return knn;
}

/**
 * A graph whose rows are its own nearest ones: row A draws from the `pool` nodes after A (mod n),
 * so rows overlap a lot and detour counts tie often.
 */
export function clusteredKnn(n: number, kin: number, seed: number, pool: number): Uint32Array {
  const r = rng(seed);
  const knn = new Uint32Array(n * kin).fill(PAD_ID);
  for (let a = 0; a < n; a++) {
    const cand = Array.from({ length: Math.min(pool, n - 1) }, (_, i) => (a + 1 + i) % n);
    for (let i = cand.length - 1; i > 0; i--) {
      const j = Math.floor(r() * (i + 1));
      [cand[i], cand[j]] = [cand[j], cand[i]];
    }
    cand.slice(0, kin).forEach((b, j) => (knn[a * kin + j] = b));
  }
  return knn;
}

/** The valid ids of a row, in order. */
export function rowIds(g: Uint32Array, width: number, node: number): number[] {
  return Array.from(g.subarray(node * width, (node + 1) * width)).filter((v) => v !== PAD_ID);
}
