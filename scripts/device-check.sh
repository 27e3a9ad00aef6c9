#!/usr/bin/env bash
# The GPU-machine check, in one device call: the adapter, `bench compare` (Flat and an IVF sweep,
# WebGPU) at n = 1e6, d = 128, nq = 1e4 for k = 10 and 100, the torch/cuBLAS baseline at the same
# shapes, optionally the CAGRA graph index at k = 10 (GRAPH_ITOPK), and one summary table with our
# queries/s over torch's. Prepare it here first with
# `bash scripts/device-prepare.sh` (packs Node and the built CLI into .device/); then the device
# call is command `bash scripts/device-check.sh`, carry [".device"], timeout_s 480 (README,
# "Running the device check"). Without .device/ it runs the repo's own build with the system node,
# which is how it is tested on a machine without a GPU, at small sizes:
#   N=20000 NQ=200 bash scripts/device-check.sh
# Every size and limit is an environment variable (see usage below). Results go to $OUT (the device
# tool's folder there; bench-results/device-check here). Exit status: 0 when every step ran, 1 when
# one failed or ran out of time (the summary still lists what was measured), 2 on a usage error.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: [VAR=value ...] bash scripts/device-check.sh
       bash scripts/device-check.sh --source-stamp   (hash of the sources the pack is built from)

sizes and settings (defaults are the H200 run):
  N=1000000  D=128  NQ=10000  KS=10,100  SEED=1    data (bench's generated clustered set) and k's
  NLIST=     (empty: bench's default round(sqrt(8 N)))  NPROBE=1,4,16,64  NITER=10
  BATCH=1024 (queries per search call, as torch_flat.py's GEMM block)  WARMUP=1  REPEATS=3
time limits, seconds (a step gets the smaller of its own and what is left of BUDGET_S):
  BUDGET_S=420  T_INFO=60  T_DATA=120  T_GT=180  T_TORCH=150  T_BENCH=200 (each k)
other:
  OUT=bench-results/device-check  where the log, summary and reports go
  APP=auto   packed (.device/, as on the GPU machine) | repo (dist/ and this machine's node) |
             auto (packed when .device/app.tar.xz exists)
  TORCH_FLAT=.device/torch_flat.py  the torch baseline (pack.sh copies it there)
the CAGRA graph index (off unless GRAPH_ITOPK is set; after the Flat/IVF benches, so give those
less, e.g. KS=10, or the graph the budget: the build at N = 1e6 is not yet timed on a GPU):
  GRAPH_ITOPK=   (empty: no graph step) the walk's itopk sweep at k = 10, e.g. 16,32,64
  GRAPH_DEGREE=32  GRAPH_TEAMS=auto (tuning.graphTeam: one bench each, e.g. auto,1,8,32: each
             builds the graph again)  GRAPH_WIDTH=1 (searchWidth: parents a walk expands an
             iteration, for every itopk)  T_GRAPH=240 (each team)
  GT_BACKEND=auto  ground truth (device-gt.py) by torch on the GPU when it sees one, else numpy;
             torch | numpy forces one
EOF
}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

# The sources the packed CLI is built from; device-prepare.sh stores this hash in .device/ and the
# check compares, so a run on a stale pack says so (no git on the GPU machine, and copies there
# need not keep modification times, so the hash is of contents).
source_stamp() {
  LC_ALL=C find src bench shaders package.json package-lock.json tsconfig.json -type f -print0 |
    LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16
}

case "${1:-}" in
  --source-stamp) source_stamp; exit 0 ;;
  -h | --help) usage; exit 0 ;;
  '') ;;
  *) echo "device-check: unknown argument '$1' (settings are environment variables)" >&2; usage >&2; exit 2 ;;
esac

