/**
 * Which gemm-scores variant a GPU device runs, chosen per adapter by measuring, not by vendor name:
 * register blocking wins on lavapipe, where barriers are expensive, workgroup-memory tiling is
 * expected to win on discrete GPUs, and only timing tells which an adapter is.
 *
 * When a device is created the choice is looked up in a cache (a file in Node, localStorage in a
 * browser: src/platform/), keyed by the adapter (backend, vendor, architecture, device,
 * description: the driver's version is in the description) and checked against a hash of the
 * shader texts of the variants it would measure, so a changed kernel is measured again. On a miss
 * those variants (autoCandidates: every variant the device offers, less `tiled` on a software
 * adapter) are timed on one score tile (measureShape) and the fastest is stored with the times. On
 * lavapipe that first measurement is mostly llvmpipe compiling each variant at its first
 * dispatch: about 1.2 s on a new machine, 0.2 s once Mesa's shader cache has them.
 *
 * In Node the file is `gemm-variant.json` in gemmCacheDir() (src/platform/platform.ts). It is
 * written to a temporary name and renamed, so a reader never sees half of it. A corrupt or
 * unreadable file is measured again and overwritten; a directory that cannot be written is not an
 * error (the choice then says why it was not stored).
 */
import { platform } from '../platform/platform.js';
import type { ChoiceStore } from '../platform/types.js';

import { BufferPool } from './buffer-pool.js';
import type { AdapterSummary, GpuContext } from './context.js';
import { GEMM_SHADERS, encodeGemmScores, gemmPipeline } from './kernels/gemm-scores.js';
import { type GemmVariant, type GemmVariantOption, checkGemmVariantOption } from './kernels/gemm-variant.js';
import { Kernels } from './kernels/kernels.js';
import type { PipelineCache } from './pipelines.js';
import { Recorder, STORAGE } from './recorder.js';
import { shaderText } from './shaders.js';
import { InvalidArgumentError } from '../errors.js';

export interface GemmChoice {
  variant: GemmVariant;
  /** `option`: named by the caller; `cache`: read from the cache file; `measured`: timed just now. */
  source: 'option' | 'cache' | 'measured';
  /** Milliseconds per dispatch of the measureShape tile, per variant timed (none when forced). */
  ms: Partial<Record<GemmVariant, number>>;
  /** The cache file (or browser storage) read or written; null when the caller named the variant. */
  cacheFile: string | null;
  /** Why a measured choice was not stored, when it was not. */
  cacheError?: string;
}

/**
 * The tile each variant is timed on (l2): 256 queries x 16384 base vectors x d = 128, a flat
 * search's tile width and enough workgroups to fill a large GPU; 2048 base vectors on a
 * CPU-emulated adapter, which has no occupancy to fill and runs a hundred times slower.
 */
export function measureShape(adapter: AdapterSummary): { rows: number; cols: number; d: number } {
  return { rows: 256, cols: adapter.isFallbackAdapter ? 2048 : 16384, d: 128 };
}

/** Bumped when the file's layout or the measurement changes, so old entries are measured again. */
const CACHE_VERSION = 1;

interface CacheEntry {
  shaderHash: string;
  variant: GemmVariant;
  ms: Partial<Record<GemmVariant, number>>;
  measuredAt: string;
}

interface CacheFile {
  version: number;
  /** By gemmCacheKey(adapter). */
  adapters: Record<string, CacheEntry>;
}

/** The cache key of an adapter: every string Dawn reports about it. */
export function gemmCacheKey(a: AdapterSummary): string {
  return [a.backend, a.vendor, a.architecture, a.device, a.description].join(' | ');
}

/**
 * A hash of the shader texts of `variants` (in order): a changed kernel misses the cache. 64-bit
 * FNV-1a over the UTF-16 code units, in plain JS so that Node and a browser compute the same.
 */
export function gemmShaderHash(variants: GemmVariant[]): string {
  const mask = (1n << 64n) - 1n;
  let h = 0xcbf29ce484222325n;
  for (const v of variants) {
    const text = `${v}\n${shaderText(GEMM_SHADERS[v])}\n`;
    for (let i = 0; i < text.length; i++) h = ((h ^ BigInt(text.charCodeAt(i))) * 0x100000001b3n) & mask;
  }
  return h.toString(16).padStart(16, '0');
}

