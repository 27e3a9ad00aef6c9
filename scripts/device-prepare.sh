#!/usr/bin/env bash
# Run HERE, before the device call of scripts/device-check.sh: the GPU machine has no Node.js and
# reaches no registry, so the shared pack.sh (../shared/device, beside the checkout, which does not
# travel) packs Node, the built CLI with its production dependencies, the Vulkan loader and the
# torch baseline torch_flat.py into .device/ (git-ignored; it travels as carry [".device"]). Then
# this records which sources the pack was built from (device-check.sh warns on a stale pack) and
# checks that what travels fits the device tool's 64 MiB.
# usage: bash scripts/device-prepare.sh   (SHARED_DEVICE=DIR where pack.sh is elsewhere)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
shared=${SHARED_DEVICE:-$root/../shared/device}
for f in pack.sh run.sh torch_flat.py; do
  [ -f "$shared/$f" ] || { echo "device-prepare: $shared/$f not found: set SHARED_DEVICE to the folder that holds pack.sh" >&2; exit 1; }
done
[ -d node_modules ] || { echo "device-prepare: node_modules is missing: run 'npm ci' first" >&2; exit 1; }

# pack.sh builds (npm run build) before it packs, so the stamp below is of what was built.
bash "$shared/pack.sh"
bash scripts/device-check.sh --source-stamp >.device/source.sha256

# What the device tool sends: tracked and untracked-not-ignored files, plus the carried .device/.
tree=$(git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
pack=$(du -sb .device | cut -f1)
total=$((tree + pack))
limit=$((64 << 20))
awk -v t="$tree" -v p="$pack" -v s="$(cat .device/source.sha256)" 'BEGIN {
  printf "device-prepare: working tree %.1f MiB + .device %.1f MiB = %.1f MiB of the 64 MiB a call may send; sources %s\n", t / 2^20, p / 2^20, (t + p) / 2^20, s }'
((total < limit)) || { echo "device-prepare: that is over the device tool's 64 MiB: ignore or remove untracked files" >&2; exit 1; }
echo 'device-prepare: ready. Device call: command "bash scripts/device-check.sh", carry [".device"], timeout_s 480'
