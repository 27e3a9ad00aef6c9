/**
 * GPU buffers reused by usage and size bucket (tfjs-backend-webgpu's BufferManager, onnxruntime-web's
 * bucket cache). Creating and garbage-collecting Dawn buffers is what made small searches slow and
 * their latency spiky (V8 collects the wrappers at random moments); a warm pool creates none.
 *
 * Sizes are rounded up to a bucket: the next power of two up to 1 MiB, then the next eighth of a
 * power of two (at most 12.5% spare), never past the device's largest buffer. Released buffers wait
 * in their bucket; past `maxIdleBytes` of idle buffers, a released one is destroyed instead.
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
    private readonly maxIdleBytes = 256 * MIB,
  ) {}

  /** An idle buffer of the bucket for `bytes`, else a new one. */
  acquire(label: string, bytes: number, usage: number): GPUBuffer {
    return this.reuse(bytes, usage) ?? this.create(label, bytes, usage);
  }

  /** An idle buffer of the bucket for `bytes` and `usage`, or null. */
  reuse(bytes: number, usage: number): GPUBuffer | null {
    const size = bucketSize(bytes, this.maxBufferBytes);
    const hit = this.idle.get(`${usage}:${size}`)?.pop();
    if (!hit) return null;
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

  release(buffer: GPUBuffer): void {
    if (!this.live.has(buffer)) return; // destroyed already (the pool was cleared)
    if (this.stats.idleBytes + buffer.size > this.maxIdleBytes) {
      this.destroy(buffer);
      return;
    }
    const key = `${buffer.usage}:${buffer.size}`;
    let free = this.idle.get(key);
    if (!free) this.idle.set(key, (free = []));
    free.push(buffer);
    this.stats.idleBytes += buffer.size;
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

  private destroy(buffer: GPUBuffer): void {
    this.live.delete(buffer);
    this.stats.liveBytes -= buffer.size;
    buffer.destroy();
  }
}
