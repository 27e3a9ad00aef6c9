/**
 * GPU buffers reused by usage and size bucket (tfjs-backend-webgpu's BufferManager, onnxruntime-web's
 * bucket cache). Creating and garbage-collecting Dawn buffers is what made small searches slow and
 * their latency spiky (V8 collects the wrappers at random moments); a warm pool creates none.
 *
 * Sizes are rounded up to a bucket: the next power of two up to 1 MiB, then the next eighth of a
 * power of two (at most 12.5% spare), never past the device's largest buffer. Released buffers wait
 * in their bucket; past `maxIdleBytes` of idle buffers, a released one is destroyed instead (by the
 * device, once no recorded work uses it).
 */

export interface PoolStats {
  /** GPU buffers created since the pool was made. */
  created: number;
  /** Requests served from idle buffers. */
  reused: number;
  /** Bytes of all live buffers (in use or idle). */
  liveBytes: number;
  idleBytes: number;
}

const MIB = 1 << 20;

/** The bucket size for a request of `bytes` (see the file comment). */
export function bucketSize(bytes: number, maxBytes: number): number {
  const b = Math.max(16, Math.ceil(bytes / 4) * 4);
  let size: number;
  if (b <= MIB) {
    size = 16;
    while (size < b) size *= 2;
  } else {
    const pow = 2 ** Math.floor(Math.log2(b));
    const step = pow / 8;
    size = Math.ceil(b / step) * step;
  }
  return Math.min(size, Math.max(b, Math.floor(maxBytes / 4) * 4));
}

export class BufferPool {
  private readonly idle = new Map<string, GPUBuffer[]>();
  private readonly stats: PoolStats = { created: 0, reused: 0, liveBytes: 0, idleBytes: 0 };
  /** Every buffer made and not destroyed, so that `destroyAll` frees what callers still hold. */
  private readonly live = new Set<GPUBuffer>();

  constructor(
    private readonly device: GPUDevice,
    private readonly maxBufferBytes: number,
    readonly maxIdleBytes = 256 * MIB,
  ) {}

  /** An idle buffer of the bucket for `bytes`, else a new one. */
  acquire(label: string, bytes: number, usage: number): GPUBuffer {
    return this.reuse(label, bytes, usage) ?? this.create(label, bytes, usage);
  }

  /** An idle buffer of the bucket for `bytes` and `usage`, or null. */
  reuse(label: string, bytes: number, usage: number): GPUBuffer | null {
    const size = bucketSize(bytes, this.maxBufferBytes);
    const hit = this.idle.get(`${usage}:${size}`)?.pop();
    if (!hit) return null;
    hit.label = label;
    this.stats.reused++;
    this.stats.idleBytes -= hit.size;
    return hit;
  }

  /** A new buffer of the bucket size for `bytes`. */
  create(label: string, bytes: number, usage: number): GPUBuffer {
    const size = bucketSize(bytes, this.maxBufferBytes);
    const buffer = this.device.createBuffer({ label, size, usage });
    this.stats.created++;
    this.stats.liveBytes += size;
    this.live.add(buffer);
    return buffer;
  }

  /**
   * Keeps `buffer` for reuse and returns true, or, past `maxIdleBytes` of idle buffers, returns
   * false: the caller then destroys it with `discard`, once no recorded work still uses it.
   */
  release(buffer: GPUBuffer): boolean {
    if (!this.live.has(buffer)) return true; // discarded already (out of memory, or the pool was cleared)
    if (this.stats.idleBytes + buffer.size > this.maxIdleBytes) return false;
    const key = `${buffer.usage}:${buffer.size}`;
    let free = this.idle.get(key);
    if (!free) this.idle.set(key, (free = []));
    free.push(buffer);
    this.stats.idleBytes += buffer.size;
    return true;
  }

  /** Destroys a buffer (released and not kept, or never valid) and forgets it. */
  discard(buffer: GPUBuffer): void {
    if (!this.live.delete(buffer)) return;
    this.stats.liveBytes -= buffer.size;
    // Out of memory is reported late: the buffer may already wait in its bucket.
    const free = this.idle.get(`${buffer.usage}:${buffer.size}`);
    const at = free ? free.indexOf(buffer) : -1;
    if (at >= 0) {
      free!.splice(at, 1);
      this.stats.idleBytes -= buffer.size;
    }
    buffer.destroy();
  }

  /** Hands a buffer back that no recorded work uses any more: kept, or destroyed now. */
  releaseNow(buffer: GPUBuffer): void {
    if (!this.release(buffer)) this.discard(buffer);
  }

  /** Destroys every buffer, in use or idle. */
  destroyAll(): void {
    for (const b of this.live) b.destroy();
    this.live.clear();
    this.idle.clear();
    this.stats.liveBytes = 0;
    this.stats.idleBytes = 0;
  }

  snapshot(): PoolStats {
    return { ...this.stats };
  }
}