N=${N:-1000000} D=${D:-128} NQ=${NQ:-10000} KS=${KS:-10,100} SEED=${SEED:-1}
NLIST=${NLIST:-} NPROBE=${NPROBE:-1,4,16,64} NITER=${NITER:-10}
BATCH=${BATCH:-1024} WARMUP=${WARMUP:-1} REPEATS=${REPEATS:-3}
BUDGET_S=${BUDGET_S:-420} T_INFO=${T_INFO:-60} T_DATA=${T_DATA:-120} T_GT=${T_GT:-180}
T_TORCH=${T_TORCH:-150} T_BENCH=${T_BENCH:-200}
GRAPH_ITOPK=${GRAPH_ITOPK:-} GRAPH_DEGREE=${GRAPH_DEGREE:-32} GRAPH_TEAMS=${GRAPH_TEAMS:-auto} GRAPH_WIDTH=${GRAPH_WIDTH:-1} T_GRAPH=${T_GRAPH:-240}
APP=${APP:-auto} TORCH_FLAT=${TORCH_FLAT:-.device/torch_flat.py}
OUT=${OUT:-$root/bench-results/device-check}
# Kept back from the budget for the summary and the copies at the end.
RESERVE_S=15

for v in N D NQ SEED NITER BATCH WARMUP REPEATS BUDGET_S T_INFO T_DATA T_GT T_TORCH T_BENCH GRAPH_DEGREE GRAPH_WIDTH T_GRAPH; do
  [[ ${!v} =~ ^[0-9]+$ ]] || { echo "device-check: $v must be a whole number; got '${!v}'" >&2; exit 2; }
done
[[ $KS =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "device-check: KS must be a comma list of whole numbers; got '$KS'" >&2; exit 2; }
[[ -z $NLIST || $NLIST =~ ^[0-9]+$ ]] || { echo "device-check: NLIST must be empty or a whole number; got '$NLIST'" >&2; exit 2; }
[[ -z $GRAPH_ITOPK || $GRAPH_ITOPK =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "device-check: GRAPH_ITOPK must be empty or a comma list of whole numbers; got '$GRAPH_ITOPK'" >&2; exit 2; }
[[ $GRAPH_TEAMS =~ ^(auto|[0-9]+)(,(auto|[0-9]+))*$ ]] || { echo "device-check: GRAPH_TEAMS must be a comma list of auto and whole numbers; got '$GRAPH_TEAMS'" >&2; exit 2; }
[[ $APP =~ ^(auto|packed|repo)$ ]] || { echo "device-check: APP must be auto, packed or repo; got '$APP'" >&2; exit 2; }
IFS=, read -r -a ks <<<"$KS"
kmax=$(printf '%s\n' "${ks[@]}" | sort -n | tail -1)

start=$SECONDS
mkdir -p "$OUT"
# $OUT comes back from the device machine only as at most 8 files, two folders deep: the work (data,
# full reports) stays in $work and the end copies a chosen few there (finish).
rm -f "$OUT"/device-check.log "$OUT"/summary.md "$OUT"/results.tar.gz "$OUT"/report-k*.md "$OUT"/compare-k*.jsonl "$OUT"/torch.jsonl "$OUT"/report-graph.md "$OUT"/compare-graph.jsonl
work=$(mktemp -d "${TMPDIR:-/tmp}/device-check.XXXXXX")
results=$work/results
mkdir -p "$results"
# Everything printed from here on is also in the log, which is in $OUT from the start: a run the
# device tool kills still brings back what it printed.
exec > >(tee -a "$OUT/device-check.log") 2>&1
tee_pid=$!
export PYTHONUNBUFFERED=1

ok=() failed=() skipped=()

# step NAME LIMIT [--stdout FILE] CMD...: runs CMD under `timeout`, with LIMIT cut to what is left
# of the budget (less the reserve), so one stuck step cannot eat the run; records the outcome.
step() {
  local name=$1 limit=$2 file=
  shift 2
  if [ "${1:-}" = --stdout ]; then file=$2; shift 2; fi
  local left=$((start + BUDGET_S - RESERVE_S - SECONDS))
  if ((left < 5)); then
    echo "== $name: skipped: the time budget (BUDGET_S=$BUDGET_S s) is spent"
    failed+=("$name: not run, the time budget BUDGET_S=$BUDGET_S s was spent")
    return 1
  fi
  ((limit > left)) && limit=$left
  echo "== $name (limit ${limit} s): $*"
  local t0=$SECONDS rc=0
  if [ -n "$file" ]; then
    timeout --kill-after=10 "$limit" "$@" | tee "$file" || rc=${PIPESTATUS[0]}
  else
    timeout --kill-after=10 "$limit" "$@" || rc=$?
  fi
  local took=$((SECONDS - t0))
  case $rc in
    0) echo "== $name: ok in ${took} s"; ok+=("$name ${took} s"); return 0 ;;
    124 | 137) echo "== $name: FAILED: timed out after ${limit} s"; failed+=("$name: timed out after ${limit} s") ;;
    *) echo "== $name: FAILED: exit status $rc after ${took} s"; failed+=("$name: exit status $rc after ${took} s") ;;
  esac
  return 1
}

