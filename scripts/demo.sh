#!/usr/bin/env bash
# The README's first command: set everything up, then run the main job (webgpu-knn demo): a flat
# index on generated data, searched on the WebGPU and the CPU backend, recall and speed side by side.
# Extra arguments go to the demo (see: node dist/cli/main.js demo --help).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/prepare.sh
node dist/cli/main.js demo "$@"
