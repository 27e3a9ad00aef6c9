#!/usr/bin/env bash
# The README's first command: set everything up, then run the main job (webgpu-knn demo): the
# near-duplicates and nearest neighbours among 778 real text embeddings, WebGPU and CPU timings
# side by side. Extra arguments go to the demo (see: node dist/cli/main.js demo --help).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/prepare.sh
node dist/cli/main.js demo "$@"
