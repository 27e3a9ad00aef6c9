import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A temporary WEBGPU_KNN_CACHE_DIR: tests never write to the user's home.
    globalSetup: ['test/global-setup.ts'],
    // GPU suites share one software adapter; running files one at a time keeps lavapipe's two
    // cores from being oversubscribed and keeps the adapter banner readable.
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
});
