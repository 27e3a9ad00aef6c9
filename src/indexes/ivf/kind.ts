/**
 * The IVF kind (src/indexes/kind.ts): inverted lists of float32 rows or of a codec's codes of
 * residuals, searched in the nprobe lists nearest each query. Its factory stage is `IVF<nlist>`;
 * its files are the IVF types of src/io/index-format.ts; its own search parameter is nprobe.
 */
import { codecName, codecTableFloats } from '../../codecs/codec.js';
import { checkLists } from '../../io/index-format.js';
import type { IndexKind } from '../kind.js';
import { IvfFlatIndex } from './ivf-flat-index.js';

export const IVF_KIND: IndexKind<IvfFlatIndex> = {
  name: 'IVF',
  parseStage(part, bad) {
    const ivf = /^IVF(\d+)$/.exec(part);
    if (!ivf) return null;
    const nlist = Number(ivf[1]);
    if (!(nlist >= 1 && nlist <= 0xffffffff)) throw bad();
    return { nlist };
  },
  stage: (type) => `IVF${type.nlist}`,
  implicitStorage: false,
  transforms: false,
  checkType(type, bad) {
    if (type.codec?.type === 'LSH') throw bad(' (binary codes are stored in Flat indexes only: LSH takes no IVF stage)');
  },
  create(backend, dim, type, metric, { hostCopy, nprobe }) {
    const codec = type.codec ? codecName(type.codec) : undefined;
    return new IvfFlatIndex(backend, { dim, metric, nlist: type.nlist, hostCopy, nprobe, codec, refine: type.refine ?? undefined });
  },
  fileTypes: ['IVF', 'IVF,SQ8', 'IVF,SQ4', 'IVF,SQfp16', 'IVF,PQ'],
  open(backend, h, { hostCopy }) {
    return new IvfFlatIndex(backend, { dim: h.dim, metric: h.metric, nlist: h.nlist, codec: h.codec ? codecName(h.codec) : undefined, refine: h.refine ?? undefined, hostCopy });
  },
  async read(index, file) {
    const { dim, ntotal, nlist, nprobe, metric, codec: spec } = file.header;
    await index.setCentroids(await file.floats('centroids', nlist * dim, dim, true));
    if (spec) await index.restoreCodec(await file.floats(`${codecName(spec)} tables`, codecTableFloats(spec, dim)));
    const offsets = await file.uints(nlist + 1);
    const ids = await file.uints(ntotal);
    checkLists(file.name, offsets, ids, ntotal);
    const rows = spec ? file.codeBlocks('codes', ntotal, spec) : file.vectorBlocks('xb', ntotal, metric === 'cosine');
    await index.restoreLists(offsets, ids, rows);
    index.nprobe = nprobe; // checked in [1, nlist] with the header
  },
  training: (type) => ({ minRows: type.nlist, what: `nlist = ${type.nlist}` }),
  searchParams: (type) => ({ nprobe: { min: 1, max: type.nlist, expected: `an integer in [1, ${type.nlist}] (nlist)` } }),
};
