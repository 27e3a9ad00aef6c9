#!/usr/bin/env bash
# Make sure this machine has a WebGPU adapter for Dawn's node bindings (npm `webgpu`).
#
# Idempotent: when an adapter is already found it changes nothing. On a Debian/Ubuntu machine without
# one, run as root, it installs the Vulkan loader and Mesa's Vulkan drivers (lavapipe: a CPU Vulkan
# driver, so WebGPU runs even without a GPU). Debian 12's own Mesa is too old for Dawn, so on Debian
# the packages come from the <codename>-backports suite, whose apt line is derived from the machine's
# own apt sources (the same mirror and keyring); no host name is written here.
# Elsewhere it prints what to install and exits non-zero.
#
# Usage: scripts/setup-webgpu.sh [--check]   (--check: report only, never install)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
check_only=0
[ "${1:-}" = "--check" ] && check_only=1

probe() {
  # Prints "backend vendor device" of the adapter, exits 0 if one is found.
  (cd "$here" && node scripts/probe-adapter.mjs)
}

if out=$(probe 2>/dev/null); then
  echo "setup-webgpu: adapter found: $out"
  exit 0
fi
echo "setup-webgpu: no WebGPU adapter yet ($out)"

advise() {
  cat >&2 <<'MSG'
setup-webgpu: to get a WebGPU adapter without a GPU, install a Vulkan loader and Mesa >= 24's
Vulkan drivers (lavapipe), then run this script again:
  Debian 12:      apt-get install -t bookworm-backports libvulkan1 mesa-vulkan-drivers (as root)
  Ubuntu >= 24.04: apt-get install libvulkan1 mesa-vulkan-drivers
  Fedora:         dnf install vulkan-loader mesa-vulkan-drivers
  macOS/Windows:  Dawn uses Metal / D3D12; no extra install is needed.
MSG
}

if [ "$check_only" = 1 ]; then advise; exit 1; fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1 || [ ! -r /etc/os-release ]; then
  advise; exit 1
fi

. /etc/os-release
codename=${VERSION_CODENAME:-}
export DEBIAN_FRONTEND=noninteractive
target=()
if [ "${ID:-}" = debian ] && [ -n "$codename" ]; then
  list=/etc/apt/sources.list.d/webgpu-knn-backports.sources
  if [ ! -f "$list" ]; then
    # Find the URI and keyring of the entry that serves "$codename" main, in deb822 or one-line form.
    uri="" key=""
    for f in /etc/apt/sources.list.d/*.sources; do
      [ -r "$f" ] || continue
      # deb822: blank-line separated stanzas; take the first whose Suites has the codename itself.
      read -r uri key < <(awk -v s="$codename" '
        BEGIN { RS=""; FS="\n" }
        {
          u=""; k=""; ok=0; deb=0
          for (i = 1; i <= NF; i++) {
            if ($i ~ /^Types:/ && $i ~ /[ \t]deb([ \t]|$)/) deb=1
            if ($i ~ /^URIs:/) { split($i, a, /[ \t]+/); u=a[2] }
            if ($i ~ /^Suites:/) { n=split($i, a, /[ \t]+/); for (j = 2; j <= n; j++) if (a[j] == s) ok=1 }
            if ($i ~ /^Signed-By:/) { split($i, a, /[ \t]+/); k=a[2] }
          }
          if (deb && ok && u != "") { print u, (k == "" ? "-" : k); exit }
        }' "$f") || true
      [ -n "$uri" ] && break
    done
    if [ -z "$uri" ] && [ -r /etc/apt/sources.list ]; then
      uri=$(awk -v s="$codename" '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ } if ($(i+1) == s) { print $i; exit } }' /etc/apt/sources.list)
      key="-"
    fi
    if [ -z "$uri" ]; then
      echo "setup-webgpu: found no apt source for '$codename' to derive $codename-backports from" >&2
      advise; exit 1
    fi
    {
      echo "Types: deb"
      echo "URIs: $uri"
      echo "Suites: $codename-backports"
      echo "Components: main"
      [ "$key" != "-" ] && echo "Signed-By: $key"
    } > "$list"
    echo "setup-webgpu: added $list ($uri $codename-backports)"
  fi
  target=(-t "$codename-backports")
fi

apt-get update -qq
apt-get install -y -qq --no-install-recommends "${target[@]}" libvulkan1 mesa-vulkan-drivers >/dev/null
echo "setup-webgpu: installed libvulkan1 and mesa-vulkan-drivers ${target[*]}"

if out=$(probe 2>/dev/null); then
  echo "setup-webgpu: adapter found: $out"
else
  echo "setup-webgpu: still no adapter after install: $out" >&2
  advise; exit 1
fi
