#!/usr/bin/env bash
# Make sure Debian's chromium is installed for the browser suite (test/browser/page.test.ts), which
# drives it through playwright-core (that downloads no browser of its own).
#
# Idempotent: when /usr/lib/chromium/chromium (or $WEBGPU_KNN_CHROMIUM) exists it changes nothing.
# On a Debian/Ubuntu machine, as root, it runs apt-get install chromium; elsewhere it prints what to
# install and exits non-zero. Chromium's WebGPU in headless mode is its own SwiftShader adapter, so
# no GPU and no Vulkan driver is needed for it.
#
# Usage: scripts/setup-chromium.sh [--check]   (--check: report only, never install)
set -euo pipefail
chromium=${WEBGPU_KNN_CHROMIUM:-/usr/lib/chromium/chromium}
if [ -x "$chromium" ]; then
  echo "setup-chromium: found $chromium ($("$chromium" --version 2>/dev/null || echo 'version unknown'))"
  exit 0
fi
advise() {
  echo "setup-chromium: install Debian's chromium (apt-get install chromium, as root), or set WEBGPU_KNN_CHROMIUM to a chromium binary" >&2
}
if [ "${1:-}" = "--check" ] || [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "setup-chromium: no chromium at $chromium" >&2
  advise; exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium >/dev/null
if [ -x "$chromium" ]; then
  echo "setup-chromium: installed $("$chromium" --version 2>/dev/null)"
else
  echo "setup-chromium: apt-get install chromium left no $chromium" >&2
  advise; exit 1
fi
