#!/usr/bin/env bash
# Shared set-up of the README's two commands: npm packages (npm ci when node_modules is missing or
# older than package-lock.json), a WebGPU adapter (scripts/setup-webgpu.sh), chromium when the
# browser suite will run (WEBGPU_KNN_BROWSER=1, which scripts/test.sh sets: scripts/setup-chromium.sh),
# redis-server when the distributed suite will run (WEBGPU_KNN_REDIS=1, also set by scripts/test.sh:
# scripts/redis.sh setup), and the build.
# With WEBGPU_REQUIRED=1 a machine that cannot get an adapter is an error; otherwise a warning
# (the tool then runs on its CPU backend).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "prepare: installing npm packages (npm ci)"
  npm ci --no-audit --no-fund
fi
if ! bash scripts/setup-webgpu.sh; then
  if [ "${WEBGPU_REQUIRED:-0}" = 1 ]; then
    echo "prepare: WEBGPU_REQUIRED=1 and no WebGPU adapter could be set up" >&2
    exit 1
  fi
  echo "prepare: continuing without a WebGPU adapter (CPU backend only; GPU tests will skip)" >&2
fi
if [ "${WEBGPU_KNN_BROWSER:-0}" = 1 ] && ! bash scripts/setup-chromium.sh; then
  if [ "${WEBGPU_REQUIRED:-0}" = 1 ]; then
    echo "prepare: WEBGPU_REQUIRED=1 and chromium could not be set up for the browser suite" >&2
    exit 1
  fi
  echo "prepare: continuing without chromium (the browser suite will skip)" >&2
fi
if [ "${WEBGPU_KNN_REDIS:-0}" = 1 ] && ! bash scripts/redis.sh setup; then
  if [ "${WEBGPU_REQUIRED:-0}" = 1 ]; then
    echo "prepare: WEBGPU_REQUIRED=1 and redis-server could not be set up for the distributed suite" >&2
    exit 1
  fi
  echo "prepare: continuing without redis-server (the distributed suite will skip)" >&2
fi
npm run -s build