/**
 * The variants `auto` measures on `adapter` among those it offers: all of them, except on a
 * CPU-emulated (fallback) adapter, where `tiled` is left out: its workgroup-memory tiles pay a
 * barrier per step that a CPU runs as a thread synchronisation, and it was the slowest on both
 * software adapters every time it was timed (lavapipe 43-74 ms a tile against subgroup's 8-12;
 * SwiftShader in Chromium chose portable), while its compile was 1.2 s of a first run's 2.6-2.9 s
 * on lavapipe (llvmpipe compiles a kernel at its first dispatch, one after another). It can still
 * be forced with the gemmVariant option.
 */
export function autoCandidates(adapter: AdapterSummary, variants: GemmVariant[]): GemmVariant[] {
  const kept = adapter.isFallbackAdapter ? variants.filter((v) => v !== 'tiled') : variants;
  return kept.length > 0 ? kept : variants;
}

/**
 * The variant to run among `variants` (those the device offers): `option` when it names one, else
 * the cached choice for `adapter`, else the fastest by `measure` of autoCandidates (milliseconds
 * per variant; a variant it leaves out is never chosen), which is then stored in `store` (a
 * directory's path means the cache file in it: Node only).
 */
export async function chooseGemmVariant(
  adapter: AdapterSummary,
  variants: GemmVariant[],
  option: GemmVariantOption,
  measure: (variants: GemmVariant[]) => Promise<Partial<Record<GemmVariant, number>>>,
  store: ChoiceStore | string = platform.choiceStore(),
): Promise<GemmChoice> {
  checkGemmVariantOption(option);
  if (option !== 'auto') {
    if (!variants.includes(option)) {
      throw new InvalidArgumentError(`gemmVariant ${option} cannot run on this adapter (it needs subgroups of at least 8 lanes); expected auto or one of ${variants.join(', ')}`);
    }
    return { variant: option, source: 'option', ms: {}, cacheFile: null };
  }
  if (typeof store === 'string') store = platform.choiceStore(store);
  const file = store.where;
  const key = gemmCacheKey(adapter);
  const candidates = autoCandidates(adapter, variants);
  const shaderHash = gemmShaderHash(candidates);
  const hit = (await readCache(store)).adapters[key];
  if (hit && hit.shaderHash === shaderHash && candidates.includes(hit.variant)) {
    return { variant: hit.variant, source: 'cache', ms: hit.ms, cacheFile: file };
  }
  const ms = await measure(candidates);
  const timed = candidates.filter((v) => Number.isFinite(ms[v]));
  if (timed.length === 0) throw new Error(`gemm-scores: no variant could be timed on this adapter (tried ${candidates.join(', ')})`);
  const variant = timed.reduce((best, v) => (ms[v]! < ms[best]! ? v : best));
  // Read again: another process may have stored another adapter's entry meanwhile.
  const cache = await readCache(store);
  cache.adapters[key] = { shaderHash, variant, ms, measuredAt: new Date().toISOString() };
  const cacheError = await store.write(`${JSON.stringify(cache, null, 2)}\n`);
  return { variant, source: 'measured', ms, cacheFile: file, ...(cacheError ? { cacheError } : {}) };
}

/** One line for reports: the variant, how it was chosen, the times measured, and the cache file. */
export function describeGemmChoice(c: GemmChoice): string {
  if (c.source === 'option') return `${c.variant} (forced by the gemmVariant option)`;
  const times = Object.entries(c.ms).map(([v, ms]) => `${v} ${ms.toFixed(1)} ms`).join(', ');
  const where = c.source === 'cache' ? `read from ${c.cacheFile}` : c.cacheError ? `not stored: ${c.cacheError}` : `stored in ${c.cacheFile}`;
  return `${c.variant} (${c.source === 'cache' ? 'measured earlier' : 'measured now'}: ${times}; ${where})`;
}

