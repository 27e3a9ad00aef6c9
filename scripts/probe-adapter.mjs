// Prints the WebGPU adapter Dawn finds ("backend vendor device ...") and exits 0, or says why not
// and exits 1. Used by setup-webgpu.sh; plain JavaScript so that it runs before any build.
import { create, globals } from 'webgpu';

if (!process.env.XDG_RUNTIME_DIR) process.env.XDG_RUNTIME_DIR = '/tmp';
Object.assign(globalThis, globals);
const gpu = create([]);
try {
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) {
    console.log('requestAdapter() returned null');
    process.exit(1);
  }
  const info = adapter.info ?? {};
  console.log(
    [info.vendor, info.architecture, info.device, info.description].filter(Boolean).join(' ') +
      (adapter.isFallbackAdapter ? ' (fallback adapter)' : ''),
  );
  process.exit(0);
} catch (err) {
  console.log(`requestAdapter() failed: ${err?.message ?? err}`);
  process.exit(1);
}
