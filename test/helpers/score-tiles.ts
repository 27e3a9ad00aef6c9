/**
 * Score-tile shapes the scoring kernels' suites (gemm-scores, sq-scores) run on, as
 * [nq, nb, d, q0, rows, col0, cols, ldc]: odd sizes, offsets, tiles that are not multiples of the
 * register blocks (16 x 2, 8 x 4 queries x base vectors) nor of a workgroup's tile (gemm-scores
 * tiled's 64 x 64, sq-scores' 8 x 256; several of them, ragged in both directions), d not a
 * multiple of the tiled variant's 16-float inner tile nor of 8 (and dpad / 4 odd), and a stride
 * wider than the tile.
 */
export const SCORE_TILE_SHAPES: readonly number[][] = [
  [1, 1, 1, 0, 1, 0, 1, 1],
  [3, 7, 3, 1, 2, 2, 5, 6],
  [16, 300, 128, 0, 16, 0, 300, 300],
  [21, 130, 17, 4, 13, 9, 121, 125],
  [9, 1030, 5, 0, 9, 3, 1027, 1027],
  [150, 200, 37, 5, 139, 11, 181, 190],
  [70, 300, 20, 0, 70, 0, 300, 300],
];