/** The cache's entries; none when the file is missing, unreadable, corrupt or of another version. */
async function readCache(store: ChoiceStore): Promise<CacheFile> {
  const empty: CacheFile = { version: CACHE_VERSION, adapters: {} };
  let parsed: unknown;
  try {
    parsed = JSON.parse((await store.read()) ?? '');
  } catch {
    return empty;
  }
  const c = parsed as Partial<CacheFile> | null;
  if (!c || c.version !== CACHE_VERSION || typeof c.adapters !== 'object' || c.adapters === null) return empty;
  const adapters: Record<string, CacheEntry> = {};
  for (const [key, e] of Object.entries(c.adapters)) {
    const valid =
      e && typeof e.shaderHash === 'string' && typeof e.variant === 'string' && e.variant in GEMM_SHADERS &&
      typeof e.ms === 'object' && e.ms !== null && Object.values(e.ms).every((ms) => typeof ms === 'number');
    if (valid) adapters[key] = e;
  }
  return { version: CACHE_VERSION, adapters };
}

/** Timed submits per variant after its warm-up; the median is its time. */
const TIMED_RUNS = 3;
/** Dispatches per timed submit are raised until a submit takes about this long (fast GPUs). */
const TARGET_SUBMIT_MS = 20;
const MAX_REPS = 64;
/**
 * A variant whose warm-up submit is this many times slower than the best median so far, and longer
 * than TARGET_SUBMIT_MS (so it is not a fast GPU's fixed cost of a first submit), has lost.
 */
const LOST = 2;

/**
 * Milliseconds per dispatch of each variant on a measureShape tile of zeros (the values do not
 * change the time): a warm-up submit (pipelines are compiled before), then the median of
 * TIMED_RUNS submits, each waited for with onSubmittedWorkDone. A variant whose slow warm-up has
 * already lost (LOST) is not timed further and its warm-up stands as its time: on lavapipe this
 * keeps the whole measurement to a few hundred milliseconds. A variant that fails (its pipeline is
 * rejected) is left out. Buffers come from a pool of their own, freed at the end, so the device's
 * pool starts empty.
 */
export async function timeGemmVariants(ctx: GpuContext, pipelines: PipelineCache, variants: GemmVariant[]): Promise<Partial<Record<GemmVariant, number>>> {
  const pool = new BufferPool(ctx.device, ctx.maxBinding, 0);
  const recorder = new Recorder(ctx, pool);
  // Every dispatch below names its variant, so the kernels' default is never used.
  const kernels = new Kernels(ctx, pipelines, recorder, variants[0]);
  const { rows, cols, d } = measureShape(ctx.adapterInfo);
  const buffer = (label: string, floats: number): GPUBuffer => pool.create(label, 4 * floats, STORAGE());
  const args = {
    metric: 'l2' as const, xq: buffer('measure xq', rows * d), xb: buffer('measure xb', cols * d), xnorm: buffer('measure xnorm', cols),
    scores: buffer('measure scores', rows * cols), q0: 0, rows, col0: 0, cols, dpad: d, ldc: cols,
  };
  const ms: Partial<Record<GemmVariant, number>> = {};
  let best = Infinity;
  try {
    for (const variant of variants) {
      const run = async (reps: number): Promise<number> => {
        const t0 = performance.now();
        for (let i = 0; i < reps; i++) encodeGemmScores(kernels, args, variant);
        await recorder.submit();
        return (performance.now() - t0) / reps;
      };
      try {
        gemmPipeline(kernels, variant, 'l2');
        const warm = await run(1);
        if (warm > LOST * best && warm > TARGET_SUBMIT_MS) {
          ms[variant] = warm;
          continue;
        }
        const reps = Math.min(MAX_REPS, Math.max(1, Math.round(TARGET_SUBMIT_MS / warm)));
        const times: number[] = [];
        for (let i = 0; i < TIMED_RUNS; i++) times.push(await run(reps));
        times.sort((a, b) => a - b);
        ms[variant] = times[Math.floor(times.length / 2)];
        best = Math.min(best, ms[variant]);
      } catch (err) {
        recorder.discard();
        ctx.check(); // a lost device is not a variant's failure
        platform.warn(`webgpu-knn: gemm-scores variant ${variant} failed its measurement and is left out: ${(err as Error).message}`);
      }
    }
  } finally {
    pool.destroyAll();
  }
  return ms;
}