skip() {
  echo "== $1: skipped: $2"
  skipped+=("$1: $2")
}

# Summary, copies to $OUT and the exit status; runs on every exit, so a failed or interrupted run
# still leaves what it has.
finish() {
  local rc=$?
  trap - EXIT
  set +e
  local title="device check: n=$N d=$D nq=$NQ k=$KS, clustered seed $SEED, nprobe $NPROBE${NLIST:+, nlist $NLIST}${GRAPH_ITOPK:+, CAGRA$GRAPH_DEGREE itopk $GRAPH_ITOPK teams $GRAPH_TEAMS width $GRAPH_WIDTH}, batch $BATCH, $WARMUP warm-up + $REPEATS timed passes, $((SECONDS - start)) s"
  {
    if [ -n "${NODE:-}" ]; then
      "$NODE" "$root/scripts/device-summary.mjs" "$results" "$title"
    else
      echo "## $title"
    fi
    echo
    local s
    for s in "${ok[@]}"; do echo "ok: $s"; done
    for s in "${skipped[@]}"; do echo "skipped: $s"; done
    for s in "${failed[@]}"; do echo "FAILED: $s"; done
  } >"$OUT/summary.md"
  echo
  cat "$OUT/summary.md"
  # At most 8 files come back from the device machine: the log, the summary, all results in one
  # archive, and the readable reports of up to two k's with their records.
  tar -C "$work" -czf "$OUT/results.tar.gz" results
  cp "$results/torch.jsonl" "$OUT/" 2>/dev/null
  local k copied=0
  for k in "${ks[@]}"; do
    ((copied < 2)) || break
    [ -f "$results/compare-k$k/report.md" ] && cp "$results/compare-k$k/report.md" "$OUT/report-k$k.md"
    [ -f "$results/compare-k$k/compare.jsonl" ] && cp "$results/compare-k$k/compare.jsonl" "$OUT/compare-k$k.jsonl"
    copied=$((copied + 1))
  done
  # Room left (one k): the first team's graph report too.
  local g
  g=$(ls -d "$results"/compare-k10-graph-team* 2>/dev/null | head -1)
  if ((copied < 2)) && [ -n "$g" ]; then
    [ -f "$g/report.md" ] && cp "$g/report.md" "$OUT/report-graph.md"
    [ -f "$g/compare.jsonl" ] && cp "$g/compare.jsonl" "$OUT/compare-graph.jsonl"
  fi
  rm -rf "$work"
  if ((${#failed[@]})); then
    echo "device-check: FAILED: ${#failed[@]} step(s) failed (see above); what was measured is in $OUT"
    rc=1
  elif ((rc)); then
    echo "device-check: FAILED: the script itself stopped with status $rc (see the log above)"
  else
    echo "device-check: all steps ran in $((SECONDS - start)) s; results in $OUT"
  fi
  # Let tee write the last lines into the log before the script ends.
  exec >&- 2>&-
  wait "$tee_pid" 2>/dev/null
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "device-check: $(date -u +%FT%TZ) on $(uname -n), $(nproc) cores; settings: N=$N D=$D NQ=$NQ KS=$KS SEED=$SEED NLIST=${NLIST:-default} NPROBE=$NPROBE NITER=$NITER BATCH=$BATCH WARMUP=$WARMUP REPEATS=$REPEATS BUDGET_S=$BUDGET_S GRAPH_ITOPK=${GRAPH_ITOPK:-none} GRAPH_TEAMS=$GRAPH_TEAMS GRAPH_WIDTH=$GRAPH_WIDTH"
on_gpu_machine=0
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem --format=csv && on_gpu_machine=1
fi

# The CLI: the packed copy (what the GPU machine has; no Node there) or this checkout's build.
if [ "$APP" = packed ] || { [ "$APP" = auto ] && [ -f .device/app.tar.xz ]; }; then
  for f in .device/node.xz .device/app.tar.xz; do
    [ -f "$f" ] || { echo "device-check: $f is missing: run 'bash scripts/device-prepare.sh' here and carry .device" >&2; exit 1; }
  done
  want=$(cat .device/source.sha256 2>/dev/null || echo none)
  have=$(source_stamp)
  if [ "$want" != "$have" ]; then
    echo "device-check: WARNING: .device/ was packed from other sources (stamp $want, sources now $have): rerun 'bash scripts/device-prepare.sh'"
  fi
  # As .device/run.sh does: the Vulkan loader where the machine has none (dpkg -x writes into /, so
  # only then), NVIDIA's Vulkan driver, and a runtime folder Dawn wants.
  # (grep without -q: with pipefail, -q's early exit can fail ldconfig with SIGPIPE.)
  if ! ldconfig -p 2>/dev/null | grep 'libvulkan\.so\.1' >/dev/null; then
    for f in .device/debs/*.deb; do [ -e "$f" ] && dpkg -x "$f" /; done
    ldconfig 2>/dev/null || true
  fi
  icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  [ -f "$icd" ] && export VK_DRIVER_FILES=$icd
  export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
  xz -dc .device/node.xz >"$work/node" && chmod +x "$work/node"
  mkdir -p "$work/app" && tar -C "$work/app" -xJf .device/app.tar.xz
  NODE=$work/node APPDIR=$work/app
  echo "device-check: packed CLI (.device/, sources $have), node $("$NODE" --version)"
else
  NODE=$(command -v node) || { echo "device-check: no node on PATH and no .device/ pack: run 'bash scripts/device-prepare.sh' first" >&2; exit 1; }
  [ -f dist/cli/main.js ] && [ -f dist/bench/data.js ] || { echo "device-check: dist/ is not built: run 'npm run build' first" >&2; exit 1; }
  APPDIR=$root
  echo "device-check: this checkout's build (dist/), node $("$NODE" --version)"
fi
CLI=$APPDIR/dist/cli/main.js

# 1. The adapter, and which gemm-scores kernel variant was chosen for it where info reports one.
adapter_ok=0
if step info "$T_INFO" --stdout "$results/info.txt" "$NODE" "$CLI" info; then
  grep -qi gemm "$results/info.txt" || echo "(gemm-scores variant: not reported by this build's info)"
  if grep -q '^backend: webgpu' "$results/info.txt"; then
    adapter_ok=1
    # A software adapter on the GPU machine means Dawn did not find the H200: n = 1e6 on it would
    # only burn the budget, and its numbers would mean nothing.
    if ((on_gpu_machine)) && grep -qi 'software (CPU-emulated) adapter: true' "$results/info.txt"; then
      adapter_ok=0
      failed+=("info: the WebGPU adapter is a software one although nvidia-smi sees a GPU (VK_DRIVER_FILES=${VK_DRIVER_FILES:-unset}): the benchmark was not run")
    fi
  else
    failed+=("info: no WebGPU adapter (backend is not webgpu): the benchmark was not run")
  fi
fi

# 2. The data as files and its exact ground truth: bench compare's own float64 reference is one JS
# thread, hours at this size; device-gt.py does it on the GPU and bench scores against it (--gt).
# The CPU backend is left out (BACKEND webgpu): one JS thread there too, over an hour per Flat pass.
data_ok=0
if ((adapter_ok)); then
  if step data "$T_DATA" "$NODE" scripts/device-data.mjs "$APPDIR" "$N" "$D" "$NQ" "$SEED" "$work/base.npy" "$work/query.npy" &&
    step ground-truth "$T_GT" python3 scripts/device-gt.py "$work/base.npy" "$work/query.npy" "$kmax" "$work/gt.ivecs"; then
    data_ok=1
  fi
else
  skip data "no usable WebGPU adapter"
fi

# 3. The torch baseline on the same shapes: before our benchmark, so the ratio has its anchor even
# when the benchmark runs out of time.
if ! python3 -c 'import torch' 2>/dev/null; then
  echo "== torch: torch not available, skipped"
  skipped+=("torch baseline: torch not available")
elif ! python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "== torch: torch sees no CUDA GPU, skipped"
  skipped+=("torch baseline: torch sees no CUDA GPU")
elif [ ! -f "$TORCH_FLAT" ]; then
  echo "== torch: $TORCH_FLAT not found: run 'bash scripts/device-prepare.sh' (pack.sh copies it into .device/)"
  failed+=("torch baseline: $TORCH_FLAT not found")
else
  step torch "$T_TORCH" --stdout "$results/torch.jsonl" python3 "$TORCH_FLAT" --n "$N" --d "$D" --nq "$NQ" --k "$KS" || true
fi

# 4. bench compare for each k, WebGPU only, no peers, scored against the ground truth above.
for k in "${ks[@]}"; do
  if ((!data_ok)); then
    skip "bench k=$k" "no data or ground truth (see above)"
    continue
  fi
  dir=$results/compare-k$k
  mkdir -p "$dir"
  # --stdout keeps the records as they are measured: a bench cut short by its limit writes no
  # compare.jsonl, and the summary then reads these.
  step "bench k=$k" "$T_BENCH" --stdout "$dir/stdout.jsonl" "$NODE" "$CLI" bench compare --peers none --backend webgpu \
    --base "$work/base.npy" --query "$work/query.npy" --gt "$work/gt.ivecs" --nq "$NQ" --k "$k" \
    ${NLIST:+--nlist "$NLIST"} --nprobe "$NPROBE" --niter "$NITER" --seed "$SEED" \
    --batch "$BATCH" --warmup "$WARMUP" --repeats "$REPEATS" --out "$dir" || true
done

# 5. The CAGRA graph index at k = 10, one bench per walk team (tuning.graphTeam), where asked for.
if [ -n "$GRAPH_ITOPK" ]; then
  IFS=, read -r -a teams <<<"$GRAPH_TEAMS"
  for team in "${teams[@]}"; do
    name="graph CAGRA$GRAPH_DEGREE team $team"
    if ((!data_ok)); then
      skip "$name" "no data or ground truth (see above)"
      continue
    fi
    if ((kmax < 10)); then
      skip "$name" "the ground truth has $kmax neighbours a query (KS=$KS); the graph is scored at k = 10"
      continue
    fi
    dir=$results/compare-k10-graph-team$team
    mkdir -p "$dir"
    step "$name" "$T_GRAPH" --stdout "$dir/stdout.jsonl" "$NODE" "$CLI" bench compare --peers none --backend webgpu \
      --base "$work/base.npy" --query "$work/query.npy" --gt "$work/gt.ivecs" --nq "$NQ" --k 10 \
      --index "CAGRA$GRAPH_DEGREE" --itopk "$GRAPH_ITOPK" --search-width "$GRAPH_WIDTH" --tuning "graphTeam=$team" --seed "$SEED" \
      --batch "$BATCH" --warmup "$WARMUP" --repeats "$REPEATS" --out "$dir" || true
  done
fi
