/** Reads an index file written by `save` back into a FlatIndex or IvfFlatIndex on `backend`. */
import type { Backend } from '../backend.js';
import { FlatIndex } from '../flat-index.js';
import { IvfFlatIndex } from '../ivf-flat-index.js';
import { readIndexFile } from './index-file.js';

export async function loadIndex(backend: Backend, path: string): Promise<FlatIndex | IvfFlatIndex> {
  const { header: h, arrays } = readIndexFile(path);
  if (h.type === 'Flat') {
    const index = new FlatIndex(backend, { dim: h.dim, metric: h.metric });
    await index.addPrepared(arrays[0] as Float32Array);
    return index;
  }
  const index = new IvfFlatIndex(backend, { dim: h.dim, metric: h.metric, nlist: h.nlist });
  await index.setCentroids(arrays[0] as Float32Array);
  await index.restoreLists(arrays[1] as Uint32Array, arrays[2] as Uint32Array, arrays[3] as Float32Array);
  index.nprobe = h.nprobe; // checked in [1, nlist] by readIndexFile
  return index;
}
