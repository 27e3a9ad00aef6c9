#!/usr/bin/env bash
# Orchestration overhead of distributed dedup (README, "Distributed dedup, measured"): the same
# dedup single-process, then with --distributed on a loopback Redis with 1, 2, 3 ... workers on
# this machine; prints the seconds of each, the overhead against single-process, and checks that
# every output is byte for byte the single-process one.
#
#   scripts/dedup-scaling.sh FILE METRIC THRESHOLD TILE_ROWS BACKEND [WORKER COUNTS (default 1 2 3)]
#   e.g. node scripts/make-planted.mjs 100000 384 /tmp/p100k.fvecs
#        scripts/dedup-scaling.sh /tmp/p100k.fvecs cosine 0.97 25000 webgpu 1 2 3
#
# Workers are started (and their backends created) before each timed run, as long-running workers
# are; the single-process time includes creating its backend. Needs a build (npm run build).
set -euo pipefail
[ $# -ge 5 ] || { sed -n 2,12p "$0" >&2; exit 2; }
file=$1 metric=$2 threshold=$3 tile=$4 backend=$5
shift 5
counts=("$@")
[ $# -ge 1 ] || counts=(1 2 3)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cli=("node" "$root/dist/cli/main.js")
out=$(mktemp -d)
read -r url redis_pid < <(bash "$root/scripts/redis.sh" start)
workers=()
cleanup() {
  for w in "${workers[@]}"; do kill "$w" 2>/dev/null || true; done
  kill "$redis_pid" 2>/dev/null || true
  rm -rf "$out"
}
trap cleanup EXIT
secs() { date +%s.%N; }

t0=$(secs)
"${cli[@]}" dedup --input "$file" --metric "$metric" --threshold "$threshold" --out "$out/one.csv" --backend "$backend" 2> "$out/one.log"
t1=$(secs)
single=$(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }")
echo "single-process ($backend): $single s; $(grep -o '^[0-9]* pairs ([0-9]* candidates checked)' "$out/one.log")"

for count in "${counts[@]}"; do
  for _ in $(seq "$count"); do
    "${cli[@]}" worker --redis "$url" --backend "$backend" 2>> "$out/workers.log" &
    workers+=($!)
  done
  # Ready when each has said which backend it runs.
  for _ in $(seq 600); do [ "$(grep -c '^worker: backend' "$out/workers.log" || true)" -ge "$count" ] && break; sleep 0.1; done
  t0=$(secs)
  "${cli[@]}" dedup --input "$file" --metric "$metric" --threshold "$threshold" --out "$out/dist-$count.csv" \
    --distributed "$url" --tile-rows "$tile" 2> "$out/dist-$count.log"
  t1=$(secs)
  took=$(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }")
  same=$(cmp -s "$out/one.csv" "$out/dist-$count.csv" && echo "identical output" || echo "OUTPUT DIFFERS")
  echo "distributed, $count worker(s), --tile-rows $tile: $took s; $(awk "BEGIN { printf \"%+.1f\", 100 * ($took - $single) / $single }")% over single-process; $same; $(grep -o '[0-9]* tiles' "$out/dist-$count.log" | tail -1)"
  for w in "${workers[@]}"; do kill "$w" 2>/dev/null || true; done
  wait "${workers[@]}" 2>/dev/null || true
  workers=()
  : > "$out/workers.log"
done
